"""install-workflows: the shipped workflows (workflows/) with a target's settings.

Rendering is pure text work on marker comments, so the shipped files stay valid workflows that
actionlint and zizmor check as they are: ``KEY: value # pinbump:setting NAME`` lines get a new
value, and the matrix after ``include: # pinbump:runners`` is regenerated from the runner
labels. Writing is atomic, and a file already up to date is left untouched.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.adapters.shipped import shipped_dir
from bot.adapters.writer import write_all
from bot.errors import InputError

WORKFLOWS = ("pinbump-bump.yml", "pinbump-commands.yml", "pinbump-gpu-gate.yml")


def workflows_dir() -> Path:
    env = os.environ.get("PINBUMP_WORKFLOWS")
    return Path(env) if env else shipped_dir("workflows")


@dataclass(frozen=True)
class WorkflowSettings:
    runners: Mapping[str, Sequence[str]]
    python: str | None = None
    pyproject: str | None = None
    lead: str | None = None
    repository: str | None = None
    ref: str | None = None

    def values(self) -> dict[str, str]:
        pairs = {"python": self.python, "pyproject": self.pyproject, "lead": self.lead,
                 "pinbump-repository": self.repository, "pinbump-ref": self.ref}
        return {k: v for k, v in pairs.items() if v is not None}


def parse_runner_labels(items: Sequence[str]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for item in items:
        job, sep, labels = item.partition("=")
        names = tuple(x.strip() for x in labels.split(",") if x.strip())
        if not sep or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", job) or not names:
            raise InputError(f"--runner-labels {item!r}: expected JOB=LABEL[,LABEL...] with a "
                             "lowercase job name")
        out[job] = names
    return out


_SETTING = re.compile(r"^(?P<head>\s*[A-Za-z_][A-Za-z0-9_]*:\s*)(?P<value>.*?)"
                      r"(?P<tail>\s+# pinbump:setting (?P<name>[a-z-]+))\s*$")
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def render(text: str, settings: WorkflowSettings) -> str:
    values = settings.values()
    out: list[str] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _SETTING.match(line.rstrip("\n"))
        if m and m.group("name") in values:
            out.append(f"{m.group('head')}{json.dumps(values[m.group('name')])}"
                       f"{m.group('tail')}\n")
            i += 1
            continue
        if line.rstrip().endswith("include: # pinbump:runners"):
            out.append(line)
            indent = len(line) - len(line.lstrip()) + 2
            i += 1
            while i < len(lines) and (not lines[i].strip() or
                                      len(lines[i]) - len(lines[i].lstrip()) >= indent):
                i += 1
            pad = " " * indent
            for job, labels in settings.runners.items():
                bad = [x for x in labels if not _LABEL.fullmatch(x)]
                if bad:
                    raise InputError(f"runner label {bad[0]!r} of job {job!r} is not a valid "
                                     "label")
                out.append(f"{pad}- job: {job}\n{pad}  labels: [{', '.join(labels)}]\n")
            continue
        out.append(line)
        i += 1
    return "".join(out)


_PINNED_REF = re.compile(r"[0-9a-f]{40}|v?\d+(\.\d+)*([.+-]?[A-Za-z0-9]+)*")


def check_ref(ref: str | None) -> None:
    """pinbump itself is installed from a tag or a full commit SHA, never a moving branch."""
    if ref is not None and not _PINNED_REF.fullmatch(ref):
        raise InputError(f"--pinbump-ref {ref!r}: give a release tag (v0.1.0) or a full "
                         "40-hex commit SHA; a branch such as main moves under the workflows")


def _inside(repo: Path, rel: str) -> Path:
    """repo/rel, refusing any link on the way: the workflows are never written through a
    symlink, least of all one pointing out of the repository."""
    path = repo
    for part in Path(rel).parts:
        path = path / part
        if path.is_symlink():
            raise InputError(f"{path}: is a symbolic link; install-workflows writes only "
                             "inside the repository and never through a link")
    root = repo.resolve()
    if not path.resolve().is_relative_to(root):
        raise InputError(f"{path}: resolves outside {root}")
    return path


def install(repo: Path, settings: WorkflowSettings, dry_run: bool = False
            ) -> Iterator[tuple[str, bool]]:
    """Write the rendered workflows into repo/.github/workflows; yields (path, changed)."""
    if not settings.runners:
        raise InputError("no GPU runner jobs: give --runner-labels JOB=LABELS or set "
                         "[tool.pinbump.runner-labels]")
    check_ref(settings.ref)
    source = workflows_dir()
    target = _inside(repo, ".github/workflows")
    new: dict[str, bytes] = {}
    originals: dict[str, bytes] = {}
    results = []
    for name in WORKFLOWS:
        try:
            text = (source / name).read_text()
        except OSError as exc:
            raise InputError(f"{source / name}: cannot read the shipped workflow "
                             f"({exc.strerror}); set PINBUMP_WORKFLOWS") from None
        rendered = render(text, settings)
        rel = f".github/workflows/{name}"
        path = _inside(repo, rel)
        old = path.read_bytes() if path.exists() else None
        changed = old != rendered.encode()
        results.append((rel, changed))
        if changed:
            new[rel] = rendered.encode()
            if old is not None:
                originals[rel] = old
    if new and not dry_run:
        target.mkdir(parents=True, exist_ok=True)
        for rel in new:
            if rel not in originals:  # new files: create empty, then replace atomically
                (repo / rel).write_bytes(b"")
                originals[rel] = b""
        write_all(repo, new, originals)
    yield from results
