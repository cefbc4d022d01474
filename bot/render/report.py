"""Render plans for the terminal and as JSON. Pure: data in, text out."""

from __future__ import annotations

import io
import re
from typing import Any

from bot.core.edits import EditSet
from bot.core.editset import edits_to_dict
from bot.core.models import Plan
from bot.render.jsonout import to_json

_TERMINAL_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def escape(text: str) -> str:
    """Outside text (yank reasons, file names, versions) for the terminal: rich markup
    escaped, and control characters but the newline shown as escapes, so no escape sequence
    from an index or a repository reaches the terminal (a window title, a cleared screen,
    OSC 52 writing the clipboard)."""
    from rich.markup import escape as markup_escape  # here: --json never loads rich

    return markup_escape(_TERMINAL_CONTROL.sub(lambda m: repr(m.group())[1:-1], text))


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    return {
        "group": plan.group,
        "lead": {"package": plan.lead, "current": plan.lead_current, "target": plan.lead_target},
        "changes": [
            {
                "package": c.package,
                "current": c.current,
                "target": c.target,
                "specifier_before": c.specifier_before,
                "specifier_after": c.specifier_after,
                "files": c.files,
                "reason": c.reason,
                "index": plan.found_on.get(c.package, ""),
            }
            for c in plan.changes
        ],
        "rejected": [{"package": r.package, "version": r.version, "reason": r.reason,
                      "uploaded": r.uploaded.strftime("%Y-%m-%d") if r.uploaded else None}
                     for r in plan.rejected],
        "unchanged": [{"package": p, "specifier": s, "reason": why}
                      for p, s, why in plan.unchanged],
        "not_verified": [{"package": p, "reason": why} for p, why in plan.not_verified],
        "indexes": dict(sorted(plan.found_on.items())),
        "unreachable": [{"package": u.package, "index": u.url, "error": u.error,
                         "verified": u.verified} for u in plan.unreachable],
        "hints": plan.hints,
        "warnings": plan.warnings,
        "skipped": [{"file": f, "reason": why} for f, why in plan.skipped],
        "platforms": plan.platforms,
        "channel": plan.channel,
    }


def collapse_rejections(plan: Plan) -> list[str]:
    """The rejected list collapsed by reason: one line per (package, reason) naming every
    version it hit, each with its upload date when the index gave one."""
    groups: dict[tuple[str, str], list[str]] = {}
    for r in plan.rejected:
        reason = r.reason.replace(f" {r.version}+", " <version>+").replace(
            f" {r.version} ", " <version> ").replace(f" {r.version}:", " <version>:")
        if reason.endswith(f" {r.version}"):
            reason = reason[: -len(r.version)] + "<version>"
        when = f" ({r.uploaded:%Y-%m-%d})" if r.uploaded else ""
        groups.setdefault((r.package, reason), []).append(f"{r.version}{when}")
    lines = []
    for (package, reason), versions in groups.items():
        text = reason.replace("<version>", "at that version" if len(versions) > 1
                              else versions[0].split(" ")[0])
        lines.append(f"{package} {', '.join(versions)}: {text}")
    return lines


def plan_json(plan: Plan) -> str:
    return to_json(plan_to_dict(plan))


def plan_text(plan: Plan, width: int = 120, color: bool = False) -> str:  # noqa: C901
    from rich.console import Console  # here: --json never loads rich (50 ms of start-up)
    from rich.table import Table

    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=color, color_system=None if not
                      color else "auto", highlight=False)
    if plan.changes:
        table = Table(title=f"pinbump plan: group {plan.group}", title_justify="left")
        for col in ("package", "current", "target", "where", "why"):
            table.add_column(col, overflow="fold")
        for c in plan.changes:
            table.add_row(*(escape(x) for x in (c.package, c.specifier_before,
                                                c.specifier_after, "\n".join(c.files), c.reason)))
        console.print(table)
    else:
        console.print(escape(f"pinbump plan: group {plan.group}: nothing to bump "
                             f"({plan.lead} {plan.lead_current} is current)"))
    for package, spec, why in plan.unchanged:
        console.print(escape(f"  unchanged  {package} {spec}: {why}"), soft_wrap=True)
    for package, why in plan.not_verified:
        console.print(escape(f"  not verified  {package}: {why}"), soft_wrap=True)
    for package, where in sorted(plan.found_on.items()):
        console.print(escape(f"  index  {package}: {where}"), soft_wrap=True)
    if plan.platforms:
        console.print(escape(f"  checked for  {plan.platforms}"
                             + (f" ({plan.channel} channel)" if plan.channel != "stable"
                                else "")))
    for problem in plan.unreachable:
        console.print(escape(f"  unreachable  {problem}"), soft_wrap=True)
    for warning in plan.warnings:
        console.print(escape(f"  warning  {warning}"), soft_wrap=True)
    for path, why in plan.skipped:
        console.print(escape(f"  not read  {path}: {why}"), soft_wrap=True)
    if plan.rejected:
        console.print("rejected:")
        for line in collapse_rejections(plan):
            console.print(escape(f"  {line}"), soft_wrap=True)
    for hint in plan.hints:
        console.print(escape(f"fix: {hint}"), soft_wrap=True)
    return buf.getvalue()


def edits_json(edits: EditSet, notes: list[str], written: bool) -> str:
    return to_json(edits_to_dict(edits, notes, written))
