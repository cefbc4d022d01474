from __future__ import annotations

import random
from pathlib import Path

import pytest

from bot.cli import main
from bot.core.gate_report import GateReport, diff_observations, gate_markdown, parse_junit
from bot.core.perfstats import compare, invalid

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="gpu-candidate"
 errors="0" failures="1" skipped="2" tests="5" time="12.0">
<testcase classname="test_fp4" name="test_nvfp4_matches_reference[swizzled]">
 <skipped type="pytest.skip" message="unsupported on sm_90: fp4 output is all zero"/></testcase>
<testcase classname="test_allreduce" name="test_residual_rmsnorm_all_gpus[bfloat16]">
 <skipped type="pytest.skip" message="needs 2 GPUs of one host, this host has 1"/></testcase>
<testcase classname="test_contracts" name="test_group"><failure message="lacks group"/>
</testcase>
<testcase classname="test_contracts" name="test_a"/><testcase classname="test_b" name="c"/>
</testsuite></testsuites>"""


def test_parse_junit() -> None:
    s = parse_junit(JUNIT)
    assert (s.tests, s.failures, s.errors, s.skipped, s.passed) == (5, 1, 0, 2, 2)
    assert s.failed == ("test_contracts::test_group",)
    assert not s.ok
    assert "unsupported on sm_90: fp4 output is all zero" in s.skip_reasons[0]


def test_observation_diff_shows_changed_behaviour() -> None:
    base = {"environment": {"flashinfer": "0.6.8.post1"}, "fp4_quantize.global_scale[4]":
            "accepted", "same": 1}
    cand = {"environment": {"flashinfer": "0.6.11"}, "fp4_quantize.global_scale[4]":
            "rejected: globalScale should have shape [1] or [num_tokens]", "same": 1,
            "new": True}
    assert diff_observations(base, cand) == [
        ("fp4_quantize.global_scale[4]", "accepted",
         "rejected: globalScale should have shape [1] or [num_tokens]"),
        ("new", None, True)]


def test_markdown_and_verdict() -> None:
    rng = random.Random(0)
    base = [1e-4 * rng.uniform(0.99, 1.01) for _ in range(40)]
    slow = [t * 1.2 for t in base]
    report = GateReport("0.6.8.post1", "0.6.11", "NVIDIA H200", 4.3e12)
    report.junit["candidate"] = parse_junit(JUNIT.replace('failures="1"', 'failures="0"')
                                            .replace('<failure message="lacks group"/>', ""))
    report.perf.append(compare("rmsnorm", base, base[::-1]))
    report.perf.append(invalid("fp4_quantize", base, base, 0.05, "8.20 TB/s implied"))
    assert report.passed
    no_timing = GateReport("0.6.8.post1", "0.6.11", "NVIDIA H200", 0.0)
    assert "Device: NVIDIA H200.\n" in gate_markdown(no_timing)  # --no-perf: no bandwidth
    md = gate_markdown(report)
    assert "Device: NVIDIA H200; measured copy bandwidth 4.30 TB/s." in md
    assert md.startswith("### GPU gate: flashinfer 0.6.8.post1 → 0.6.11: **passed**")
    assert "| fp4_quantize |" in md and "invalid: 8.20 TB/s implied" in md
    assert "unsupported on sm_90: fp4 output is all zero" in md
    report.perf.append(compare("fused", base, slow))
    assert not report.passed and report.regressions[0].name == "fused"
    assert report.as_dict()["passed"] is False


def test_gpu_gate_rejects_a_site_without_flashinfer(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "new" / "flashinfer").mkdir(parents=True)
    code = main(["gpu-gate", "--baseline", str(tmp_path / "old"), "--candidate",
                 str(tmp_path / "new"), "--out", str(tmp_path / "out")])
    assert code == 2
    assert capsys.readouterr().err == (f"pinbump: error: --baseline {tmp_path / 'old'}: no "
                                       "flashinfer package there (install one with pip "
                                       "install --target)\n")


def test_site_version(tmp_path: Path) -> None:
    from bot.commands.gpu_gate import site_version

    (tmp_path / "flashinfer_python-0.6.8.post1.dist-info").mkdir()
    assert site_version(tmp_path) == "0.6.8.post1"


def test_invalid_comparison_serializes_without_nan() -> None:
    import json

    item = invalid("k", [1.0] * 30, [1.0] * 30, 0.05, "too fast").as_dict()
    assert item["ci95"] is None
    json.dumps(item, allow_nan=False)


HANG = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="gpu-candidate"
 errors="0" failures="1" skipped="0" tests="2" time="300.0">
<testcase classname="test_allreduce" name="test_residual_rmsnorm_all_gpus[bfloat16-auto]">
<failure message="harness.RanksHung: ranks [0, 1] did not finish within 300 s (hang?)">
--- rank 1: hung during body ---
Python stacks (faulthandler):
  File "allreduce_cases.py", line 80 in fused ``` &lt;/details&gt;&lt;img src=x&gt; @someone
{body}</failure></testcase>
<testcase classname="test_contracts" name="test_a"/>
</testsuite></testsuites>"""


def test_a_hangs_stacks_reach_gate_json_and_the_summary_escaped_and_capped() -> None:
    many = "\n".join(f"  File \"x.py\", line {i} in f" for i in range(500))
    s = parse_junit(HANG.replace("{body}", many))
    [(name, text)] = s.failure_texts
    assert name == "test_allreduce::test_residual_rmsnorm_all_gpus[bfloat16-auto]"
    assert text.startswith("harness.RanksHung: ranks [0, 1] did not finish within 300 s")
    assert "--- rank 1: hung during body ---" in text and "Python stacks" in text
    assert len(text.splitlines()) == 61 and "lines" in text.splitlines()[-1]  # capped
    report = GateReport("0.6.8.post1", "0.6.10", "2x H200", 4e12)
    report.junit["candidate"] = s
    assert report.as_dict()["tests"]["candidate"]["failures_text"] == [
        {"test": name, "text": text}]
    import cmarkgfm
    from cmarkgfm.cmark import Options

    md = gate_markdown(report)
    assert "<details><summary>test_allreduce::test_residual_rmsnorm_all_gpus[bfloat16-auto]" \
           "</summary>" in md
    html = cmarkgfm.github_flavored_markdown_to_html(md, options=Options.CMARK_OPT_UNSAFE)
    assert "<img" not in html and html.count("</details>") == 1  # the stack stays in its fence
    assert "--- rank 1: hung during body ---" in html
    # past the size budget a test keeps its name, not its text
    small = gate_markdown(report, text_budget=100)
    assert "text left out: the summary's size limit" in small and "Python stacks" not in small


def test_observations_with_an_outcome_diff_by_outcome_only() -> None:
    key = "allreduce_fusion.subgroup.tp2.world4.oneshot.without_group"
    base = {key: {"outcome": "wrong", "ranks": {"0": 0.51, "1": 0.49}},
            "plain": {"a": 1}}
    noise = {key: {"outcome": "wrong", "ranks": {"0": 0.5, "2": 0.47}}, "plain": {"a": 1}}
    assert diff_observations(base, noise) == []
    fixed = {key: {"outcome": "ok", "ranks": {}}, "plain": {"a": 2}}
    assert [k for k, _, _ in diff_observations(base, fixed)] == [key, "plain"]
