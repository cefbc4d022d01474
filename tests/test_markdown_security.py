"""Text from indexes, wheels and the target never becomes live Markdown (issue 11, item 6).

Hostile strings go through the real PR body, dashboard, failure comment and drift builders;
the result is rendered with cmarkgfm as GitHub does (GFM: table, autolink, tagfilter,
strikethrough; raw HTML let through, as GitHub keeps it for its own sanitizer) and the HTML is
checked: no element, link, image or mention that pinbump did not put there itself.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
from pathlib import Path

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from bot.cli import main
from bot.commands.context import PlanOptions
from bot.core.decisions import decide
from bot.core.drift import DriftReport, Finding
from bot.core.edits import Edit, EditSet, FileEdit, Mention
from bot.core.models import Change, Check, CheckState, Plan, Rejection
from bot.core.prbody import GateInfo, dashboard_body, failure_comment, pr_body
from bot.render.drift import drift_markdown
from bot.render.markdown import WORD_JOINER, code_block, code_span, escape_text
from planning import planned
from servers import StaticIndex
from targets import write_target

HOSTILE = [
    "@attacker please review",
    "cc @org/security-team",
    "[click](https://evil.example/phish)",
    "![pixel](https://evil.example/p.png)",
    "<img src=https://evil.example/x.png onerror=alert(1)>",
    "</details><h1>pwned</h1><details>",
    "</summary><script>alert(1)</script>",
    "<https://evil.example/auto>",
    "https://evil.example/bare and www.evil.example and mailto:a@evil.example",
    "victim@evil.example",
    "closes #1 and fixes owner/repo#2",
    "`` `x` ``<img src=a>`` ```",
    "a | b | c",
    "line one\n\n# heading\n- item\n<iframe src=x></iframe>",
    "&lt;img src=x&gt; &#64;attacker",
    "~~struck~~ **bold** _em_ $x^2$",
    "\\`<img src=esc>\\`",
    "```\n</details><h1>in fence</h1>\n```",
]
ALLOWED_TAGS = {"p", "table", "thead", "tbody", "tr", "th", "td", "code", "strong", "em", "a",
                "details", "summary", "ul", "li", "h3", "pre", "sub", "blockquote", "br",
                "input"}  # input: the dashboard's own task-list checkboxes (`- [ ]`)
OUR_LINKS = ("https://pypi.org/project/", "https://github.com/flashinfer-ai/flashinfer/releases/",
             "https://ci.example/", "https://github.com/acme/serving/pull/7",
             "https://github.com/acme/serving/blob/pinbump/flashinfer-0.6.11/src/")
BLOB = "https://github.com/acme/serving/blob/pinbump/flashinfer-0.6.11"
MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9]")
REFERENCE = re.compile(r"(?<![\w&])#\d")
GATE = GateInfo("pinbump-gpu-gate.yml", {"sm90": ("self-hosted", "gpu", "sm90")},
                ("pinbump/gpu-gate/sm90",))


class Scan(HTMLParser):
    """Tags, link targets, and text outside code/pre/a (where GitHub looks for mentions)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.hrefs: list[str] = []
        self.live_text: list[str] = []
        self.all_text: list[str] = []
        self._inert = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "a":
            self.hrefs.append(dict(attrs).get("href") or "")
        if tag in ("code", "pre", "a"):
            self._inert += 1

    def handle_endtag(self, tag: str) -> None:
        self.tags.append("/" + tag)
        if tag in ("code", "pre", "a"):
            self._inert -= 1

    def handle_data(self, data: str) -> None:
        self.all_text.append(data)
        if not self._inert:
            self.live_text.append(data)

    def handle_comment(self, data: str) -> None:
        self.tags.append("!--")


def render(markdown: str) -> Scan:
    html = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    scan = Scan()
    scan.feed(html)
    return scan


def assert_inert(markdown: str, benign: str) -> None:
    """``markdown`` (built from hostile text) has exactly the structure of ``benign`` (built
    from harmless text by the same builder), no foreign link and no mention."""
    hostile, expected = render(markdown), render(benign)
    assert set(t.lstrip("/") for t in hostile.tags) <= ALLOWED_TAGS | {"!--"}, hostile.tags
    assert [t for t in hostile.tags if t.lstrip("/") in ("details", "summary", "table", "h3")] \
        == [t for t in expected.tags if t.lstrip("/") in ("details", "summary", "table", "h3")]
    assert hostile.tags.count("!--") == expected.tags.count("!--")
    assert all(h.startswith(OUR_LINKS) for h in hostile.hrefs), hostile.hrefs
    live = " ".join(hostile.live_text)
    assert not MENTION.search(live), MENTION.search(live)
    assert not REFERENCE.search(live), REFERENCE.search(live)
    text = "".join(hostile.all_text)
    assert "pwned" in text and "attacker" in text  # shown, not dropped


