"""Render a drift report: terminal, JSON, the PR-body section, GitHub Actions workflow
commands and SARIF 2.1.0. Pure: a report in, text or data out.

Findings carry text from outside pinbump (names and defaults read from wheels, source lines of
the target): in Markdown it only appears inside code spans or escaped.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from typing import Any
from urllib.parse import quote

from rich.console import Console
from rich.table import Table

from bot.core.drift import SEVERITY_ORDER, DriftReport, Finding
from bot.core.models import Severity
from bot.render.jsonout import to_json
from bot.render.markdown import (
    code_block,
    code_span,
    escape_html,
    escape_message,
    escape_text,
    link,
)
from bot.render.report import escape

SHOWN = (Severity.BREAKING, Severity.REVIEW, Severity.UNVERIFIABLE)  # one row each; notices
# are grouped


# -- JSON and terminal ---------------------------------------------------------------------
def drift_json(report: DriftReport) -> str:
    return to_json([f.as_dict() for f in report.findings])


def counts(report: DriftReport) -> dict[Severity, int]:
    return {s: len(report.of(s)) for s in SEVERITY_ORDER}


def headline(report: DriftReport) -> str:
    c = counts(report)
    groups = len(report.notice_groups())
    notices = c[Severity.NOTICE]
    return (f"{c[Severity.BREAKING]} breaking, {c[Severity.REVIEW]} review, "
            f"{c[Severity.UNVERIFIABLE]} unverifiable, "
            f"{notices} notice{'s' if notices != 1 else ''} on {groups} "
            f"function{'s' if groups != 1 else ''}")


def drift_text(report: DriftReport, width: int = 140) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=False, color_system=None,
                      highlight=False)
    console.print(escape(f"pinbump drift: {report.package} {report.old_version} -> "
                         f"{report.new_version}: {headline(report)} "
                         f"({report.calls_scanned} calls in {report.files_scanned} files)"))
    if report.findings:
        table = Table(show_lines=False)
        for col in ("severity", "where", "function", "change", "detail"):
            table.add_column(col, overflow="fold")
        for f in report.findings:
            if f.severity in SHOWN:
                table.add_row(*(escape(x) for x in (f.severity, f"{f.file}:{f.line}",
                                                    f.function, f.change, f.detail)))
        for g in report.notice_groups():
            table.add_row(*(escape(x) for x in (
                Severity.NOTICE, f"{len(g.where)} call{'s' if len(g.where) != 1 else ''}",
                g.function, g.change, ", ".join(g.where[:3]) +
                (f" (+{len(g.where) - 3} more)" if len(g.where) > 3 else ""))))
        console.print(table)
    for note in report.notes:
        console.print(escape(f"note: {note}"))
    if report.api_breakages:
        console.print(escape(f"griffe: {len(report.api_breakages)} breaking change(s) in the "
                             "public API the target reaches; first ones:"))
        for line in report.api_breakages[:10]:
            console.print(escape(f"  {line}"))
    return buf.getvalue()


# -- Markdown ------------------------------------------------------------------------------
def _where(f: Finding, blob_url: str | None) -> str:
    """``file:line``, linked to the line on GitHub when the URL is a plain https one."""
    label = f"{f.file}:{f.line}"
    if not blob_url:
        return code_span(label, in_table=True)
    url = f"{blob_url}/{quote(f.file)}"
    linked = link(label, url)
    tail = f"]({url})"
    if not linked.endswith(tail):  # not a safe URL: the label alone, inert
        return code_span(label, in_table=True)
    return f"{linked[:-1]}#L{int(f.line)})"  # the line anchor: digits only


def _row(f: Finding, blob_url: str | None = None) -> str:
    return (f"| {f.severity} | {_where(f, blob_url)} | {code_span(f.function, in_table=True)} | "
            f"{escape_message(f.change, in_table=True)} | "
            f"{escape_message(f.detail, in_table=True)} |")


_HEAD = ["| severity | where | function | change | detail |", "| --- | --- | --- | --- | --- |"]


def drift_markdown(report: DriftReport, limit: int = 50, blob_url: str | None = None) -> str:
    """The PR body's drift section: breaking, then review and unverifiable, one row each; the
    notices as a collapsed count grouped per function; every finding in a collapsed list."""
    lines = [f"### API drift: {code_span(report.package)} {escape_text(report.old_version)} → "
             f"{escape_text(report.new_version)}", ""]
    if not report.findings:
        lines.append(f"No call site of the target is affected ({report.calls_scanned} calls "
                     f"checked in {report.files_scanned} files).")
        return "\n".join(lines + _notes(report) + _breakages_md(report, limit)) + "\n"
    c = counts(report)
    lines.append(f"**{c[Severity.BREAKING]} breaking**, {c[Severity.REVIEW]} review, "
                 f"{c[Severity.UNVERIFIABLE]} unverifiable, {c[Severity.NOTICE]} notice(s) on "
                 f"{len(report.notice_groups())} "
                 f"function(s), collapsed below ({report.calls_scanned} calls checked in "
                 f"{report.files_scanned} files).")
    shown = [f for f in report.findings if f.severity in SHOWN]
    if shown:
        lines += ["", *_HEAD, *(_row(f, blob_url) for f in shown[:limit])]
        if len(shown) > limit:
            lines.append(f"| … | | | {len(shown) - limit} more findings | |")
    groups = report.notice_groups()
    if groups:
        lines += ["", f"<details><summary>{c[Severity.NOTICE]} notice(s) on {len(groups)} "
                      "function(s): calls that bind as before</summary>", "",
                  "| function | change | calls | where |", "| --- | --- | --- | --- |"]
        for g in groups[:limit]:
            where = ", ".join(code_span(w, in_table=True) for w in g.where[:5])
            more = f" (+{len(g.where) - 5} more)" if len(g.where) > 5 else ""
            lines.append(f"| {code_span(g.function, in_table=True)} | "
                         f"{escape_message(g.change, in_table=True)} | {len(g.where)} | "
                         f"{where}{more} |")
        lines += ["", "</details>"]
    lines += ["", f"<details><summary>Every finding ({len(report.findings)}; also "
                  "<code>pinbump drift --json</code>)</summary>", "", *_HEAD]
    lines += [_row(f) for f in report.findings[:limit * 4]]
    if len(report.findings) > limit * 4:
        lines.append(f"| … | | | {len(report.findings) - limit * 4} more findings | |")
    lines += ["", "</details>"]
    changed = sorted({(f.function, f.old_signature, f.new_signature) for f in shown
                      if f.new_signature and f.old_signature != f.new_signature})
    if changed:
        lines += ["", "<details><summary>Signatures</summary>", ""]
        for function, old, new in changed[:limit]:
            lines += [code_span(function), *code_block(f"- {old}\n+ {new}", "diff")]
        lines += ["", "</details>"]
    return "\n".join(lines + _notes(report) + _breakages_md(report, limit)) + "\n"


def _notes(report: DriftReport) -> list[str]:
    # a blank line first: right after "</details>" a line would still be raw HTML
    return ["", *(f"- note: {escape_message(n)}" for n in report.notes)] if report.notes else []


_GRIFFE_MD = re.compile(r"`(?P<obj>[^`]*)`: \*(?P<kind>[^*`]*)\*(?:: (?P<rest>.*))?")


def _griffe_line(line: str) -> str:
    """griffe's explanation rebuilt: only its shape (`obj`: *kind*: rest) stays live."""
    m = _GRIFFE_MD.fullmatch(line)
    if not m:
        return escape_message(line)
    rest = f": {escape_message(m.group('rest'))}" if m.group("rest") is not None else ""
    return f"{code_span(m.group('obj'))}: *{escape_text(m.group('kind'))}*{rest}"


