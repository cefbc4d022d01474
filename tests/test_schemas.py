"""Each --json output validates against its published JSON Schema (bot/schemas)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from test_bisect import SUITE as BISECT_SUITE
from test_gpu_gate import FUSED_PERF, PERF_WORKER
from test_gpu_gate import _sites as gate_sites
from test_run_gate import REQUIRED, TOKEN, World, api

from bot.cli import build_parser, main
from bot.render.jsonout import SCHEMAS, schema, to_json
from gpu_stubs import flashinfer_wheels, install_plan, serve_trio, simple_index, stub_suite
from servers import PypiServer, static_index
from test_apply import publish, write_tree
from test_drift import publish as publish_kernel
from test_drift import target_repo


def valid(name: str, text: str) -> object:
    doc = json.loads(text)
    jsonschema.Draft202012Validator(schema(name)).validate(doc)
    return doc


@pytest.mark.parametrize("name", SCHEMAS)
def test_the_schemas_are_valid_and_closed(name: str) -> None:
    doc = schema(name)
    jsonschema.Draft202012Validator.check_schema(doc)
    assert doc["$id"].endswith(f"/{name}.schema.json")
    top = doc if doc["type"] == "object" else doc["items"]
    assert top["additionalProperties"] is False  # a new field must be published


def test_plan_apply_and_pins(pypi: PypiServer, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    repo = write_tree(tmp_path / "repo")
    argv = ["--repo", str(repo), "--index-url", pypi.url, "--min-release-age", "0", "--json"]
    assert main(["plan", *argv]) == 0
    plan = valid("plan", capsys.readouterr().out)
    assert isinstance(plan, dict) and plan["changes"]
    assert main(["apply", *argv]) == 0
    applied = valid("apply", capsys.readouterr().out)
    assert isinstance(applied, dict) and applied["written"] and applied["edits"]
    assert main(["pins", "--repo", str(repo), "--json"]) == 0
    pins = valid("pins", capsys.readouterr().out)
    assert isinstance(pins, dict) and pins["pins"]


def test_drift(pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish_kernel(pypi)
    repo = target_repo(tmp_path / "repo")
    assert main(["drift", "--repo", str(repo), "--index-url", pypi.url, "--from", "1.0",
                 "--to", "2.0", "--json", "--cache-dir", str(tmp_path / "cache")]) == 1
    findings = valid("drift", capsys.readouterr().out)
    assert isinstance(findings, list) and findings


def test_a_document_off_the_schema_is_refused() -> None:
    with pytest.raises(jsonschema.ValidationError):
        valid("run", to_json({"action": "exploded", "branch": "", "pr": None, "head_sha": "",
                              "pushed": False, "superseded": [], "dispatched": False,
                              "dashboard": None}))


def test_run_is_one_line() -> None:
    assert to_json({"a": [1, 2]}, one_line=True) == '{"a": [1, 2]}\n'
    assert to_json({"a": 1}) == '{\n  "a": 1\n}\n'


# -- the commands of the bot PR, against the GitHub emulator ---------------------------------
MAINTAINER = "ghp_schema_maintainer_111111111111"
OUTSIDER = "ghp_schema_outsider_2222222222222"


@pytest.fixture
def github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """The remote, the emulator and a bot PR; no package index."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    world = World(tmp_path, None)
    world.emu.add_account(MAINTAINER, "maintainer", permission="write")
    world.emu.add_account(OUTSIDER, "passerby", permission="read")
    yield world
    world.close()
    assert world.emu.violations == [], "\n".join(world.emu.violations)


def gh(world: World, command: str, *args: str) -> list[str]:
    return [command, "--github-repo", "acme/serving", "--api-url", world.emu.url,
            "--write-interval", "0", *args, "--json"]