def make_plan(words: list[str]) -> Plan:
    w = iter(words * 4)
    plan = Plan(group="flashinfer", lead="flashinfer-python", lead_current="0.6.8.post1",
                lead_target="0.6.11")
    plan.changes = [Change("flashinfer-python", "0.6.8.post1", "0.6.11", f"==0.6.8.post1 {next(w)}",
                           "==0.6.11", (), f"newest set; {next(w)}")]
    plan.unchanged = [("quack-kernels", f">=0.3 {next(w)}", next(w))]
    plan.rejected = [Rejection("flashinfer-python", next(w), f"yanked: {x}") for x in words]
    plan.not_verified = [("flashinfer-jit-cache", next(w))]
    return plan


def make_edits(words: list[str]) -> EditSet:
    edits = [Edit(f"docker/{x}", i + 1, "dockerfile-arg", f"ARG X={x}", f"ARG X={x}")
             for i, x in enumerate(words)]
    return EditSet([FileEdit("f", "a", "b", edits)],
                   [Mention(f"docs/{x}.md", 1, "flashinfer-python", "0.6.8.post1", x)
                    for x in words])


def make_drift(words: list[str]) -> DriftReport:
    findings = [Finding(f"src/{x}.py", 3, f"flashinfer.{x}", severity,
                        f"default of `x` changed: {x} -> `{x}`", f"f(a={x})", f"f(b, a={x})",
                        f"deprecated ({x})") for x in words
                for severity in ("breaking", "review", "unverifiable", "notice")]
    return DriftReport("flashinfer-python", "0.6.8.post1", "0.6.11", findings,
                       [f"`flashinfer.f({x})`: *Parameter default was changed*: `{x}` -> `1`"
                        for x in words] + [f"not griffe's shape: {x}" for x in words],
                       notes=[f"gate report: {x}" for x in words])


def bodies(words: list[str]) -> list[str]:
    plan, edits, drift = make_plan(words), make_edits(words), make_drift(words)
    name = " ".join(words)
    decision = decide([name], [Check(name, CheckState.FAILURE, "https://ci.example/1", "f" * 40)])
    return [pr_body(plan, edits, drift, GATE, notes=[f"ARG {x} left unchanged" for x in words],
                    blob_url=BLOB),
            dashboard_body(plan, "https://github.com/acme/serving/pull/7", "pending"),
            drift_markdown(drift),
            failure_comment("f" * 40, decision, [(name, "| a |\n| --- |\n| b |\n"
                                                  + "\n".join(words))])]


def test_hostile_text_renders_inert_in_every_builder() -> None:
    benign = [f"harmless{i} pwned attacker" for i in range(len(HOSTILE))]
    for hostile_md, benign_md in zip(bodies(HOSTILE), bodies(benign), strict=True):
        assert_inert(hostile_md, benign_md)


@pytest.mark.parametrize("text", HOSTILE)
def test_each_hostile_string_alone(text: str) -> None:
    for hostile_md, benign_md in zip(bodies([text, "pwned attacker"]),
                                     bodies(["harmless", "pwned attacker"]), strict=True):
        assert_inert(hostile_md, benign_md)


@pytest.mark.parametrize("text", HOSTILE)
def test_primitives_show_the_text_verbatim(text: str) -> None:
    flat = " ".join(text.split("\n"))  # one line: control characters become spaces
    span = render(f"x {code_span(text)} y")
    assert span.tags == ["p", "code", "/code", "/p"]
    assert "".join(span.all_text).strip("\n") == f"x {flat} y"
    escaped = render(f"x {escape_text(text)} y")
    assert escaped.tags == ["p", "/p"]
    shown = "".join(escaped.all_text).replace(WORD_JOINER, "").strip("\n")
    assert shown == f"x {flat} y"
    block = render("\n".join(code_block(text, "diff")))
    assert block.tags == ["pre", "code", "/code", "/pre"]
    assert "".join(block.all_text).strip("\n") == text


def test_mentions_get_a_word_joiner() -> None:
    assert escape_text("@bob and #12") == f"@{WORD_JOINER}bob and #{WORD_JOINER}12"
    assert code_span("@bob") == "`@bob`"  # GitHub looks for no mention inside code


OLD = datetime.now(timezone.utc) - timedelta(days=60)


