"""Render plans for the terminal and as JSON. Pure: data in, text out."""

from __future__ import annotations

import io
import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bot.core.models import Plan


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
            }
            for c in plan.changes
        ],
        "rejected": [{"package": r.package, "version": r.version, "reason": r.reason}
                     for r in plan.rejected],
        "unchanged": [{"package": p, "specifier": s, "reason": why}
                      for p, s, why in plan.unchanged],
        "not_verified": [{"package": p, "reason": why} for p, why in plan.not_verified],
    }


def plan_json(plan: Plan) -> str:
    return json.dumps(plan_to_dict(plan), indent=2) + "\n"


def plan_text(plan: Plan, width: int = 120, color: bool = False) -> str:
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
        console.print(escape(f"  unchanged  {package} {spec}: {why}"))
    for package, why in plan.not_verified:
        console.print(escape(f"  not verified  {package}: {why}"))
    if plan.rejected:
        console.print("rejected:")
        for r in plan.rejected:
            console.print(escape(f"  {r.package} {r.version}: {r.reason}"))
    return buf.getvalue()
