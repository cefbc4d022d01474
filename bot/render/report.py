"""Render plans for the terminal and as JSON. Pure: data in, text out."""

from __future__ import annotations

import io
import json
import re
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bot.core.models import Plan
from bot.render.markdown import (
    code_block,
    code_span,
    escape_html,
    escape_message,
    escape_text,
)

if TYPE_CHECKING:  # drift's types only: plan's output never loads libcst or griffe
    from bot.core.drift import DriftReport


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


# -- drift ---------------------------------------------------------------------------------
def drift_json(report: DriftReport) -> str:
    return json.dumps([f.as_dict() for f in report.findings], indent=2) + "\n"


def drift_text(report: DriftReport, width: int = 140) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=False, color_system=None,
                      highlight=False)
    head = (f"pinbump drift: {report.package} {report.old_version} -> {report.new_version}: "
            f"{len(report.breaking)} breaking, "
            f"{sum(f.severity == 'unverifiable' for f in report.findings)} unverifiable, "
            f"{sum(f.severity == 'notice' for f in report.findings)} notice "
            f"({report.calls_scanned} calls in {report.files_scanned} files)")
    console.print(escape(head))
    if report.findings:
        table = Table(show_lines=False)
        for col in ("severity", "where", "function", "change", "detail"):
            table.add_column(col, overflow="fold")
        for f in report.findings:
            table.add_row(*(escape(x) for x in (f.severity, f"{f.file}:{f.line}", f.function,
                                                f.change, f.detail)))
        console.print(table)
    if report.api_breakages:
        console.print(escape(f"griffe: {len(report.api_breakages)} breaking change(s) in the "
                             "public API, of which the target calls those above; first ones:"))
        for line in report.api_breakages[:10]:
            console.print(escape(f"  {line}"))
    return buf.getvalue()


def drift_markdown(report: DriftReport, limit: int = 50) -> str:
    """The PR body's drift section: breaking first, long lists summarized."""
    lines = [f"### API drift: {code_span(report.package)} {escape_text(report.old_version)} → "
             f"{escape_text(report.new_version)}", ""]
    if not report.findings:
        lines.append(f"No call site of the target is affected ({report.calls_scanned} calls "
                     f"checked in {report.files_scanned} files).")
        return "\n".join(lines + _breakages_md(report, limit)) + "\n"
    counts = {s: sum(f.severity == s for f in report.findings)
              for s in ("breaking", "unverifiable", "notice")}
    lines.append(", ".join(f"**{n} {s}**" if s == "breaking" and n else f"{n} {s}"
                           for s, n in counts.items()))
    lines += ["", "| severity | where | function | change | detail |",
              "| --- | --- | --- | --- | --- |"]
    for f in report.findings[:limit]:
        where = code_span(f"{f.file}:{f.line}", in_table=True)
        lines.append(f"| {escape_text(f.severity)} | {where} | "
                     f"{code_span(f.function, in_table=True)} | "
                     f"{escape_message(f.change, in_table=True)} | "
                     f"{escape_message(f.detail, in_table=True)} |")
    if len(report.findings) > limit:
        lines.append(f"| … | | | {len(report.findings) - limit} more findings | |")
    changed = {(f.function, f.old_signature, f.new_signature) for f in report.findings
               if f.new_signature}
    if changed:
        lines += ["", "<details><summary>Signatures</summary>", ""]
        for function, old, new in sorted(changed)[:limit]:
            lines += [code_span(function), *code_block(f"- {old}\n+ {new}", "diff")]
        lines += ["</details>"]
    return "\n".join(lines + _breakages_md(report, limit)) + "\n"


_GRIFFE_MD = re.compile(r"`(?P<obj>[^`]*)`: \*(?P<kind>[^*`]*)\*(?:: (?P<rest>.*))?")


def _griffe_line(line: str) -> str:
    """One line of griffe's Markdown explanation, rebuilt: its object path and values come
    from the wheel, so only its shape (`obj`: *kind*: rest) is kept live."""
    m = _GRIFFE_MD.fullmatch(line)
    if not m:
        return escape_message(line)
    rest = f": {escape_message(m.group('rest'))}" if m.group("rest") is not None else ""
    return f"{code_span(m.group('obj'))}: *{escape_text(m.group('kind'))}*{rest}"


def _breakages_md(report: DriftReport, limit: int) -> list[str]:
    """griffe's API-wide breaking changes, whether or not the target calls them."""
    if not report.api_breakages:
        return []
    out = ["", f"<details><summary>griffe: {len(report.api_breakages)} breaking change(s) in "
               f"the public API of {escape_html(report.package)} (the table lists those the "
               "target calls)"
               "</summary>", ""]
    out += [f"- {_griffe_line(line)}" for line in report.api_breakages[:limit]]
    if len(report.api_breakages) > limit:
        out.append(f"- … and {len(report.api_breakages) - limit} more")
    return [*out, "", "</details>"]