def test_hostile_yank_reason_from_a_real_index(static: StaticIndex, tmp_path: Path) -> None:
    """A yank reason served by an index reaches the PR body and dashboard inert."""
    reason = "@attacker </details><h1>pwned</h1> ![x](https://evil.example/i.png)"
    for v in ("0.6.8.post1", "0.6.11", "0.6.12"):
        static.add("flashinfer-cubin", v, uploaded=OLD)
        static.add("flashinfer-python", v, uploaded=OLD,
                   yanked=reason if v == "0.6.12" else None)
    for name, v in (("nvidia-cutlass-dsl", "4.4.2"), ("quack-kernels", "0.3.0")):
        static.add(name, v, uploaded=OLD)
    static.publish()
    repo = write_target(tmp_path / "repo")
    with planned(PlanOptions(repo=repo, index_url=static.url, min_release_age=0,
                             no_cache=True)) as done:
        plan = done.plan
    assert ("flashinfer-python", "0.6.12", f"yanked: {reason}") in [
        (r.package, r.version, r.reason) for r in plan.rejected]
    benign = Plan(plan.group, plan.lead, plan.lead_current, plan.lead_target, plan.changes,
                  [Rejection("flashinfer-python", "0.6.12", "yanked: pwned attacker")],
                  plan.unchanged, plan.not_verified)
    no_edits = EditSet([], [])
    assert_inert(pr_body(plan, no_edits, None, GATE), pr_body(benign, no_edits, None, GATE))
    assert_inert(dashboard_body(plan, None, None), dashboard_body(benign, None, None))
    assert main(["plan", "--repo", str(repo), "--index-url", static.url, "--no-cache",
                 "--min-release-age", "0"]) == 0  # the terminal shows it too, as text


def gate_bodies(words: list[str]) -> list[str]:
    """The GPU gate's summary.md and bisect's PR comment, built from hostile text where it
    comes from outside pinbump: test names and failure texts of the run, module and cubin
    file names inside the wheels the index served, observations, timings' notes."""
    from bot.core.artifacts import account
    from bot.core.bisect import BisectResult, Step, StepResult
    from bot.core.gate_report import GateReport, JUnitSummary, gate_markdown
    from bot.core.perfstats import Comparison

    names = tuple(f"test_k.py::test_{i}[{x}]" for i, x in enumerate(words))
    cand = JUnitSummary(tests=len(words) + 1, failures=len(words), errors=0, skipped=1,
                        failed=names, skip_reasons=tuple(f"k.py:1: {x}" for x in words),
                        failure_texts=tuple((n, f"AssertionError: {x}")
                                            for n, x in zip(names, words, strict=True)))
    # flashinfer-jit-cache ships module ``x``, which was JIT-built instead; flashinfer-cubin
    # ships cubin ``x``, which was downloaded instead: each a failure naming the file
    site = [f"flashinfer_jit_cache/jit_cache/{x}/{x}.so" for x in words] + \
        [f"flashinfer_cubin/cubins/{x}.cubin" for x in words]
    workspace = [f".cache/flashinfer/0.6.11/90a/cached_ops/{x}/{x}.so" for x in words] + \
        [f".cache/flashinfer/cubins/{x}.cubin" for x in words]
    arts = account(["flashinfer-python", "flashinfer-jit-cache", "flashinfer-cubin"], site,
                   workspace, [])
    report = GateReport("0.6.8.post1", "0.6.11", "H200", 4.0e12,
                        junit={"baseline": JUnitSummary(2, 0, 0, 0), "candidate": cand},
                        observation_diff=[(f"obs.{i}", x, f"{x}!") for i, x in enumerate(words)],
                        perf=[Comparison(x, 1e-5, 2e-5, 2.0, 1.9, 2.1, 0.05, (5, 5),
                                         "regression", x) for x in words],
                        artifacts={"candidate": arts})
    over_budget = gate_markdown(report, text_budget=10)  # names listed without their text
    steps = [Step("0.6.9", 1, StepResult("FAIL", (), x)) for x in words]
    bisect = BisectResult("flashinfer-python", "0.6.8.post1", "0.6.11", ("test_k.py::test_a",),
                          "0.6.9", "0.6.8.post1", steps, "found", "found: " + " ".join(words))
    from bot.core.bisect import bisect_markdown
    return [gate_markdown(report), over_budget, bisect_markdown(bisect)]


def test_hostile_text_renders_inert_in_the_gate_summary_and_bisect_comment() -> None:
    benign = [f"harmless{i} pwned attacker" for i in range(len(HOSTILE))]
    for hostile_md, benign_md in zip(gate_bodies(HOSTILE), gate_bodies(benign), strict=True):
        assert_inert(hostile_md, benign_md)


@pytest.mark.parametrize("text", HOSTILE)
def test_each_hostile_string_alone_in_the_gate_summary(text: str) -> None:
    for hostile_md, benign_md in zip(gate_bodies([text, "pwned attacker"]),
                                     gate_bodies(["harmless", "pwned attacker"]), strict=True):
        assert_inert(hostile_md, benign_md)
