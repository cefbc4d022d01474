"""Wiring: options in, adapters built, pure core called. Shared by the CLI and the tests."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from packaging.version import InvalidVersion, Version

from bot.adapters.apisource import LoadedVersion, api_breakages, load_version
from bot.adapters.http import HttpClient, default_cache_dir
from bot.adapters.index import SimpleIndex
from bot.adapters.sources import IndexSource
from bot.adapters.tree import read_tree
from bot.adapters.writer import write_all
from bot.core.config import Policy, config_names, load_policy, root_policy_for_discovery
from bot.core.discovery import Target, discover
from bot.core.drift import CallSite, DriftReport, Finding, analyse, fix_source, scan_source
from bot.core.environment import Environment
from bot.core.models import DistFile, Plan
from bot.core.resolve import best_wheel, cutoff_for, make_plan
from bot.errors import InputError


@dataclass(frozen=True)
class PlanOptions:
    repo: Path
    group: str | None = None
    as_of: str | None = None
    index_url: str | None = None
    min_release_age: float | None = None
    cache_dir: Path | None = None
    no_cache: bool = False
    timeout: float = 20.0
    retries: int = 3

    @property
    def cache(self) -> Path | None:
        return None if self.no_cache else (self.cache_dir or default_cache_dir())


@dataclass
class Planned:
    plan: Plan
    target: Target
    policy: Policy
    http: HttpClient
    index: SimpleIndex


def load_target(opts: PlanOptions) -> tuple[Target, Policy]:
    root = opts.repo
    if not root.is_dir():
        raise InputError(f"{root}: not a directory (pass the target repository with --repo)")
    names = root_policy_for_discovery(root)
    target = discover(root, names)
    policy = load_policy(target, {
        "group": opts.group,
        "index_url": opts.index_url,
        "min_release_age_days": opts.min_release_age,
    })
    extra = config_names(policy) - names
    if extra:
        target = discover(root, names | extra)
    return target, policy


@contextmanager
def planned(opts: PlanOptions, *, http: HttpClient | None = None,
            status: Callable[[str], AbstractContextManager[object]] | None = None
            ) -> Iterator[Planned]:
    """Discover, read the policy, query the index and resolve; the client stays open inside."""
    target, policy = load_target(opts)
    own = http is None
    client = http or HttpClient(opts.cache, timeout=opts.timeout, retries=opts.retries)
    try:
        index = SimpleIndex(client, opts.cache)
        group = policy.active_group
        env = Environment.for_target(target.requires_python(group.lead), policy.python)
        source = IndexSource(index, policy, env)
        with (status or (lambda _msg: nullcontext()))(
                f"querying the index for {', '.join(group.members)}"):
            source.prefetch(group.members)
            now = cutoff_for(opts.as_of, datetime.now(timezone.utc))
            plan = make_plan(target, policy, source, now, as_of=bool(opts.as_of))
        yield Planned(plan=plan, target=target, policy=policy, http=client, index=index)
    finally:
        if own:
            client.close()


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


def run_drift(opts: PlanOptions, from_version: str | None, to_version: str | None,
              fix: bool = False, *, http: HttpClient | None = None) -> DriftOutcome:
    target, policy = load_target(opts)
    lead = policy.active_group.lead
    own = http is None
    client = http or HttpClient(opts.cache, timeout=opts.timeout, retries=opts.retries)
    scratch = tempfile.TemporaryDirectory() if opts.cache is None else None
    cache = opts.cache or Path(scratch.name)  # type: ignore[union-attr]
    try:
        if from_version is None or to_version is None:
            with planned(opts, http=client) as done:
                from_version = from_version or done.plan.lead_current
                to_version = to_version or done.plan.lead_target
        if not from_version:
            raise InputError(f"{lead} has no pinned version to compare from; pass --from")
        if from_version == to_version:
            return DriftOutcome(DriftReport(lead, from_version, to_version), [], [], None, None)
        index = SimpleIndex(client, opts.cache)
        env = Environment.for_target(target.requires_python(lead), policy.python)
        old_wheel, new_wheel = _wheels_for(index, policy, env, [from_version, str(to_version)])
        tree = read_tree(target.root)
        sources = {p: t for p, t in tree.text.items() if p.endswith(".py")}
        guesses = import_guesses(lead)
        with background_scan(sources, guesses) as scanned:
            old = load_version(index, old_wheel, cache)
            new = load_version(index, new_wheel, cache)
            roots = {old.package, new.package}
            sites = None
            if roots <= guesses:
                sites = {p: [c for c in found if c.path.split(".")[0] in roots]
                         for p, found in scanned().items()}
        report = analyse(sources, roots, old.api, new.api, lead, sites)
        report.api_breakages = api_breakages(old, new, cache)
        fixed: list[Finding] = []
        if fix:
            rewritten: dict[str, bytes] = {}
            for path in sorted({f.file for f in report.breaking if f.fix}):
                text, done_here = fix_source(sources[path], [f for f in report.findings
                                                             if f.file == path])
                rewritten[path] = text.encode("utf-8")
                fixed += done_here
            if rewritten:
                write_all(target.root, rewritten, tree.raw)
                sources.update({p: b.decode("utf-8") for p, b in rewritten.items()})
                report = analyse(sources, roots, old.api, new.api, lead)
                report.api_breakages = api_breakages(old, new, cache)
        unfixed = [f for f in report.breaking if not f.fix] if fix else []
        return DriftOutcome(report, fixed, unfixed, old, new)
    finally:
        if own:
            client.close()
        if scratch is not None:
            scratch.cleanup()