def test_status_gate_verify_and_report(github: World, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    pr, sha = github.bot_pr()
    assert main(gh(github, "status", "--sha", sha, "--context", REQUIRED[0], "--state",
                   "success")) == 0
    status = valid("status", capsys.readouterr().out)
    assert status == {"sha": sha, "context": REQUIRED[0], "state": "success",
                      "target_url": "", "description": ""}
    assert main(gh(github, "gate", "--pr", str(pr), "--repo", str(github.checkout))) == 0
    gate = valid("gate", capsys.readouterr().out)
    assert isinstance(gate, dict) and gate["state"] == "pending" and gate["waiting"]
    github.status(sha, REQUIRED[1], "failure")
    assert main(gh(github, "gate", "--pr", str(pr), "--repo", str(github.checkout))) == 1
    gate = valid("gate", capsys.readouterr().out)
    assert isinstance(gate, dict) and gate["failing"] and gate["commented"] is True
    target = ["--pr", str(pr), "--sha", sha, "--repo", str(github.checkout)]
    assert main(gh(github, "verify-pr", *target)) == 0
    assert valid("verify-pr", capsys.readouterr().out) == {"pr": pr, "sha": sha,
                                                           "verified": True}
    reports = github.checkout.parent / "reports"
    (reports / "gpu-gate-sm90").mkdir(parents=True)
    (reports / "gpu-gate-sm90" / "gate.json").write_text('{"passed": true}')
    assert main(gh(github, "report-gpu", *target, "--reports", str(reports))) == 0
    report = valid("report-gpu", capsys.readouterr().out)
    assert isinstance(report, dict)
    assert [(s["job"], s["state"]) for s in report["statuses"]] == [("sm90", "success"),
                                                                     ("multi-gpu", "failure")]


def test_command(github: World, capsys: pytest.CaptureFixture[str]) -> None:
    pr, _ = github.bot_pr()
    results = []
    for token, body in ((MAINTAINER, "/pinbump gate"), (OUTSIDER, "/pinbump recreate"),
                        (MAINTAINER, "/pinbump frobnicate"), (MAINTAINER, "thanks!")):
        comment = api(github, "POST", f"/issues/{pr}/comments", token, body=body)["id"]
        assert main(gh(github, "command", "--repo", str(github.checkout), "--comment-id",
                       str(comment))) == 0
        doc = valid("command", capsys.readouterr().out)
        assert isinstance(doc, list)
        results += doc
    assert [r["state"] for r in results] == ["done", "refused", "unknown", "not-a-command"]


# -- the workflows and the GPU commands, on the CPU --------------------------------------------
def test_install_workflows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["install-workflows", "--repo", str(tmp_path), "--runner-labels",
            "h100=self-hosted,gpu", "--json"]
    assert main([*argv, "--dry-run"]) == 0
    dry = valid("install-workflows", capsys.readouterr().out)
    assert isinstance(dry, dict) and dry["dry_run"] is True and dry["files"]
    assert main(argv) == 0
    written = valid("install-workflows", capsys.readouterr().out)
    assert isinstance(written, dict) and all(f["changed"] for f in written["files"])


def test_gpu_gate_prints_gate_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Installed as deployed (artifacts, tests), and timed (perf rows): stdout is gate.json
    and nothing else."""
    with static_index(tmp_path / "srv") as srv:
        serve_trio(srv.root, srv.base)
        plan = install_plan(tmp_path, srv, ("0.6.8.post1", "0.6.11"))
        out = tmp_path / "out"
        code = main(["gpu-gate", "--install", str(plan), "--out", str(out), "--no-perf",
                     "--tests", str(stub_suite(tmp_path / "suite")), "--json"])
    printed = capsys.readouterr().out
    assert code == 1 and printed == (out / "gate.json").read_text()
    gate = valid("gpu-gate", printed)
    assert isinstance(gate, dict) and gate["artifacts"]["candidate"]["failures"]
    assert gate["tests"]["candidate"]["executed"] > 0

    old, new = gate_sites(tmp_path / "timed")
    suite = stub_suite(tmp_path / "timed" / "suite")
    (suite / "fused_perf.py").write_text(FUSED_PERF)
    (suite / "perf_worker.py").write_text(PERF_WORKER)
    out = tmp_path / "timed" / "out"
    assert main(["gpu-gate", "--baseline", str(old), "--candidate", str(new), "--out",
                 str(out), "--no-tests", "--fused-world", "2", "--tests", str(suite),
                 "--json"]) == 1
    printed = capsys.readouterr().out
    assert printed == (out / "gate.json").read_text()
    timed = valid("gpu-gate", printed)
    assert isinstance(timed, dict) and {p["verdict"] for p in timed["perf"]} == {
        "no change", "regression"}


def test_bisect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    versions = ["0.6.9", "0.6.10", "0.6.11"]
    with static_index(tmp_path / "srv") as srv:
        wheels = [flashinfer_wheels(tmp_path / "build" / v, v)[0] for v in versions]
        simple_index(srv.root / "simple", f"{srv.base}/simple", wheels)
        repo = tmp_path / "target"
        repo.mkdir()
        (repo / "pyproject.toml").write_text('[project]\nname = "t"\nversion = "1"\n'
                                             'dependencies = ["flashinfer-python==0.6.9"]\n')
        out = tmp_path / "out"
        code = main(["bisect", "--repo", str(repo), "--index-url", f"{srv.base}/simple",
                     "--no-cache", "--test", "test_kernels::test_norm", "--bad", "0.6.11",
                     "--out", str(out), "--tests", str(stub_suite(tmp_path / "suite",
                                                                  BISECT_SUITE)), "--json"])
    printed = capsys.readouterr().out
    assert code == 0 and printed == (out / "bisect.json").read_text()
    result = valid("bisect", printed)
    assert isinstance(result, dict) and result["first_bad"] == "0.6.10" and result["steps"]


def test_every_command_with_json_has_a_schema() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    speaking = {name for name, p in sub.choices.items()
                if any("--json" in a.option_strings for a in p._actions)}
    assert speaking == set(sub.choices) == set(SCHEMAS)
