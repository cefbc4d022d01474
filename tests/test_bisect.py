"""pinbump bisect: the pure bisection driven by a scripted fake gate (planted first-bad, flaky
steps re-run, all good, all bad, no answer), and the command end to end on the CPU: real pip
installs of stub FlashInfer versions from a loopback index, the stub suite run per step
through the gate's machinery, the verdict posted on the bot PR in the GitHub emulator."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import tomlkit
from packaging.version import Version

from bot.cli import main
from bot.core.bisect import (
    ERROR,
    FAIL,
    PASS,
    StepResult,
    between,
    bisect,
    bisect_markdown,
    failing_test_ids,
    read_gate_result,
)
from bot.errors import InputError
from github_emulator import GitHubEmulator
from gpu_stubs import flashinfer_wheels, simple_index, stub_suite
from servers import serve, static_index

VERSIONS = ["0.6.8.post1", "0.6.9", "0.6.10", "0.6.10.post1", "0.6.11", "0.6.12", "0.6.13"]
TEST = "test_allreduce::test_residual_rmsnorm_all_gpus[bfloat16-auto]"


class ScriptedGate:
    """Answers per version: a list of outcomes consumed one run at a time (the last repeats)."""

    def __init__(self, script: dict[str, list[str]]) -> None:
        self.script = script
        self.asked: list[str] = []

    def __call__(self, version: str) -> StepResult:
        self.asked.append(version)
        outcomes = self.script[version]
        outcome = outcomes.pop(0) if len(outcomes) > 1 else outcomes[0]
        if outcome == FAIL:
            return StepResult(FAIL, (TEST,), "ranks [0, 1] did not finish within 300 s")
        return StepResult(outcome, (), "runner lost" if outcome == ERROR else "")


def first_bad_from(first_bad: str) -> dict[str, list[str]]:
    bad = VERSIONS.index(first_bad)
    return {v: [FAIL if i >= bad else PASS] for i, v in enumerate(VERSIONS)}


def run(gate: Callable[[str], StepResult], **kw: int):
    return bisect([Version(v) for v in VERSIONS], gate, package="flashinfer-python",
                  tests=(TEST,), **kw)


@pytest.mark.parametrize("planted", VERSIONS[1:])
def test_a_planted_first_bad_version_is_found_in_log_steps(planted: str) -> None:
    gate = ScriptedGate(first_bad_from(planted))
    result = run(gate)
    assert result.verdict == "found"
    assert result.first_bad == planted
    assert result.last_good == VERSIONS[VERSIONS.index(planted) - 1]
    # both ends verified, then at most ceil(log2(6)) = 3 probes, plus the confirmation
    assert gate.asked[:2] == ["0.6.13", "0.6.8.post1"]
    assert len(gate.asked) <= 2 + 3 + 1
    assert {s.version for s in result.evidence} == {result.first_bad, result.last_good}
    assert all(s.result.outcome == FAIL for s in result.evidence
               if s.version == result.first_bad)


def test_a_step_without_an_answer_is_re_run() -> None:
    script = first_bad_from("0.6.10.post1")
    script["0.6.10.post1"] = [ERROR, FAIL]  # the runner was lost on the first run
    gate = ScriptedGate(script)
    result = run(gate)
    assert result.first_bad == "0.6.10.post1"
    runs = [(s.version, s.attempt, s.result.outcome) for s in result.steps
            if s.version == "0.6.10.post1"]
    assert runs[:2] == [("0.6.10.post1", 1, ERROR), ("0.6.10.post1", 2, FAIL)]


def test_a_bad_version_that_passed_once_is_caught_by_the_confirmation() -> None:
    """0.6.10 hangs only sometimes: it passes its first run, so the boundary first looks like
    0.6.10 | 0.6.10.post1; the confirmation run of 0.6.10 fails and the bisection goes on
    below it."""
    script = first_bad_from("0.6.10")
    script["0.6.10"] = [PASS, FAIL]
    gate = ScriptedGate(script)
    result = run(gate)
    assert (result.first_bad, result.last_good) == ("0.6.10", "0.6.9")
    assert [s.result.outcome for s in result.steps if s.version == "0.6.10"][:2] == [PASS, FAIL]


def test_all_good_all_bad_and_no_answer() -> None:
    all_good = run(ScriptedGate({v: [PASS] for v in VERSIONS}))
    assert all_good.verdict == "bad end passes" and all_good.first_bad is None
    assert "0.6.13 passes the named tests here" in all_good.message
    all_bad = ScriptedGate({v: [FAIL] for v in VERSIONS})
    result = run(all_bad)
    assert result.verdict == "good end fails" and all_bad.asked == ["0.6.13", "0.6.8.post1"]
    lost = ScriptedGate({v: [ERROR] for v in VERSIONS})
    result = run(lost, retries=2)
    assert result.verdict == "no answer" and lost.asked == ["0.6.13"] * 3
    assert "no answer in 3 runs (runner lost)" in result.message


def test_between_and_prereleases() -> None:
    published = [Version(v) for v in (*VERSIONS, "0.6.12rc1", "0.7.0.dev20261128", "0.5.0")]
    assert [str(v) for v in between(published, Version("0.6.9"), Version("0.6.12"))] == [
        "0.6.9", "0.6.10", "0.6.10.post1", "0.6.11", "0.6.12"]
    assert "0.6.12rc1" in [str(v) for v in between(published, Version("0.6.11"),
                                                   Version("0.7.0"), prereleases=True)]
    with pytest.raises(InputError, match="must be older than the bad version"):
        between(published, Version("0.6.11"), Version("0.6.9"))


@pytest.mark.parametrize("bad", ["-k", "--pyargs=os", "../../etc/passwd::x", "test_a",
                                 "test_a::b; rm -rf /", "test_a::`x`", ""])
def test_failing_test_ids_from_a_gate_result_are_checked(bad: str) -> None:
    with pytest.raises(InputError, match="is not a test id"):
        failing_test_ids([bad], "gate.json")


def test_the_comment_carries_the_evidence_and_a_known_bad_entry_that_parses() -> None:
    result = run(ScriptedGate(first_bad_from("0.6.10")))
    md = bisect_markdown(result)
    assert "first bad version of flashinfer-python: 0.6.10 (last good: 0.6.9" in md
    entry = md.split("```toml\n", 1)[1].split("```", 1)[0]
    parsed = tomlkit.parse(entry).unwrap()
    reason = parsed["known-bad"]["flashinfer-python"]["0.6.10"]
    assert reason.startswith(f"gpu gate: {TEST} fails from this version on")


# ------------------------------------------------------------------- end to end on the CPU

SUITE = '''\
import pytest

import flashinfer


@pytest.mark.gpu
def test_norm():
    assert flashinfer.__version__ not in ("0.6.10", "0.6.10.post1", "0.6.11"), "norm broke"


@pytest.mark.gpu
def test_other():
    pass
'''
TOKEN = "ghp_bisecttoken_0123456789abcdef"


def test_bisect_end_to_end_installs_each_step_and_comments_on_the_bot_pr(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    versions = ["0.6.8.post1", "0.6.9", "0.6.10", "0.6.10.post1", "0.6.11"]
    emu = GitHubEmulator("acme", "serving", tmp_path, TOKEN)
    serve(emu)
    pr = emu.new_item(True, title="Bump flashinfer to 0.6.11", head="pinbump/flashinfer-0.6.11",
                      base="main")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    try:
        with static_index(tmp_path / "srv") as srv:
            wheels = [flashinfer_wheels(tmp_path / "build" / v, v)[0] for v in versions]
            simple_index(srv.root / "simple", f"{srv.base}/simple", wheels)
            repo = tmp_path / "target"
            repo.mkdir()
            (repo / "pyproject.toml").write_text(
                '[project]\nname = "t"\nversion = "1"\n'
                'dependencies = ["flashinfer-python==0.6.8.post1"]\n')
            gate = tmp_path / "gate.json"
            gate.write_text(json.dumps({"candidate": "0.6.11", "tests": {"candidate": {
                "failed": ["test_kernels::test_norm"]}}}))
            out = tmp_path / "out"
            code = main(["bisect", "--repo", str(repo), "--index-url", f"{srv.base}/simple",
                         "--no-cache", "--gate-result", str(gate), "--out", str(out),
                         "--tests", str(stub_suite(tmp_path / "suite", SUITE)),
                         "--comment-pr", str(pr), "--github-repo", "acme/serving",
                         "--api-url", emu.url, "--write-interval", "0"])
    finally:
        emu.shutdown()
        emu.server_close()
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.splitlines()[0].startswith(
        "first bad version of flashinfer-python: 0.6.10 (last good: 0.6.9;")
    result = json.loads((out / "bisect.json").read_text())
    assert (result["first_bad"], result["last_good"]) == ("0.6.10", "0.6.9")
    # only the failing test ran per step, against the version's own install
    junit = (out / "step-01-0.6.11" / "junit-candidate.xml").read_text()
    assert "test_norm" in junit and "test_other" not in junit
    assert (out / "sites" / "0.6.10" / "flashinfer_python-0.6.10.dist-info").is_dir()
    [comment] = emu.state.comments[pr]
    assert "[known-bad.flashinfer-python]" in comment["body"]
    assert '"0.6.10" = "gpu gate: test_kernels::test_norm fails' in comment["body"]
    assert emu.violations == []


def test_a_gate_result_that_is_not_one_is_refused(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    gate = tmp_path / "gate.json"
    gate.write_text(json.dumps({"candidate": "0.6.11", "tests": {"candidate": {
        "failed": ["--pyargs"]}}}))
    assert main(["bisect", "--gate-result", str(gate), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pinbump: error: --gate-result {gate}: '--pyargs' is not a test id")
    assert err.count("\n") == 1 and not (tmp_path / "o").exists()
    with pytest.raises(InputError, match=r"no tests\.candidate\.failed"):
        read_gate_result("{}", "g")
