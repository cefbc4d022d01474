"""pinbump drift: the lead package's API change between two versions, at the target's call
sites; ``--fix`` rewrites breaking positional calls."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from bot.adapters.apisource import (
    LoadedVersion,
    api_breakages,
    build_apis,
    fetch_version,
    load_version,
    reached_modules,
    shipped_advisories,
)
from bot.adapters.git import Git
from bot.adapters.index import SimpleIndex
from bot.adapters.scancache import scanning
from bot.adapters.writer import append_file, write_all, write_file
from bot.commands.context import Services
from bot.commands.plan import plan as make_plan
from bot.core.config import Policy
from bot.core.discovery import Target, parse_pyproject, parse_requirements
from bot.core.drift import (
    CallSite,
    DriftReport,
    Finding,
    ReviewSource,
    analyse,
    fix_source,
    reachable_breakages,
    scan_source,
)
from bot.core.edits import Edit, EditSet, FileEdit
from bot.core.environment import Environment
from bot.core.models import DistFile, EditKind, Plan
from bot.core.resolve import best_wheel
from bot.core.review import Advisories, Observations, parse_advisories, parse_observations
from bot.core.workspace import Workspace, import_guesses
from bot.errors import InputError, PinbumpError
from bot.render.drift import drift_markdown, sarif_json, workflow_commands


@dataclass
class DriftOutcome:
    report: DriftReport
    fixed: list[Finding]
    unfixed: list[Finding]  # breaking findings the codemod could not rewrite safely
    old: LoadedVersion | None
    new: LoadedVersion | None
    rewritten: dict[str, str] = field(default_factory=dict)  # path -> text the codemod made
    before: dict[str, str] = field(default_factory=dict)  # path -> text before the codemod


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


@contextmanager
def background_scan(files: Mapping[str, str], roots: set[str], min_files: int = 48,
                    cache: Path | None = None, say: Callable[[str], None] | None = None
                    ) -> Iterator[Callable[[], dict[str, list[CallSite]]]]:
    """Scan the files that mention the package while the caller does other work (loading
    the APIs); the yielded function waits for the result. Only a file that imports it or
    holds a string starting with its name can reach it (``reaching``); one that names it
    otherwise (prose, a longer name) is not parsed and has no call sites. Files scanned by
    an earlier run with the same text are not parsed again (``cache``); the others go to
    worker processes, one per core, when there are ``min_files`` of them."""
    named = [p for p, text in files.items() if any(r in text for r in roots)]
    can_reach = reaching(roots)
    todo = {p: files[p] for p in named if can_reach.search(files[p])}
    counted = None if say is None else (
        lambda done, total: say(f"parsed {done:,}/{total:,} files"))
    with scanning(todo, scan_source, CallSite, args=(roots,), params=sorted(roots),
                  cache=cache, min_parallel=min_files, counted=counted) as scanned:
        yield lambda: {**{p: [] for p in named}, **scanned()}


class Reaching:
    """Where a file may reach one of ``roots``: an import of it (``import x``, ``from x``,
    ``import a, x``) or a string starting with its name (``import_module("x.gemm")``,
    ``("x.gemm", "Kernel")``, ``f"x.{name}"``). Every call-site form the scanner knows
    starts at one of these. The names are found first (a literal search), then what stands
    before each is looked at: one pattern over the whole text was 0.8 ms per file."""

    _BEFORE = re.compile(r"(?:\bimport\s+|\bfrom\s+|,\s*|['\"])\Z")

    def __init__(self, roots: set[str]) -> None:
        names = "|".join(re.escape(r) for r in sorted(roots, key=len, reverse=True))
        self._names = re.compile(rf"(?:{names})\b")

    def search(self, text: str) -> bool:
        return any(self._BEFORE.search(text, max(0, m.start() - 200), m.start())
                   for m in self._names.finditer(text))


def reaching(roots: set[str]) -> Reaching:
    return Reaching(roots)


def review_paths(reviews: list[ReviewSource]) -> list[str]:
    """The functions the review sources (advisories, the GPU gate) look for calls of."""
    out: list[str] = []
    for source in reviews:
        if isinstance(source, Advisories):
            out += [adv.function for adv in source.items]
        elif isinstance(source, Observations):
            out += list(source.per_function())
    return out


def base_pin(root: Path, target: Target, lead: str, base: str) -> tuple[str, str] | None:
    """(version, ref): the lead's pin as committed on ``origin/<base>``, else ``HEAD``, in
    the files where the working tree pins it; None outside a git checkout."""
    git = Git(root)
    if git.run("rev-parse", "--is-inside-work-tree", check=False) != "true":
        return None
    ref = next((r for r in (f"origin/{base}", "HEAD") if git.rev(r)), None)
    if ref is None:
        return None
    versions = []
    for file in sorted({p.file for p in target.pins_of(lead)}):
        text = git.run("show", f"{ref}:./{file}", check=False)
        if not text:
            continue
        pins = parse_pyproject(text, f"{ref}:{file}", {lead}).pins if file.endswith(
            ".toml") else parse_requirements(text, f"{ref}:{file}", {lead})
        versions += [p.current for p in pins if p.current is not None]
    return (str(max(versions)), ref) if versions else None


def drift_versions(ws: Workspace, services: Services, from_version: str | None,
                   to_version: str | None, as_of: str | None, base: str | None
                   ) -> tuple[str, str]:
    """(from, to): --from, else the pin on the base branch (``origin/<base>``, else
    ``HEAD``), else the working tree's; --to, else the plan's target."""
    lead = ws.group.lead
    where = "--from"
    if from_version is None and base is not None:
        found = base_pin(ws.root, ws.target, lead, base)
        if found is not None:
            from_version, ref = found
            where = f"the pin on {ref}"
    if from_version is None or to_version is None:
        planned = make_plan(ws, services, as_of)
        if from_version is None:
            from_version, where = planned.lead_current, "the working tree's pin"
        to_version = to_version or planned.lead_target
    if not from_version:
        raise InputError(f"{lead} has no pinned version to compare from; pass --from")
    if from_version == to_version:
        raise InputError(f"{lead} {from_version} ({where}) is also the version to compare "
                         "to: nothing to compare (pass --from/--to, or bump first)")
    return from_version, str(to_version)


def drift(ws: Workspace, services: Services, from_version: str | None,
          to_version: str | None, *, fix: bool = False, as_of: str | None = None,
          base: str | None = None, gate_report: ReviewSource | None = None,
          sources: Mapping[str, str] | None = None, write: bool = True) -> DriftOutcome:
    """Between ``from_version`` and ``to_version`` (default: the pin on ``base`` when given,
    else the working tree's, and the plan's target). ``sources`` replaces the workspace's
    Python files (apply passes its edited texts); ``write`` off keeps the codemod's rewrites
    in the outcome instead of writing them."""
    lead = ws.group.lead
    services.http.authorize(ws.policy.credentials)
    from_version, to_version = drift_versions(ws, services, from_version, to_version, as_of,
                                              base)
    store = services.store
    old_wheel, new_wheel = _wheels_for(services.index, ws.policy, ws.env,
                                       [from_version, to_version])
    guesses = import_guesses(lead)
    if sources is None:  # only files whose bytes name the package are read and decoded
        with services.progress(f"searching {ws.root}") as say:
            sources = ws.lead_sources(counted=lambda n: say(f"read {n:,} files"))
    else:
        sources = {p: t for p, t in sources.items() if p.endswith(".py")}
    reviews: list[ReviewSource] = [
        Advisories(parse_advisories(shipped_advisories(), "bot/data/advisories.toml"))]
    if gate_report is not None:
        reviews.append(gate_report)
    with services.progress(f"finding the calls of {lead}") as say, \
            background_scan(sources, guesses, cache=services.cache, say=say) as scanned:
        old_src = fetch_version(services.index, old_wheel, store)
        new_src = fetch_version(services.index, new_wheel, store)
        roots = {old_src.package, new_src.package}
        found = scanned() if roots <= guesses else {
            p: scan_source(p, t, roots) for p, t in sources.items()}
    sites = {p: [c for c in calls if c.path.split(".")[0] in roots]
             for p, calls in found.items()}
    with services.progress(f"loading the API of {lead} {from_version} and {to_version}"):
        # griffe loads only what the target reaches (flashinfer 0.7 is 2,854 modules)
        paths = [c.path for calls in sites.values() for c in calls] + review_paths(reviews)
        build_apis(old_src, new_src, old_wheel, new_wheel, paths, store)  # when cold
        modules = reached_modules(old_src, new_src, paths, store)
        old = load_version(services.index, old_wheel, store, modules, old_src)
        new = load_version(services.index, new_wheel, store, modules, new_src)
        breakages = api_breakages(old, new, store)
    versions = (from_version, to_version)

    def analysed(sites: dict[str, list[CallSite]] | None) -> DriftReport:
        report = analyse(sources, roots, old.api, new.api, lead, sites, reviews)
        report.api_breakages = reachable_breakages(breakages, report.reached, old.api)
        report.api_breakages_elsewhere = len(breakages) - len(report.api_breakages)
        if isinstance(gate_report, Observations) and (gate_report.baseline,
                                                      gate_report.candidate) != versions:
            report.notes.append(f"the GPU gate report compares {gate_report.baseline} -> "
                                f"{gate_report.candidate}, not {from_version} -> "
                                f"{to_version}: its observations were not used")
        return report

    report = analysed(sites)
    fixed: list[Finding] = []
    rewritten: dict[str, str] = {}
    before: dict[str, str] = {}
    if fix:
        for path in sorted({f.file for f in report.breaking if f.fix}):
            text, done_here = fix_source(sources[path], [f for f in report.findings
                                                         if f.file == path])
            if text != sources[path]:
                rewritten[path], before[path] = text, sources[path]
            fixed += done_here
        if rewritten:
            if write:
                write_all(ws.root, {p: t.encode("utf-8") for p, t in rewritten.items()},
                          ws.raw)
            sources.update(rewritten)
            report = analysed(None)
    unfixed = report.unfixed if fix else []
    return DriftOutcome(report, fixed, unfixed, old, new, rewritten, before)


def codemod_file_edits(outcome: DriftOutcome) -> list[FileEdit]:
    """The codemod's rewrites as apply's edits (kind ``codemod``, one per fixed call)."""
    out = []
    for path, new in sorted(outcome.rewritten.items()):
        old = outcome.before[path]
        old_lines, new_lines = old.splitlines(), new.splitlines()
        edits = [Edit(path, f.line, EditKind.CODEMOD, old_lines[f.line - 1].strip(),
                      new_lines[f.line - 1].strip())
                 for f in outcome.fixed if f.file == path and f.line <= len(new_lines)]
        out.append(FileEdit(path, old, new, edits))
    return out


def with_codemod(edits: EditSet, codemod: list[FileEdit]) -> EditSet:
    """Pin edits and codemod edits of the same tree as one set (one all-or-nothing write);
    a file in both holds the codemod's text, made from the pin-edited one."""
    by_path = {f.path: f for f in edits.files}
    for fe in codemod:
        if fe.path in by_path:
            pinned = by_path[fe.path]
            by_path[fe.path] = FileEdit(fe.path, pinned.old, fe.new, [*pinned.edits, *fe.edits])
        else:
            by_path[fe.path] = fe
    return EditSet([by_path[p] for p in sorted(by_path)], edits.left_unchanged)


