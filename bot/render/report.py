"""Render plans for the terminal and as JSON. Pure: data in, text out."""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, Any

from bot.core.models import Channel, Plan
from bot.render.jsonout import to_json

if TYPE_CHECKING:
    from rich.console import Console

    from bot.core.edits import EditSet

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


def _print_changes(console: Console, plan: Plan) -> None:
    """The table of changes, or the line saying there is nothing to bump."""
    from rich.table import Table  # here: --json never loads rich (50 ms of start-up)

    if not plan.changes:
        console.print(escape(f"pinbump plan: group {plan.group}: nothing to bump "
                             f"({plan.lead} {plan.lead_current} is current)"))
        return
    table = Table(title=f"pinbump plan: group {plan.group}", title_justify="left")
    for col in ("package", "current", "target", "where", "why"):
        table.add_column(col, overflow="fold")
    for c in plan.changes:
        table.add_row(*(escape(x) for x in (c.package, c.specifier_before,
                                            c.specifier_after, "\n".join(c.files), c.reason)))
    console.print(table)


def _checked_for(plan: Plan) -> list[str]:
    if not plan.platforms:
        return []
    return [f"  checked for  {plan.platforms}"
            + (f" ({plan.channel} channel)" if plan.channel != Channel.STABLE else "")]


def _context_lines(plan: Plan) -> list[tuple[str, bool]]:
    """The lines under the table, in order, each with whether it wraps softly."""
    soft = [f"  unchanged  {package} {spec}: {why}" for package, spec, why in plan.unchanged]
    soft += [f"  not verified  {package}: {why}" for package, why in plan.not_verified]
    soft += [f"  index  {package}: {where}" for package, where in sorted(plan.found_on.items())]
    after = [f"  unreachable  {problem}" for problem in plan.unreachable]
    after += [f"  warning  {warning}" for warning in plan.warnings]
    after += [f"  not read  {path}: {why}" for path, why in plan.skipped]
    return [(line, True) for line in soft] + [(line, False) for line in _checked_for(plan)] \
        + [(line, True) for line in after]


def plan_text(plan: Plan, width: int = 120, color: bool = False) -> str:
    from rich.console import Console  # here: --json never loads rich (50 ms of start-up)

    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=color, color_system=None if not
                      color else "auto", highlight=False)
    _print_changes(console, plan)
    for line, soft_wrap in _context_lines(plan):
        console.print(escape(line), soft_wrap=soft_wrap)
    if plan.rejected:
        console.print("rejected:")
        for line in collapse_rejections(plan):
            console.print(escape(f"  {line}"), soft_wrap=True)
    for hint in plan.hints:
        console.print(escape(f"fix: {hint}"), soft_wrap=True)
    return buf.getvalue()


def edits_json(edits: EditSet, notes: list[str], written: bool) -> str:
    from bot.core.editset import edits_to_dict  # apply's; plan does not load the editors

    return to_json(edits_to_dict(edits, notes, written))
