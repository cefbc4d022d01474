"""apply keyword-binds what would misbind; drift compares from the pin on the base branch, so
apply-then-drift still reports base -> target; equal versions are an error."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bot.cli import main
from drift_fixture import EXPECTED
from servers import PypiServer
from test_drift import GOLDEN, TARGET, publish, target_repo


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=dev", "-c", "user.email=d@x.invalid",
                           *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def repo(pypi: PypiServer, tmp_path: Path) -> Path:
    """A git checkout pinning kernelpkg 1.0, committed; the index has 1.0 and 2.0."""
    publish(pypi)
    root = target_repo(tmp_path / "repo")
    git(root, "init", "--quiet", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "init")
    return root


def test_apply_fixes_by_default_then_drift_reports_base_to_target(
        repo: Path, pypi: PypiServer, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--repo", str(repo), "--index-url", pypi.url, "--cache-dir",
              str(tmp_path / "cache")]
    assert main(["apply", *common, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    kinds = [(e["file"], e["line"], e["kind"]) for e in doc["edits"]]
    assert ("pyproject.toml", 4, "requirement") in kinds
    assert ("src/model.py", 16, "codemod") in kinds  # the one call a keyword form fixes
    codemod = next(e for e in doc["edits"] if e["kind"] == "codemod")
    assert codemod["after"].endswith('enable_pdl=pdl, backend="cuda")  # eight positional '
                                     "arguments")
    assert (repo / "src" / "model.py").read_text() == (GOLDEN / "drift_fixed.py").read_text()
    assert "needs a hand fix" in " ".join(doc["notes"])  # the rest is listed, not touched
    assert 'kernelpkg==2.0' in (repo / "pyproject.toml").read_text()

    # the working tree now pins 2.0; the base (HEAD: no origin) still pins 1.0
    assert main(["drift", *common, "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)
    lines = {(f["line"], f["severity"]) for f in findings}
    assert (18, "breaking") in lines and (16, "notice") in lines  # fixed: binds as before
    assert lines == {(e[0], e[2]) for e in EXPECTED if e[0] != 16} | {(16, "notice")}
    assert main(["drift", *common]) == 1
    assert "pinbump drift: kernelpkg 1.0 -> 2.0:" in capsys.readouterr().out

    # committed: the base pin is the target, and saying so is an error, not "0 breaking"
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "bump")
    assert main(["drift", *common]) == 2
    err = capsys.readouterr().err
    assert err == ("pinbump: error: kernelpkg 2.0 (the pin on HEAD) is also the version to "
                   "compare to: nothing to compare (pass --from/--to, or bump first)\n")


def test_origin_base_wins_over_head(repo: Path, pypi: PypiServer, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "--quiet", "origin", "main")
    git(repo, "fetch", "--quiet", "origin")
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("kernelpkg==1.0", "kernelpkg==2.0"))
    git(repo, "commit", "--quiet", "-am", "bumped locally")  # HEAD pins 2.0, origin/main 1.0
    assert main(["drift", "--repo", str(repo), "--index-url", pypi.url, "--no-cache",
                 "--base", "main"]) == 1
    assert "pinbump drift: kernelpkg 1.0 -> 2.0:" in capsys.readouterr().out


def test_no_fix_leaves_calls_alone(repo: Path, pypi: PypiServer,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["apply", "--repo", str(repo), "--index-url", pypi.url, "--no-cache",
                 "--no-fix"]) == 0
    assert (repo / "src" / "model.py").read_text() == TARGET
    assert "kernelpkg==2.0" in (repo / "pyproject.toml").read_text()
    assert "[codemod]" not in capsys.readouterr().out


def test_equal_versions_given_are_an_error(repo: Path, pypi: PypiServer,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["drift", "--repo", str(repo), "--index-url", pypi.url, "--no-cache",
                 "--from", "2.0", "--to", "2.0"]) == 2
    assert "kernelpkg 2.0 (--from) is also the version to compare to" in \
        capsys.readouterr().err


def test_sarif_annotations_and_job_summary_in_github_actions(
        repo: Path, pypi: PypiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from test_drift_outputs import validate_sarif

    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    sarif = tmp_path / "out" / "drift.sarif"
    sarif.parent.mkdir()
    assert main(["drift", "--repo", str(repo), "--index-url", pypi.url, "--no-cache",
                 "--sarif", str(sarif)]) == 1
    out = capsys.readouterr().out
    commands = [line for line in out.splitlines() if line.startswith("::")]
    assert ("::error file=src/model.py,line=18,col=9,title=pinbump drift%3A breaking%3A "
            "kernelpkg.rmsnorm::parameter `eps` renamed to `epsilon`: keyword `eps` no longer "
            "exists") in commands
    assert sum(c.startswith("::error ") for c in commands) == 6
    # 4 notices, one annotation per function group: create_workspace's two calls share one
    assert sum(c.startswith("::notice ") for c in commands) == 3
    text = summary.read_text()
    assert text.startswith("earlier step\n### API drift: `kernelpkg` 1.0 → 2.0")
    doc = json.loads(sarif.read_text())
    validate_sarif(doc)
    results = doc["runs"][0]["results"]
    assert len(results) == len(EXPECTED)
    first = results[0]
    assert first["ruleId"] == "pinbump-drift/breaking" and first["level"] == "error"
    assert first["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == \
        "src/model.py"


def test_a_gate_report_of_other_versions_is_noted_not_used(
        repo: Path, pypi: PypiServer, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    gate = tmp_path / "gate.json"
    gate.write_text(json.dumps({"baseline": "1.0", "candidate": "1.5", "observation_diff": [
        {"key": "rmsnorm.accepts_fp8", "baseline": False, "candidate": True}]}))
    assert main(["drift", "--repo", str(repo), "--index-url", pypi.url, "--no-cache",
                 "--from", "1.0", "--to", "2.0", "--gate-report", str(gate)]) == 1
    out = capsys.readouterr().out
    assert "note: the GPU gate report compares 1.0 -> 1.5, not 1.0 -> 2.0: its observations " \
           "were not used" in " ".join(out.split())
    gate.write_text(json.dumps({"baseline": "1.0", "candidate": "2.0", "observation_diff": [
        {"key": "rmsnorm.accepts_fp8", "baseline": False, "candidate": True}]}))
    assert main(["drift", "--repo", str(repo), "--index-url", pypi.url, "--no-cache",
                 "--from", "1.0", "--to", "2.0", "--gate-report", str(gate), "--json"]) == 1
    review = [f for f in json.loads(capsys.readouterr().out) if f["severity"] == "review"
              and f["change"] == "GPU gate: recorded behaviour changed"]
    assert [(f["line"], f["function"]) for f in review] == [
        (18, "kernelpkg.rmsnorm"), (19, "kernelpkg.rmsnorm")]
    assert main(["drift", "--repo", str(repo), "--index-url", pypi.url, "--no-cache",
                 "--gate-report", str(tmp_path / "missing.json")]) == 2
    assert capsys.readouterr().err.startswith(f"pinbump: error: {tmp_path / 'missing.json'}: "
                                              "cannot read the GPU gate report")
