"""The GPU gate's report: JUnit summaries, observation diffs, old-vs-new timings, Markdown.
Pure: texts and numbers in, data and Markdown out."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.core.models import PerfVerdict
from bot.core.perfstats import Comparison
from bot.render.markdown import code_block, code_span, escape_html, escape_text

FAILURE_LINES = 60  # a failing test's text kept in gate.json and the summary: at most this
FAILURE_CHARS = 6000  # many lines and characters (a hang's stacks of every rank run long)


@dataclass(frozen=True)
class JUnitSummary:
    tests: int
    failures: int
    errors: int
    skipped: int
    failed: tuple[str, ...] = ()
    skip_reasons: tuple[str, ...] = ()
    failure_texts: tuple[tuple[str, str], ...] = ()  # (test, message + body, capped)

    @property
    def passed(self) -> int:
        return self.tests - self.failures - self.errors - self.skipped

    @property
    def executed(self) -> int:
        """Tests that ran (passed or failed), not skipped."""
        return self.tests - self.skipped

    @property
    def ok(self) -> bool:
        return self.failures == 0 and self.errors == 0 and self.tests > 0


def cap_text(text: str, lines: int = FAILURE_LINES, chars: int = FAILURE_CHARS) -> str:
    """The head of a long text, with a note of what was cut."""
    kept = text.splitlines()
    out = "\n".join(kept[:lines])
    if len(out) > chars:
        out = out[:chars]
    if len(out) < len(text.rstrip("\n")):
        out += f"\n… ({len(kept)} lines, {len(text)} characters in all; see the pytest log)"
    return out


def parse_junit(text: str) -> JUnitSummary:
    root = ET.fromstring(text)
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    failed, skips = [], []
    texts: list[tuple[str, str]] = []
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        for key in totals:
            totals[key] += int(suite.get(key, 0))
        for case in suite.iter("testcase"):
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            bad = case.find("failure")
            bad = bad if bad is not None else case.find("error")
            if bad is not None:
                failed.append(name)
                body = "\n".join(t for t in (bad.get("message", ""), (bad.text or "").strip())
                                 if t)
                texts.append((name, cap_text(body)))
            skip = case.find("skipped")
            if skip is not None:
                skips.append(f"{name}: {skip.get('message', '')}")
    return JUnitSummary(totals["tests"], totals["failures"], totals["errors"],
                        totals["skipped"], tuple(failed), tuple(skips), tuple(texts))


def _outcome(value: Any) -> Any:
    """What is compared of an observation: the ``outcome`` of one that carries run-to-run
    detail (``{"outcome": ..., "ranks": {...}}``: rounded errors, which ranks went wrong),
    else the whole value."""
    if isinstance(value, Mapping) and "outcome" in value:
        return value["outcome"]
    return value


def diff_observations(baseline: Mapping[str, Any], candidate: Mapping[str, Any]
                      ) -> list[tuple[str, Any, Any]]:
    """Keys whose recorded behaviour differs (environment details left out). Observations
    with an ``outcome`` differ only when their outcomes do; the rest is shown as detail."""
    keys = sorted((set(baseline) | set(candidate)) - {"environment"})
    return [(k, baseline.get(k), candidate.get(k)) for k in keys
            if _outcome(baseline.get(k)) != _outcome(candidate.get(k))]


@dataclass
class GateReport:
    baseline: str
    candidate: str
    device: str
    copy_bandwidth: float
    junit: dict[str, JUnitSummary] = field(default_factory=dict)  # label -> summary
    observation_diff: list[tuple[str, Any, Any]] = field(default_factory=list)
    perf: list[Comparison] = field(default_factory=list)
    min_tests: int = 1  # kernel tests the candidate must execute (not skip) to pass
    fused_table: str = ""  # the fused-vs-unfused tables (Markdown pinbump wrote), if timed
    artifacts: dict[str, Any] = field(default_factory=dict)  # label -> ArtifactReport

    @property
    def regressions(self) -> list[Comparison]:
        return [c for c in self.perf if c.verdict == PerfVerdict.REGRESSION]

    @property
    def too_few_tests(self) -> str:
        """Why the candidate's suite does not count (it skipped what it should test), or ""."""
        cand = self.junit.get("candidate")
        if cand is None or cand.executed >= self.min_tests:
            return ""
        return (f"{cand.executed} kernel test(s) executed on the candidate ({cand.tests} "
                f"selected, {cand.skipped} skipped), fewer than the job's minimum of "
                f"{self.min_tests}: a gate that tested nothing does not pass")

    @property
    def artifact_failures(self) -> list[str]:
        return [f for a in self.artifacts.values() for f in a.failures]

    @property
    def passed(self) -> bool:
        """The candidate's suite passed (when it ran) and executed at least ``min_tests``
        tests, no kernel regressed and nothing deployed prebuilt was JIT-built instead."""
        cand = self.junit.get("candidate")
        suite_ok = cand.ok and not self.too_few_tests if cand is not None else not self.junit
        return suite_ok and not self.regressions and not self.artifact_failures

    def as_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline, "candidate": self.candidate, "device": self.device,
            "copy_bandwidth_bytes_per_s": self.copy_bandwidth, "passed": self.passed,
            "min_tests": self.min_tests, "too_few_tests": self.too_few_tests,
            "tests": {label: {"tests": s.tests, "passed": s.passed, "failures": s.failures,
                              "errors": s.errors, "skipped": s.skipped,
                              "executed": s.executed, "failed": list(s.failed),
                              "failures_text": [{"test": t, "text": x}
                                                for t, x in s.failure_texts],
                              "skip_reasons": list(s.skip_reasons)}
                      for label, s in self.junit.items()},
            "observation_diff": [{"key": k, "baseline": b, "candidate": c}
                                 for k, b, c in self.observation_diff],
            "perf": [c.as_dict() for c in self.perf],
            "artifacts": {label: a.as_dict() for label, a in self.artifacts.items()},
        }


