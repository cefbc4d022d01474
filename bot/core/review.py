"""Review findings: calls that bind fine but may now compute something else.

Two sources beside the signatures: advisories (a shipped file for the built-in group, for
behaviour no signature shows) and the GPU gate's observation diff (``gate.json`` as
``pinbump gpu-gate`` writes it). Pure: texts and data in, findings out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import tomlkit
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from bot.core.api import ApiIndex
from bot.core.drift import CallSite, Finding
from bot.core.models import Severity, SiteKind
from bot.errors import InputError

ONE_LINE = 240  # a review finding's "what to check" stays one readable line


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= ONE_LINE else text[:ONE_LINE - 1] + "…"


def _value(value: Any, limit: int = 90) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _short(path: str) -> str:
    return path.rpartition(".")[2]


def calls_of(function: str, sites: Sequence[CallSite], old: ApiIndex, new: ApiIndex
             ) -> list[CallSite]:
    """Calls of ``function`` (a public path, or a bare name) in either version."""
    wanted = {api.canonical(function) for api in (old, new)} - {None}
    out = []
    for site in sites:
        if site.kind != SiteKind.CALL or _short(site.path) != _short(function):
            continue
        found = {api.canonical(site.path) for api in (old, new)} - {None}
        if not wanted or not found or wanted & found:
            out.append(site)
    return out


def _passes(site: CallSite, name: str, new: ApiIndex) -> bool:
    """Whether the call visibly passes ``name`` (through **kwargs it cannot be told: no)."""
    if name in site.keywords:
        return True
    sig = new.lookup(site.path)
    positional = [p.name for p in sig.positionals] if sig is not None else []
    return name in positional[:site.positional]


@dataclass(frozen=True)
class Advisory:
    package: str  # PEP 503-normalized distribution name
    function: str
    since: Version
    check: str
    unless_passed: str | None = None

    def applies(self, package: str, old: str, new: str) -> bool:
        try:
            return canonicalize_name(package) == self.package and \
                Version(old) < self.since <= Version(new)
        except InvalidVersion:
            return False


def parse_advisories(text: str, source: str) -> list[Advisory]:
    """``[[advisory]]`` tables: package, function, since, check, optional unless-passed."""
    try:
        doc = tomlkit.parse(text).unwrap()
    except Exception as exc:  # tomlkit raises several types for bad TOML
        raise InputError(f"{source}: invalid TOML: {exc}") from None
    out = []
    keys = {"package", "function", "since", "check", "unless-passed"}
    for i, item in enumerate(doc.get("advisory", []), start=1):
        where = f"{source}: advisory {i}"
        if not isinstance(item, dict) or set(item) - keys or \
                not {"package", "function", "since", "check"} <= set(item):
            raise InputError(f"{where}: needs package, function, since and check "
                             f"(optional unless-passed), got {sorted(item)}")
        try:
            since = Version(str(item["since"]))
        except InvalidVersion:
            raise InputError(f"{where}: since = {item['since']!r} is not a version") from None
        out.append(Advisory(canonicalize_name(str(item["package"])), str(item["function"]),
                            since, _one_line(item["check"]), item.get("unless-passed")))
    return out


@dataclass
class Advisories:
    """A ReviewSource: every call of an advised function, when the bump crosses ``since``."""

    items: Sequence[Advisory]

    def findings(self, sites: Sequence[CallSite], old: ApiIndex, new: ApiIndex,
                 package: str) -> list[Finding]:
        out = []
        for adv in self.items:
            if not adv.applies(package, old.version, new.version):
                continue
            for site in calls_of(adv.function, sites, old, new):
                if adv.unless_passed and _passes(site, adv.unless_passed, new):
                    continue
                sig_old, sig_new = old.lookup(site.path), new.lookup(site.path)
                out.append(Finding(
                    file=site.file, line=site.line, column=site.column, function=site.path,
                    severity=Severity.REVIEW, change=f"advisory for {adv.since}: behaviour changed",
                    old_signature=sig_old.render() if sig_old else "",
                    new_signature=sig_new.render() if sig_new else "",
                    detail=f"check: {adv.check}"))
        return out


@dataclass
class Observations:
    """A ReviewSource: behaviour the GPU gate recorded differently for the two versions
    (``observation_diff`` of gate.json), mapped onto the calls of the observed function."""

    baseline: str
    candidate: str
    diff: Sequence[tuple[str, Any, Any]]

    def per_function(self) -> dict[str, list[tuple[str, Any, Any]]]:
        out: dict[str, list[tuple[str, Any, Any]]] = {}
        for key, before, after in self.diff:
            function, _, what = key.partition(".")
            if what and what != "signature":  # signatures are griffe's to compare
                out.setdefault(function, []).append((what, before, after))
        return out

    def findings(self, sites: Sequence[CallSite], old: ApiIndex, new: ApiIndex,
                 package: str) -> list[Finding]:
        if (self.baseline, self.candidate) != (old.version, new.version):
            return []
        out = []
        for function, changes in self.per_function().items():
            what, before, after = changes[0]
            more = f" (+{len(changes) - 1} more)" if len(changes) > 1 else ""
            detail = _one_line(f"check the inputs this call passes: the GPU gate saw `{what}` "
                               f"change from {_value(before)} to {_value(after)}{more}")
            for site in calls_of(function, sites, old, new):
                sig_old, sig_new = old.lookup(site.path), new.lookup(site.path)
                out.append(Finding(
                    file=site.file, line=site.line, column=site.column, function=site.path,
                    severity=Severity.REVIEW, change="GPU gate: recorded behaviour changed",
                    old_signature=sig_old.render() if sig_old else "",
                    new_signature=sig_new.render() if sig_new else "", detail=detail))
        return out


def parse_observations(text: str, source: str) -> Observations:
    """gate.json as ``pinbump gpu-gate`` writes it (baseline, candidate, observation_diff)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{source}: not JSON: {exc}") from None
    diff = doc.get("observation_diff") if isinstance(doc, Mapping) else None
    if not isinstance(diff, list) or not all(
            isinstance(d, Mapping) and isinstance(d.get("key"), str) for d in diff) or \
            not isinstance(doc.get("baseline"), str) or not isinstance(doc.get("candidate"), str):
        raise InputError(f"{source}: not a GPU gate report (needs baseline, candidate and "
                         "observation_diff [{key, baseline, candidate}])")
    return Observations(doc["baseline"], doc["candidate"],
                        [(d["key"], d.get("baseline"), d.get("candidate")) for d in diff])