def edited_sources(ws: Workspace, edits: EditSet) -> dict[str, str]:
    """The Python files that name the lead, as they read once ``edits`` are made."""
    texts = ws.lead_sources()
    texts.update({f.path: f.new for f in edits.files if f.path.endswith(".py")})
    return texts


def codemod_for_apply(ws: Workspace, services: Services, plan: Plan, edits: EditSet,
                      notes: list[str]) -> tuple[EditSet, list[str]]:
    """apply's keyword-binding codemod, computed on the pin-edited texts so that one
    all-or-nothing write holds both. When the drift cannot be computed the bump still
    stands, and a note says why the calls were not checked."""
    if not plan.changes or not plan.lead_current or plan.lead_current == plan.lead_target:
        return edits, notes
    try:
        outcome = drift(ws, services, plan.lead_current, plan.lead_target, fix=True,
                        sources=edited_sources(ws, edits), write=False)
    except PinbumpError as exc:
        return edits, [*notes, f"calls were not checked for API drift: {exc}"]
    notes = list(notes)
    for f in outcome.report.unfixed:
        notes.append(f"{f.file}:{f.line} {f.function} needs a hand fix: {f.detail}")
    return with_codemod(edits, codemod_file_edits(outcome)), notes


def read_gate_report(path: Path | None) -> ReviewSource | None:
    """The GPU gate's gate.json, as a source of review findings."""
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the GPU gate report: {exc}") from None
    return parse_observations(text, str(path))


def publish_drift(report: DriftReport, root: Path, sarif_path: Path | None,
                  environ: Mapping[str, str], version: str) -> list[str]:
    """Write the SARIF file and, inside GitHub Actions, the job summary; returns the workflow
    commands (annotations) to print, which are empty outside Actions."""
    prefix = ""
    if sarif_path is not None or environ.get("GITHUB_ACTIONS") == "true":
        prefix = Git(root).run("rev-parse", "--show-prefix", check=False)
    if sarif_path is not None:
        write_file(sarif_path, sarif_json(report, version, prefix).encode("utf-8"))
    if environ.get("GITHUB_ACTIONS") != "true":
        return []
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        append_file(Path(summary), drift_markdown(report).encode("utf-8"))
    return workflow_commands(report, prefix)
