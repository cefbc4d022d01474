from __future__ import annotations

import cmarkgfm
import pytest

from bot.core.decisions import decide
from bot.core.drift import DriftReport, Finding
from bot.core.edits import Edit, EditSet, FileEdit, Mention
from bot.core.models import Change, Check, Plan, Rejection
from bot.core.prbody import (
    BODY_LIMIT,
    GateInfo,
    dashboard_body,
    failure_comment,
    pr_body,
    pr_title,
)

GATE = GateInfo("pinbump-gpu-gate.yml", {"sm90": ("self-hosted", "gpu", "sm90")},
                ("pinbump/gpu-gate/sm90",))


def plan(rejections: int = 2) -> Plan:
    p = Plan(group="flashinfer", lead="flashinfer-python", lead_current="0.6.8.post1",
             lead_target="0.6.13")
    p.changes = [Change("flashinfer-python", "0.6.8.post1", "0.6.13", "==0.6.8.post1",
                        "==0.6.13", (), "newest complete set"),
                 Change("nvidia-cutlass-dsl", "4.4.2", "4.8.1", "==4.4.2", "==4.8.1", (),
                        "newest compatible | with pipe")]
    p.rejected = [Rejection("flashinfer-python", f"0.7.{i}", "flashinfer-cubin 0.7.x is not "
                            "published") for i in range(rejections)]
    return p


def edits(n: int = 3) -> EditSet:
    es = [Edit(f"python/m{i}.py", i + 1, "assertion", '"0.6.8.post1",', '"0.6.13",')
          for i in range(n)]
    return EditSet([FileEdit("python/m.py", "a", "b", es)],
                   [Mention("docs/x.md", 1, "flashinfer-python", "0.6.8.post1", "old")])


def test_title() -> None:
    assert pr_title(plan()) == ("Bump flashinfer-python 0.6.8.post1 → 0.6.13 "
                                "(+ nvidia-cutlass-dsl)")


def test_body_renders_as_gfm_with_tables_links_and_drift() -> None:
    drift = DriftReport("flashinfer-python", "0.6.8.post1", "0.6.13", [Finding(
        "a.py", 3, "flashinfer.fp4_quantize", "breaking", "parameter `x` inserted", "f(a)",
        "f(x, a)", "positional argument 1 now binds to `x`")])
    body = pr_body(plan(), edits(), drift, GATE)
    html = cmarkgfm.github_flavored_markdown_to_html(body)
    assert html.count("<table>") == 4  # plan, breaking findings, every finding (collapsed)
    assert ('<a href="https://github.com/flashinfer-ai/flashinfer/releases/tag/v0.6.13">'
            "release notes</a>") in html
    assert "newest compatible \\| with pipe" in body  # a pipe cannot break the table
    assert html.index("breaking") < html.index("GPU gate")
    assert "<code>pinbump/gpu-gate/sm90</code>" in html
    assert "gh workflow run pinbump-gpu-gate.yml" in body


def test_long_lists_are_summarized_under_githubs_limit() -> None:
    body = pr_body(plan(rejections=20_000), edits(5_000), None, GATE)
    assert len(body) < BODY_LIMIT
    assert "… and 19975 more rejections" in body and "… and 4975 more edits" in body
    huge = pr_body(plan(), EditSet([FileEdit("f", "a", "b", [Edit(
        "f" * 70_000, 1, "doc", "a", "b")])], []), None, GATE)
    assert len(huge) <= BODY_LIMIT + 100 and huge.endswith("(truncated: the full report is "
                                                           "in the job summary)\n")


@pytest.mark.parametrize(("checks", "state", "failing", "waiting"), [
    ([], "pending", [], ["a", "b"]),
    ([Check("a", "success", "", "s"), Check("b", "pending", "", "s")], "pending", [], ["b"]),
    ([Check("a", "success", "", "s"), Check("b", "failure", "u", "s")], "failure", ["b"], []),
    ([Check("a", "success", "", "s"), Check("b", "success", "", "s"),
      Check("other", "failure", "", "s")], "success", [], []),
    ([Check("a", "failure", "", "s"), Check("a", "success", "", "s"),
      Check("b", "success", "", "s")], "failure", ["a"], []),  # the first entry is the latest
])
def test_decide(checks: list[Check], state: str, failing: list[str], waiting: list[str]) -> None:
    d = decide(["a", "b"], checks)
    assert (d.state, [c.name for c in d.failing], d.waiting) == (state, failing, waiting)


def test_failure_comment_names_jobs_and_sha() -> None:
    d = decide(["a"], [Check("a", "failure", "https://ci/1", "f" * 40)])
    text = failure_comment("f" * 40, d)
    assert text.startswith(f"<!-- pinbump: gate-failed {'f' * 40} -->")
    assert "- `a`: [details](https://ci/1)" in text


def test_dashboard() -> None:
    body = dashboard_body(plan(), "https://github.com/acme/serving/pull/7", "failure")
    assert "| `nvidia-cutlass-dsl` | `==4.4.2` | `==4.8.1` |" in body
    assert "Open bot PR: https://github.com/acme/serving/pull/7 — GPU gate: **failure**" in body
    assert "- `flashinfer-python` 0.7.0: flashinfer-cubin 0.7.x is not published" in body
    quiet = Plan(group="flashinfer", lead="flashinfer-python", lead_current="0.6.13",
                 lead_target="0.6.13")
    assert "**Up to date** (`flashinfer-python` 0.6.13)" in dashboard_body(quiet, None, None)


def test_failure_comment_carries_the_job_summaries() -> None:
    d = decide(["a"], [Check("a", "failure", "", "f" * 40)])
    text = failure_comment("f" * 40, d, [("gpu-gate-sm90", "| kernel | verdict |\n"
                                          "| --- | --- |\n| rmsnorm | regression |\n"),
                                         ("gpu-gate-multi", "x" * 100_000)])
    # GitHub keeps <details>/<summary>; cmarkgfm drops raw HTML unless told otherwise
    html = cmarkgfm.github_flavored_markdown_to_html(
        text, options=cmarkgfm.cmark.Options.CMARK_OPT_UNSAFE)
    assert "<summary>gpu-gate-sm90</summary>" in html
    # an artifact's text is shown verbatim, not rendered (issue 11: it is not trusted)
    assert '<pre lang="markdown"><code>| kernel | verdict |\n| --- | --- |\n' \
           "| rmsnorm | regression |\n</code></pre>" in html
    assert "… (truncated)" in text and len(text) <= BODY_LIMIT + 100
