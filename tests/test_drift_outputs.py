"""Drift's outputs: the PR-body section with the noise collapsed (golden), GitHub Actions
workflow commands escaped by GitHub's rules, and SARIF valid against the official schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cmarkgfm
import jsonschema
import pytest
from test_prbody import GATE, edits, plan

from bot.core.drift import DriftReport, Finding, analyse
from bot.core.prbody import pr_body
from bot.render.drift import drift_markdown, sarif, workflow_commands
from drift_fixture import TARGET
from test_drift import apis  # noqa: F401  (the fixture)

HERE = Path(__file__).parent
SCHEMA = json.loads((HERE / "schemas" / "sarif-schema-2.1.0.json").read_text())
GOLDEN = HERE / "golden" / "prbody_drift.md"
FP4_OLD = "fp4_quantize(input, global_scale=None, enable_pdl=None)"
FP4_NEW = "fp4_quantize(input, global_scale=None, is_global_scale_inversed=False, " \
          "enable_pdl=None)"


def validate_sarif(doc: dict[str, Any]) -> None:
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    jsonschema.Draft4Validator(SCHEMA).validate(doc)


def noisy_report() -> DriftReport:
    """What the 0.6.8.post1 -> 0.6.11 bump looked like: one breaking call, two to review,
    fourteen calls of one function that bind as before, and a long API-wide list."""
    inserted = "parameter `is_global_scale_inversed` inserted before `enable_pdl`"
    findings = [Finding("python/sglang/srt/layers/quantization/fp4_utils.py", 16,
                        "flashinfer.fp4_quantize", "breaking", inserted, FP4_OLD, FP4_NEW,
                        "positional argument 3 bound to `enable_pdl` and now binds to "
                        "`is_global_scale_inversed`"),
                Finding("python/sglang/srt/layers/communicator.py", 88,
                        "flashinfer.comm.create_allreduce_fusion_workspace", "review",
                        "advisory for 0.6.10: behaviour changed", "", "",
                        "check: pass the sub-group (group=...)"),
                Finding("python/sglang/srt/layers/quantization/fp4_utils.py", 16,
                        "flashinfer.fp4_quantize", "review",
                        "advisory for 0.6.11: behaviour changed", FP4_OLD, FP4_NEW,
                        "check: global_scale must have shape [1] or [num_tokens]")]
    findings += [Finding(f"test/srt/test_fp4_{i:02}.py", 10 + i, "flashinfer.fp4_quantize",
                         "notice", inserted, FP4_OLD, FP4_NEW,
                         "the call binds as before; review whether it should pass the new "
                         "or changed parameters") for i in range(14)]
    report = DriftReport("flashinfer-python", "0.6.8.post1", "0.6.11", findings,
                         ["`flashinfer.fp4_quantize(is_global_scale_inversed)`: *Positional "
                          "parameter was moved*"], calls_scanned=40, files_scanned=126,
                         api_breakages_elsewhere=133)
    return report


def test_golden_pr_body_with_the_noise_collapsed() -> None:
    body = pr_body(plan(), edits(), noisy_report(), GATE,
                   blob_url="https://github.com/acme/serving/blob/pinbump/flashinfer-0.6.11")
    assert body == GOLDEN.read_text()
    section = body[body.index("### API drift"):body.index("### GPU gate")]
    visible = section.split("<details>")[0]
    assert visible.count("| breaking |") == 1 and visible.count("| review |") == 2
    assert "| notice |" not in visible  # 14 notices: one collapsed line, not 14 rows
    assert "14 notice(s) on 1 function(s)" in section
    assert "| `flashinfer.fp4_quantize` | parameter `is_global_scale_inversed` inserted " \
           "before `enable_pdl` | 14 |" in section
    assert "133 more in the modules it imports are left out" in section
    html = cmarkgfm.github_flavored_markdown_to_html(
        body, options=cmarkgfm.cmark.Options.CMARK_OPT_UNSAFE)
    assert html.index("Not ready: 1 call needs a hand fix") < html.index("pinbump proposes")


def test_every_finding_stays_in_the_collapsed_list() -> None:
    section = drift_markdown(noisy_report())
    everything = section[section.index("<summary>Every finding (17;"):]
    assert everything.count("| notice |") == 14 and everything.count("| breaking |") == 1


@pytest.mark.parametrize(("file", "title_part", "message_part"), [
    ("a,b:c.py", "file=a%2Cb%3Ac.py,", "x%25y%0Az"),
    ("plain.py", "file=plain.py,", "x%25y%0Az"),
])
def test_workflow_commands_escape_by_githubs_rules(file: str, title_part: str,
                                                   message_part: str) -> None:
    report = DriftReport("k", "1", "2", [Finding(file, 3, "k.f", "breaking", "x%y\nz", "",
                                                 "", "d\r", column=4)])
    [line] = workflow_commands(report, prefix="sub/")
    assert line.startswith("::error file=sub/" + title_part.removeprefix("file=")) or \
        line.startswith("::error " + title_part.replace("file=", "file=sub/"))
    assert ",line=3,col=5,title=pinbump drift%3A breaking%3A k.f::" in line
    assert line.endswith(f"::{message_part}: d%0D")


def test_sarif_is_valid_sarif_2_1_0(apis: tuple[Any, Any]) -> None:  # noqa: F811
    report = analyse({"src/t.py": TARGET}, {"kernelpkg"}, *apis, "kernelpkg")
    doc = sarif(report, "0.1.0", prefix="python/")
    validate_sarif(doc)
    run = doc["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [
        "pinbump-drift/breaking", "pinbump-drift/review", "pinbump-drift/unverifiable",
        "pinbump-drift/notice"]
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels == {"pinbump-drift/breaking": "error", "pinbump-drift/review": "warning",
                      "pinbump-drift/unverifiable": "warning", "pinbump-drift/notice": "note"}
    locations = [r["locations"][0]["physicalLocation"] for r in run["results"]]
    assert {loc["artifactLocation"]["uri"] for loc in locations} == {"python/src/t.py"}
    assert all(loc["region"]["startColumn"] >= 1 for loc in locations)
    # a document that breaks the schema is caught: the test is not vacuous
    broken = json.loads(json.dumps(doc))
    broken["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        validate_sarif(broken)
