"""pinbump drift: the lead package's API change between two versions, at the target's call
sites; ``--fix`` rewrites breaking positional calls."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from bot.adapters.apisource import LoadedVersion, api_breakages, load_version
from bot.adapters.index import SimpleIndex
from bot.adapters.writer import write_all
from bot.commands.context import Services
from bot.commands.plan import plan as make_plan
from bot.core.config import Policy
from bot.core.drift import CallSite, DriftReport, Finding, analyse, fix_source, scan_source
from bot.core.environment import Environment
from bot.core.models import DistFile
from bot.core.resolve import best_wheel
from bot.core.workspace import Workspace
from bot.errors import InputError


@dataclass
class DriftOutcome:
    report: DriftReport
    fixed: list[Finding]
    unfixed: list[Finding]  # breaking findings the codemod could not rewrite safely
    old: LoadedVersion | None
    new: LoadedVersion | None


def _wheels_for(index: SimpleIndex, policy: Policy, env: Environment, versions: list[str]
                ) -> list[DistFile]:
    """The wheel each version's API is read from (one read of the project page)."""
    lead = policy.active_group.lead
    url = policy.index_for(lead)
    releases = index.project(url, lead).versions()
    out = []
    for version in versions:
        try:
            files = releases.get(Version(version))
        except InvalidVersion:
            raise InputError(f"{version!r} is not a valid version of {lead}") from None
        if not files or not any(f.is_wheel for f in files):
            raise InputError(f"{lead} {version}: no wheel on {url}")
        out.append(best_wheel(env, files))
    return out


def import_guesses(distribution: str) -> set[str]:
    """Import names a distribution may provide: flashinfer-python -> flashinfer_python,
    flashinfer. Used to start scanning before the wheel says which one it is."""
    parts = distribution.lower().replace("-", "_").replace(".", "_").split("_")
    return {"_".join(parts[:i]) for i in range(1, len(parts) + 1)}


def _scan_chunk(chunk: list[tuple[str, str]], roots: set[str]) -> dict[str, list[CallSite]]:
    return {path: scan_source(path, text, roots) for path, text in chunk}


@contextmanager
def background_scan(files: dict[str, str], roots: set[str], min_files: int = 48
                    ) -> Iterator[Callable[[], dict[str, list[CallSite]]]]:
    """Scan the files that mention the package in worker processes while the caller does
    other work (loading the APIs); the yielded function waits for the result. Few files are
    scanned in this process instead."""
    todo = sorted(p for p, text in files.items() if any(r in text for r in roots))
    workers = min(os.cpu_count() or 1, 8)
    if len(todo) < min_files or workers < 2:
        yield lambda: _scan_chunk([(p, files[p]) for p in todo], roots)
        return
    chunks = [[(p, files[p]) for p in todo[i::workers * 2]] for i in range(workers * 2)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_scan_chunk, chunk, roots) for chunk in chunks]
        yield lambda: {k: v for f in futures for k, v in f.result().items()}


def drift(ws: Workspace, services: Services, from_version: str | None,
          to_version: str | None, *, fix: bool = False, as_of: str | None = None
          ) -> DriftOutcome:
    """Between ``from_version`` and ``to_version`` (default: the plan's current and target)."""
    lead = ws.group.lead
    services.http.authorize(ws.policy.credentials)
    if from_version is None or to_version is None:
        planned = make_plan(ws, services, as_of)
        from_version = from_version or planned.lead_current
        to_version = to_version or planned.lead_target
    if not from_version:
        raise InputError(f"{lead} has no pinned version to compare from; pass --from")
    if from_version == to_version:
        return DriftOutcome(DriftReport(lead, from_version, to_version), [], [], None, None)
    store = services.store
    old_wheel, new_wheel = _wheels_for(services.index, ws.policy, ws.env,
                                       [from_version, str(to_version)])
    sources = ws.python_sources
    guesses = import_guesses(lead)
    with background_scan(sources, guesses) as scanned:
        old = load_version(services.index, old_wheel, store)
        new = load_version(services.index, new_wheel, store)
        roots = {old.package, new.package}
        sites = None
        if roots <= guesses:
            sites = {p: [c for c in found if c.path.split(".")[0] in roots]
                     for p, found in scanned().items()}
    report = analyse(sources, roots, old.api, new.api, lead, sites)
    report.api_breakages = api_breakages(old, new, store)
    fixed: list[Finding] = []
    if fix:
        rewritten: dict[str, bytes] = {}
        for path in sorted({f.file for f in report.breaking if f.fix}):
            text, done_here = fix_source(sources[path], [f for f in report.findings
                                                         if f.file == path])
            rewritten[path] = text.encode("utf-8")
            fixed += done_here
        if rewritten:
            write_all(ws.root, rewritten, ws.raw)
            sources.update({p: b.decode("utf-8") for p, b in rewritten.items()})
            report = analyse(sources, roots, old.api, new.api, lead)
            report.api_breakages = api_breakages(old, new, store)
    unfixed = [f for f in report.breaking if not f.fix] if fix else []
    return DriftOutcome(report, fixed, unfixed, old, new)
