"""pinbump apply: the plan's edits over the workspace, written all or nothing."""

from __future__ import annotations

from dataclasses import dataclass

from bot.adapters.writer import write_all
from bot.core.edits import Bump, EditSet, bumps_from_plan
from bot.core.editset import apply_reads, compute_edits
from bot.core.models import Plan
from bot.core.workspace import Workspace


@dataclass(frozen=True)
class ApplyResult:
    edits: EditSet
    notes: list[str]
    bumps: list[Bump]
    written: bool


def apply(ws: Workspace, plan: Plan, *, write: bool = True) -> ApplyResult:
    """Compute every edit (validated, in memory), then write them unless ``write`` is off."""
    files = ws.holding(*apply_reads(plan, ws.policy))  # the rest cannot change
    edits, notes = compute_edits(plan, ws.policy, files)
    bumps = bumps_from_plan(plan, ws.group)
    written = write and bool(edits.files)
    if written:
        write_all(ws.root, {f.path: f.new.encode("utf-8") for f in edits.files}, ws.raw)
    return ApplyResult(edits, notes, bumps, written)