def _breakages_md(report: DriftReport, limit: int) -> list[str]:
    """griffe's breaking changes on the public API the target reaches."""
    if not report.api_breakages:
        return []
    elsewhere = (f"; {report.api_breakages_elsewhere} more in the modules it imports are left out"
                 if report.api_breakages_elsewhere else "")
    out = ["", f"<details><summary>griffe: {len(report.api_breakages)} breaking change(s) in "
               f"the public API of {escape_html(report.package)} that the target reaches"
               f"{elsewhere}</summary>", ""]
    out += [f"- {_griffe_line(line)}" for line in report.api_breakages[:limit]]
    if len(report.api_breakages) > limit:
        out.append(f"- … and {len(report.api_breakages) - limit} more")
    return [*out, "", "</details>"]


def hand_fix_banner(report: DriftReport | None, blob_url: str | None = None,
                    limit: int = 20) -> list[str]:
    """The PR body's first lines when breaking calls remain that the codemod cannot fix."""
    if report is None or not report.unfixed:
        return []
    n = len(report.unfixed)
    out = [f"> [!CAUTION]\n> **Not ready: {n} call{'s' if n != 1 else ''} "
           f"need{'s' if n == 1 else ''} a hand fix** ({escape_text(report.package)} "
           f"{escape_text(report.new_version)} would break {'them' if n != 1 else 'it'}; "
           f"the `pinbump/drift` status fails until {'they are' if n != 1 else 'it is'} "
           "fixed):"]
    for f in report.unfixed[:limit]:
        out.append(f"> - {_where(f, blob_url)} {code_span(f.function)}: "
                   f"{escape_message(f.detail)}")
    if n > limit:
        out.append(f"> - … and {n - limit} more (see API drift below)")
    return [*out, ""]


