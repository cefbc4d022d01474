"""The nightly gate's rules: what ``run --channel nightly`` dispatches, what the GPU gate
accepts from a dispatch, and the dashboard's nightly section. Pure.

A nightly dispatch carries its versions as one workflow input, ``versions``:
``flashinfer-python==0.6.16.dev20261128 flashinfer-cubin==0.6.16.dev20261128 ...``. Inputs
are untrusted text (anyone who may dispatch can write them): ``parse_versions`` accepts only
canonical package names of the group and normalized PEP 440 versions without a local label,
so no input ever becomes a path, an option or a command, and the runner re-plans to check
them."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from bot.core.models import Check, CheckState, Plan
from bot.errors import RefusedTarget
from bot.render.markdown import code_span, link

NIGHTLY_PREFIX = "pinbump/nightly-gate"  # one commit status per GPU job on the base SHA
MAX_VERSIONS_TEXT = 400
_TOKEN = re.compile(r"(?P<name>[a-z0-9](?:[a-z0-9-]{0,98}[a-z0-9])?)==(?P<version>[0-9][0-9a-z.]"
                    r"{0,62})")
_SHA = re.compile(r"[0-9a-f]{40}")
START = "<!-- pinbump:nightly"
END = "<!-- pinbump:nightly:end -->"
_MARK = re.compile(r"<!-- pinbump:nightly sha=(?P<sha>[0-9a-f]{40}) versions=(?P<versions>"
                   r"[a-z0-9=. -]{1,400}?) -->")


def parse_versions(text: str, allowed: Collection[str] | None = None) -> dict[str, str]:
    """``name==version`` pairs separated by spaces: canonical names (of ``allowed`` when
    given), each once, with normalized public PEP 440 versions. Anything else is refused with
    one line naming the first bad token (shown with ``repr``, cut short)."""
    if not text.strip():
        raise RefusedTarget("nightly versions: empty (expected NAME==VERSION pairs)")
    if len(text) > MAX_VERSIONS_TEXT:
        raise RefusedTarget(f"nightly versions: {len(text)} characters, more than "
                            f"{MAX_VERSIONS_TEXT}")
    out: dict[str, str] = {}
    for token in text.split(" "):
        m = _TOKEN.fullmatch(token)
        if m is None:
            raise RefusedTarget(f"nightly versions: {token[:60]!r} is not NAME==VERSION (a "
                                "canonical package name, a normalized version)")
        name, version = m.group("name"), m.group("version")
        try:
            parsed = Version(version)
        except InvalidVersion:
            raise RefusedTarget(f"nightly versions: {version!r} of {name} is not a PEP 440 "
                                "version") from None
        if str(parsed) != version or parsed.local is not None:
            raise RefusedTarget(f"nightly versions: {version!r} of {name} is not a normalized "
                                f"public version (expected {parsed.public!r})")
        if str(canonicalize_name(name)) != name:
            raise RefusedTarget(f"nightly versions: {name!r} is not a canonical package name")
        if allowed is not None and name not in allowed:
            raise RefusedTarget(f"nightly versions: {name} is not a lead or lockstep package "
                                f"of the group ({', '.join(allowed)})")
        if name in out:
            raise RefusedTarget(f"nightly versions: {name} is named twice")
        out[name] = version
    return out


def format_versions(versions: Mapping[str, str]) -> str:
    return " ".join(f"{name}=={version}" for name, version in versions.items())


def planned_versions(plan: Plan, packages: Sequence[str]) -> dict[str, str]:
    """The nightly targets of ``packages`` (the lead and its lockstep), in that order."""
    targets = {c.package: str(Version(c.target).public) for c in plan.changes}
    return {p: targets[p] for p in packages if p in targets}


@dataclass(frozen=True)
class NightlyRecord:
    """What the dashboard remembers of the last nightly dispatch."""

    sha: str
    versions: str  # format_versions(...)


def read_record(body: str) -> NightlyRecord | None:
    """The last nightly dispatch the dashboard records, if its marker is well formed."""
    m = _MARK.search(body or "")
    if m is None:
        return None
    try:
        parse_versions(m.group("versions"))
    except RefusedTarget:
        return None
    return NightlyRecord(m.group("sha"), m.group("versions"))


def nightly_section(record: NightlyRecord, checks: Iterable[Check], lead: str = "") -> str:
    """The dashboard's nightly section: the versions dispatched, the base commit, and each GPU
    job's ``pinbump/nightly-gate/<job>`` status on it (never a merge: an early warning)."""
    if not _SHA.fullmatch(record.sha):
        raise ValueError("not a commit SHA")
    versions = parse_versions(record.versions)
    jobs = sorted((c for c in checks if c.name.startswith(NIGHTLY_PREFIX + "/")),
                  key=lambda c: c.name)
    lines = [f"{START} sha={record.sha} versions={record.versions} -->",
             "## Nightly early warning", "",
             "The GPU gate on FlashInfer's nightly builds, run on the default branch's head "
             f"{code_span(record.sha[:12])}; never merged, never a PR.", "",
             "| Package | Nightly |", "| --- | --- |"]
    lines += [f"| {code_span(name, in_table=True)} | {code_span(version, in_table=True)} |"
              for name, version in versions.items()]
    lines += ["", "| GPU job | Result |", "| --- | --- |"]
    if not jobs:
        lines.append("| (none yet) | dispatched, not reported |")
    for c in jobs:
        word = {str(CheckState.SUCCESS): "passed", str(CheckState.FAILURE): "failed"}.get(
            str(c.state), "pending")
        lines.append(f"| {code_span(c.name, in_table=True)} | {link(word, c.url)} |")
    if any(c.state == CheckState.FAILURE for c in jobs):
        lines += ["", f"> **The nightly {lead or 'build'} fails the GPU gate**: the next "
                      "release may carry the regression; `pinbump bisect --nightlies` finds "
                      "the first bad build."]
    lines.append(END)
    return "\n".join(lines)


def with_section(body: str, section: str) -> str:
    """``body`` with its nightly section replaced by ``section`` (or appended)."""
    return f"{without_section(body).rstrip()}\n\n{section}\n" if section else body


def without_section(body: str) -> str:
    start = body.find(START)
    if start < 0:
        return body
    end = body.find(END, start)
    tail = body[end + len(END):] if end >= 0 else ""
    return (body[:start].rstrip() + "\n" + tail.lstrip("\n")).rstrip() + "\n"


def carried_section(old_body: str) -> str:
    """The nightly section of the dashboard as it stands, for a stable run to keep."""
    start = old_body.find(START)
    end = old_body.find(END, start) if start >= 0 else -1
    if start < 0 or end < 0 or read_record(old_body[start:end + len(END)]) is None:
        return ""
    return old_body[start:end + len(END)]
