"""pinbump apply: the plan's edits over the workspace, written all or nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from bot.adapters.scancache import workers_for
from bot.adapters.tree import peek_unread
from bot.adapters.writer import TargetState, write_all
from bot.commands.context import Services
from bot.core.edits import (
    Bump,
    EditSet,
    FileEdit,
    bumps_from_intent,
    bumps_to_intent,
    edit_assertions,
    left_unchanged,
)
from bot.core.editset import apply_bumps, apply_reads, compute_edits, partial_note
from bot.core.models import Plan
from bot.core.workspace import Workspace
from bot.errors import PinbumpError


@dataclass(frozen=True)
class ApplyResult:
    edits: EditSet
    notes: list[str]
    bumps: list[Bump]
    written: bool


def apply(ws: Workspace, plan: Plan, *, write: bool = True,
          services: Services | None = None, state: TargetState | None = None) -> ApplyResult:
    """Compute every edit (validated, in memory), then write them unless ``write`` is off.
    With ``services``, the keyword-binding codemod joins the pin edits in the same write
    (only when a Python file names the lead package: otherwise neither griffe nor libcst
    is imported). With ``state`` (the target's lock, held since before the workspace was
    read), the write is journalled, and an apply that was killed half-way is finished: its
    old versions join the plan's and its temporary files are removed."""
    pending = state.pending() if state is not None else None
    resumed = bumps_from_intent(pending.get("intent"), str(state.journal)) \
        if pending is not None and state is not None else []
    bumps = apply_bumps(plan, ws.policy, resumed)
    files = _search(ws, services, *apply_reads(plan, ws.policy, resumed))
    assertions = parallel_assertions(files, bumps)
    edits, notes = compute_edits(plan, ws.policy, files, resumed, assertions)
    if services is not None and plan.changes and needs_codemod(ws):
        from bot.commands.drift import codemod_for_apply

        edits, notes = codemod_for_apply(ws, services, plan, edits, notes)
    partial = partial_note(plan, ws.policy)
    if resumed:
        moving = ", ".join(f"{b.package} -> {b.new}" for b in resumed)
        notes = [f"finishing an apply that was interrupted ({moving})", *notes]
    elif partial:
        notes = [partial, *notes]
    _unread(ws, bumps, edits, notes)
    written = write and bool(edits.files)
    if written:
        write_all(ws.root, {f.path: f.new.encode("utf-8") for f in edits.files}, ws.raw,
                  state=state, intent=bumps_to_intent(bumps))
    elif write and state is not None and pending is not None:
        state.clean()  # the killed run had written everything: only its journal was left
    return ApplyResult(edits, notes, bumps, written)


def _search(ws: Workspace, services: Services | None, needles: tuple[bytes, ...],
            keep: Callable[[str], bool]) -> dict[str, str]:
    """The files apply may edit (no editor can change any other file): the first search of
    the tree (read once, the count shown on a terminal)."""
    if services is None:
        return ws.holding(needles, keep)
    with services.progress(f"searching {ws.root}") as say:
        return ws.holding(needles, keep, counted=lambda n: say(f"read {n:,} files"))


MIN_PARALLEL = 16  # Python files holding an old version before worker processes pay off


def parallel_assertions(files: Mapping[str, str], bumps: list[Bump],
                        min_files: int = MIN_PARALLEL) -> dict[str, FileEdit]:
    """``edit_assertions`` of the Python files in ``files`` that hold an old version, in
    worker processes (one per core) when there are ``min_files`` of them; else nothing
    (``compute_edits`` makes them as it goes). A file whose edit fails in a worker is left
    to ``compute_edits``, which raises its error here."""
    olds = {v for b in bumps for v in b.old}
    todo = sorted(((p, t) for p, t in files.items()
                   if p.endswith(".py") and any(v in t for v in olds)),
                  key=lambda item: -len(item[1]))  # largest first: chunks of like cost
    workers = workers_for(len(todo), min_files)
    if not workers:
        return {}
    chunks = [todo[i::workers * 2] for i in range(workers * 2)]
    out: dict[str, FileEdit] = {}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for part in pool.map(_assertions_of, chunks, [bumps] * len(chunks)):
            out.update(part)
    return out


def _assertions_of(chunk: list[tuple[str, str]], bumps: list[Bump]) -> dict[str, FileEdit]:
    out = {}
    for path, text in chunk:
        try:
            out[path] = edit_assertions(path, text, bumps)
        except PinbumpError:
            continue  # made again, and raised, in the main process
    return out


def _unread(ws: Workspace, bumps: list[Bump], edits: EditSet, notes: list[str]) -> None:
    """Files that may hold a pin and were not read are never skipped silently: each is a note,
    and an old version in one (a Dockerfile ARG in a file that is not UTF-8) is listed as left
    unchanged with its line."""
    if not ws.target.skipped:
        return
    for path, why in ws.target.skipped:
        notes.append(f"{path}: not read ({why}); nothing in it was edited, check it by hand")
    peeked = peek_unread(ws.root, [p for p, _ in ws.target.skipped])
    edits.left_unchanged.extend(left_unchanged(peeked, bumps))


def needs_codemod(ws: Workspace) -> bool:
    """A Python file whose bytes name the lead's import package (a byte search, served by
    the search apply made already: the lead's import names are of the workspace's
    interest)."""
    return bool(ws.lead_sources())