def _fmt(value: Any) -> str:
    text = str(value)
    return escape_text(text if len(text) <= 160 else text[:157] + "…")


def _failure_details(summary: JUnitSummary, limit: int, budget: int) -> list[str]:
    """One ``<details>`` block per failing test with its text (a hang's stacks), fenced, until
    ``budget`` characters are spent (the job summary and PR comments have limits)."""
    lines: list[str] = []
    spent = 0
    texts = dict(summary.failure_texts)
    for name in summary.failed[:limit]:
        block = ["", f"<details><summary>{escape_html(name)}</summary>", "",
                 *code_block(texts.get(name, "") or "(no failure text)"), "", "</details>"]
        size = sum(len(x) + 1 for x in block)
        if spent + size > budget:
            lines += ["", f"- {code_span(name)} (text left out: the summary's size limit; see "
                      "gate.json)"]
            continue
        spent += size
        lines += block
    return lines


def gate_markdown(report: GateReport, limit: int = 40, text_budget: int = 40_000) -> str:
    verdict = "passed" if report.passed else "FAILED"
    device = f"Device: {escape_text(report.device) or 'unknown'}"
    if report.copy_bandwidth > 0:  # measured only when the timing ran
        device += f"; measured copy bandwidth {report.copy_bandwidth / 1e12:.2f} TB/s"
    lines = [f"### GPU gate: flashinfer {report.baseline} → {report.candidate}: **{verdict}**",
             "", device + ".", "",
             "| suite | tests | passed | failed | skipped |", "| --- | --- | --- | --- | --- |"]
    for label, s in report.junit.items():
        version = report.baseline if label == "baseline" else report.candidate
        lines.append(f"| {label} ({version}) | {s.tests} | {s.passed} | "
                     f"{s.failures + s.errors} | {s.skipped} |")
    if report.too_few_tests:
        lines += ["", f"**Not enough tested:** {report.too_few_tests}."]
    cand = report.junit.get("candidate")
    if cand and cand.failed:
        lines += ["", "Failing on the candidate:"]
        lines += _failure_details(cand, limit, text_budget)
    for label, art in report.artifacts.items():
        lines += ["", *art.markdown(label)]
    if report.observation_diff:
        lines += ["", "Behaviour that changed:", "", "| observation | baseline | candidate |",
                  "| --- | --- | --- |"]
        for k, b, c in report.observation_diff[:limit]:
            lines.append(f"| {code_span(k, in_table=True)} | {_fmt(b)} | {_fmt(c)} |")
    if report.perf:
        lines += ["", "| kernel | baseline median | candidate median | ratio | 95% CI | verdict |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for c in report.perf:
            ci = "—" if c.verdict == PerfVerdict.INVALID else f"{c.ci_low:.3f}–{c.ci_high:.3f}"
            lines.append(f"| {escape_text(c.name)} | {c.baseline_median * 1e6:.1f} µs | "
                         f"{c.candidate_median * 1e6:.1f} µs | {c.ratio:.3f} | {ci} | "
                         f"{c.verdict}{': ' + _fmt(c.note) if c.note else ''} |")
    if report.fused_table:
        lines += ["", report.fused_table.rstrip("\n")]
    if cand and cand.skip_reasons:
        reasons = sorted({r.split(": ", 1)[-1] for r in cand.skip_reasons})
        lines += ["", "Skipped on the candidate: " + "; ".join(_fmt(r) for r in reasons[:10])]
    return "\n".join(lines) + "\n"
