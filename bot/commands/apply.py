"""pinbump apply: the plan's edits over the workspace, written all or nothing."""

from __future__ import annotations

from dataclasses import dataclass

from bot.adapters.writer import write_all
from bot.commands.context import Services
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


def apply(ws: Workspace, plan: Plan, *, write: bool = True,
          services: Services | None = None) -> ApplyResult:
    """Compute every edit (validated, in memory), then write them unless ``write`` is off.
    With ``services``, the keyword-binding codemod joins the pin edits in the same write
    (only when a Python file names the lead package: otherwise neither griffe nor libcst
    is imported)."""
    files = ws.holding(*apply_reads(plan, ws.policy))  # the rest cannot change
    edits, notes = compute_edits(plan, ws.policy, files)
    if services is not None and plan.changes and needs_codemod(ws, plan):
        from bot.commands.drift import codemod_for_apply

        edits, notes = codemod_for_apply(ws, services, plan, edits, notes)
    bumps = bumps_from_plan(plan, ws.group)
    written = write and bool(edits.files)
    if written:
        write_all(ws.root, {f.path: f.new.encode("utf-8") for f in edits.files}, ws.raw)
    return ApplyResult(edits, notes, bumps, written)


def needs_codemod(ws: Workspace, plan: Plan) -> bool:
    """A Python file whose bytes name the lead's import package (a byte search)."""
    parts = plan.lead.lower().replace("-", "_").replace(".", "_").split("_")
    guesses = {"_".join(parts[:i]).encode() for i in range(1, len(parts) + 1)}
    return any(p.endswith(".py") and any(g in data for g in guesses)
               for p, data in ws.raw.items())