# -- GitHub Actions workflow commands ------------------------------------------------------
def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


LEVELS = {Severity.BREAKING: "error", Severity.REVIEW: "warning",
          Severity.UNVERIFIABLE: "warning", Severity.NOTICE: "notice"}


def workflow_commands(report: DriftReport, prefix: str = "") -> list[str]:
    """``::error file=…,line=…,col=…,title=…::message`` lines (GitHub's escaping for workflow
    commands); notices once per function group, at its first call. ``prefix`` is the target's
    folder inside the repository."""
    out = []
    for f in report.findings:
        if f.severity in SHOWN:
            out.append(_command(LEVELS[f.severity], prefix + f.file, f.line, f.column + 1,
                                f"pinbump drift: {f.severity}: {f.function}",
                                f"{f.change}: {f.detail}"))
    for g in report.notice_groups():
        file, _, line = g.where[0].rpartition(":")
        out.append(_command("notice", prefix + file, int(line), 1,
                            f"pinbump drift: notice: {g.function}",
                            f"{g.change} ({len(g.where)} call(s))"))
    return out


def _command(level: str, file: str, line: int, col: int, title: str, message: str) -> str:
    return (f"::{level} file={_prop(file)},line={line},col={col},title={_prop(title)}::"
            f"{_data(message)}")


# -- SARIF 2.1.0 ---------------------------------------------------------------------------
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_RULES = {
    Severity.BREAKING: ("error", "A call or reference that fails or binds differently under "
                        "the new version"),
    Severity.REVIEW: ("warning", "A call that binds as before but may compute something else"),
    Severity.UNVERIFIABLE: ("warning",
                            "A call through *args/**kwargs whose binding cannot be read"),
    Severity.NOTICE: ("note", "A call that binds as before; the API around it changed"),
}


def sarif(report: DriftReport, version: str, prefix: str = "") -> dict[str, Any]:
    """The findings as one SARIF 2.1.0 run (for code scanning upload)."""
    ids = list(_RULES)
    rules = [{"id": f"pinbump-drift/{s}", "name": f"Drift{s.title()}",
              "shortDescription": {"text": text},
              "fullDescription": {"text": f"{text} (pinbump drift)."},
              "defaultConfiguration": {"level": level},
              "properties": {"tags": ["dependency", "api-drift"]}}
             for s, (level, text) in _RULES.items()]
    results = []
    for f in report.findings:
        key = f"{f.file}|{f.function}|{f.severity}|{f.change}"
        results.append({
            "ruleId": f"pinbump-drift/{f.severity}", "ruleIndex": ids.index(f.severity),
            "level": _RULES[f.severity][0],
            "message": {"text": f"{f.function}: {f.change}. {f.detail}"},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": quote(prefix + f.file), "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": f.line, "startColumn": f.column + 1}}}],
            "partialFingerprints": {
                "pinbumpDrift/v1": hashlib.sha256(key.encode()).hexdigest()[:32]},
            "properties": {"oldSignature": f.old_signature, "newSignature": f.new_signature},
        })
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "pinbump", "version": version,
                            "rules": rules}},
        "automationDetails": {"id": f"pinbump-drift/{report.package}/"},
        "results": results,
        "properties": {"package": report.package, "from": report.old_version,
                       "to": report.new_version},
    }]}


def sarif_json(report: DriftReport, version: str, prefix: str = "") -> str:
    return json.dumps(sarif(report, version, prefix), indent=2) + "\n"
