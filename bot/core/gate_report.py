"""The GPU gate's report: JUnit summaries, observation diffs, old-vs-new timings, Markdown.
Pure: texts and numbers in, data and Markdown out."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.core.perfstats import Comparison
from bot.render.markdown import escape_text


@dataclass(frozen=True)
class JUnitSummary:
    tests: int
    failures: int
    errors: int
    skipped: int
    failed: tuple[str, ...] = ()
    skip_reasons: tuple[str, ...] = ()

    @property
    def passed(self) -> int:
        return self.tests - self.failures - self.errors - self.skipped

    @property
    def ok(self) -> bool:
        return self.failures == 0 and self.errors == 0 and self.tests > 0


def parse_junit(text: str) -> JUnitSummary:
    root = ET.fromstring(text)
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    failed, skips = [], []
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        for key in totals:
            totals[key] += int(suite.get(key, 0))
        for case in suite.iter("testcase"):
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            if case.find("failure") is not None or case.find("error") is not None:
                failed.append(name)
            skip = case.find("skipped")
            if skip is not None:
                skips.append(f"{name}: {skip.get('message', '')}")
    return JUnitSummary(totals["tests"], totals["failures"], totals["errors"],
                        totals["skipped"], tuple(failed), tuple(skips))


def diff_observations(baseline: Mapping[str, Any], candidate: Mapping[str, Any]
                      ) -> list[tuple[str, Any, Any]]:
    """Keys whose recorded behaviour differs (environment details left out)."""
    keys = sorted((set(baseline) | set(candidate)) - {"environment"})
    return [(k, baseline.get(k), candidate.get(k)) for k in keys
            if baseline.get(k) != candidate.get(k)]


@dataclass
class GateReport:
    baseline: str
    candidate: str
    device: str
    copy_bandwidth: float
    junit: dict[str, JUnitSummary] = field(default_factory=dict)  # label -> summary
    observation_diff: list[tuple[str, Any, Any]] = field(default_factory=list)
    perf: list[Comparison] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[Comparison]:
        return [c for c in self.perf if c.verdict == "regression"]

    @property
    def passed(self) -> bool:
        """The candidate's suite passed (when it ran) and no kernel regressed."""
        cand = self.junit.get("candidate")
        suite_ok = cand.ok if cand is not None else not self.junit
        return suite_ok and not self.regressions

    def as_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline, "candidate": self.candidate, "device": self.device,
            "copy_bandwidth_bytes_per_s": self.copy_bandwidth, "passed": self.passed,
            "tests": {label: {"tests": s.tests, "passed": s.passed, "failures": s.failures,
                              "errors": s.errors, "skipped": s.skipped,
                              "failed": list(s.failed), "skip_reasons": list(s.skip_reasons)}
                      for label, s in self.junit.items()},
            "observation_diff": [{"key": k, "baseline": b, "candidate": c}
                                 for k, b, c in self.observation_diff],
            "perf": [c.as_dict() for c in self.perf],
            "notes": self.notes,
        }


def _fmt(value: Any) -> str:
    text = str(value)
    return escape_text(text if len(text) <= 160 else text[:157] + "…")


def gate_markdown(report: GateReport, limit: int = 40) -> str:
    verdict = "passed" if report.passed else "FAILED"
    lines = [f"### GPU gate: flashinfer {report.baseline} → {report.candidate}: **{verdict}**",
             "", f"Device: {report.device}; measured copy bandwidth "
             f"{report.copy_bandwidth / 1e12:.2f} TB/s.", "",
             "| suite | tests | passed | failed | skipped |", "| --- | --- | --- | --- | --- |"]
    for label, s in report.junit.items():
        version = report.baseline if label == "baseline" else report.candidate
        lines.append(f"| {label} ({version}) | {s.tests} | {s.passed} | "
                     f"{s.failures + s.errors} | {s.skipped} |")
    cand = report.junit.get("candidate")
    if cand and cand.failed:
        lines += ["", "Failing on the candidate:"] + [f"- `{n}`" for n in cand.failed[:limit]]
    if report.observation_diff:
        lines += ["", "Behaviour that changed:", "", "| observation | baseline | candidate |",
                  "| --- | --- | --- |"]
        for k, b, c in report.observation_diff[:limit]:
            lines.append(f"| `{k}` | {_fmt(b)} | {_fmt(c)} |")
    if report.perf:
        lines += ["", "| kernel | baseline median | candidate median | ratio | 95% CI | verdict |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for c in report.perf:
            ci = "—" if c.verdict == "invalid" else f"{c.ci_low:.3f}–{c.ci_high:.3f}"
            lines.append(f"| {c.name} | {c.baseline_median * 1e6:.1f} µs | "
                         f"{c.candidate_median * 1e6:.1f} µs | {c.ratio:.3f} | {ci} | "
                         f"{c.verdict}{': ' + _fmt(c.note) if c.note else ''} |")
    if cand and cand.skip_reasons:
        reasons = sorted({r.split(": ", 1)[-1] for r in cand.skip_reasons})
        lines += ["", "Skipped on the candidate: " + "; ".join(_fmt(r) for r in reasons[:10])]
    lines += [f"- {n}" for n in report.notes]
    return "\n".join(lines) + "\n"


def summarize_skips(summaries: Sequence[JUnitSummary]) -> list[str]:
    return sorted({r.split(": ", 1)[-1] for s in summaries for r in s.skip_reasons})
