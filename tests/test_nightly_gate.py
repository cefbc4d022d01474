"""The nightly gate (issue 13, item 5): ``run --channel nightly`` dispatches the GPU gate on the
default branch's head with the nightly versions it planned and opens no PR; the gate workflow
accepts such a dispatch only for the default branch's head and the runner's own nightly plan;
hostile inputs are refused; the result is shown on the dashboard, never merged.

Against the GitHub emulator (held to GitHub's OpenAPI description), a real bare git remote and
the loopback emulation of FlashInfer's indexes (nightly builds included)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from test_run_gate import TOKEN, World, git
from test_schemas import valid
from test_shipped import DAY0, shipped

from bot.cli import main
from bot.commands.gpu_gate import nightly_lists
from bot.core.nightly import (
    NightlyRecord,
    carried_section,
    nightly_section,
    parse_versions,
    read_record,
    with_section,
)
from bot.errors import RefusedTarget
from flashinfer_index import ARM, X86, FlashInferIndex, flashinfer_index

NIGHT = "0.6.16.dev20261128"
VERSIONS = (f"flashinfer-python=={NIGHT} flashinfer-cubin=={NIGHT} "
            f"flashinfer-jit-cache=={NIGHT}")
JOBS = ("pinbump/nightly-gate/multi-gpu", "pinbump/nightly-gate/sm90")


@pytest.fixture
def fi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FlashInferIndex]:
    with flashinfer_index(tmp_path / "fi") as index:
        monkeypatch.setenv("PINBUMP_FLASHINFER_WHL", index.whl)
        shipped(index, leads=("0.6.8.post1", "0.6.11"))
        when = DAY0 + timedelta(days=200)
        index.add("whl/nightly", "flashinfer-python", NIGHT, uploaded=when)
        index.add("whl/nightly", "flashinfer-cubin", NIGHT, uploaded=when)
        index.add("whl/nightly/cu129", "flashinfer-jit-cache", f"{NIGHT}+cu129", tags=(X86, ARM),
                  uploaded=when)
        index.publish()
        yield index


@pytest.fixture
def world(tmp_path: Path, fi: FlashInferIndex, monkeypatch: pytest.MonkeyPatch
          ) -> Iterator[World]:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    w = World(tmp_path, None)
    yield w
    w.close()
    assert w.emu.violations == [], "\n".join(w.emu.violations)


def github_args(world: World) -> list[str]:
    return ["--github-repo", "acme/serving", "--api-url", world.emu.url, "--write-interval",
            "0"]


def run(world: World, fi: FlashInferIndex, *extra: str) -> int:
    return main(["run", "--repo", str(world.checkout), *github_args(world), "--index-url",
                 fi.pypi, "--cache-dir", str(world.cache), "--channel", "nightly", *extra])


def verify(world: World, fi: FlashInferIndex, sha: str, versions: str, *extra: str) -> int:
    return main(["verify-nightly", "--repo", str(world.checkout), *github_args(world),
                 "--index-url", fi.pypi, "--cache-dir", str(world.cache), "--sha", sha,
                 f"--versions={versions}", *extra])


def head(world: World) -> str:
    return git(world.bare, "rev-parse", "refs/heads/main")


def dashboard(world: World) -> str:
    [issue] = [i for i in world.emu.state.items.values() if not i["pr"]]
    return str(issue["body"])


def test_run_nightly_dispatches_once_on_the_base_head_and_opens_no_pr(
        world: World, fi: FlashInferIndex, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(world, fi, "--json") == 0
    out = json.loads(capsys.readouterr().out)
    sha = head(world)
    assert (out["action"], out["head_sha"], out["dispatched"], out["pr"]) == \
        ("nightly", sha, True, None)
    assert world.emu.state.dispatches == [{
        "workflow": "pinbump-gpu-gate.yml", "ref": "main",
        "inputs": {"sha": sha, "channel": "nightly", "versions": VERSIONS}}]
    assert not [i for i in world.emu.state.items.values() if i["pr"]]  # no PR
    assert git(world.bare, "for-each-ref", "--format=%(refname)") == "refs/heads/main"
    pending = {s["context"]: s["obj"]["state"] for s in world.emu.state.statuses
               if s["sha"] == sha}
    assert pending == {c: "pending" for c in JOBS}
    body = dashboard(world)
    assert read_record(body) == NightlyRecord(sha, VERSIONS)
    assert f"| `flashinfer-python` | `{NIGHT}` |" in body
    assert "| `pinbump/nightly-gate/sm90` | pending |" in body
    # Nothing new: no second dispatch, the dashboard is left as it is.
    assert run(world, fi) == 0
    assert len(world.emu.state.dispatches) == 1
    assert dashboard(world) == body
    assert "already dispatched" in capsys.readouterr().err


def test_the_dispatch_run_makes_is_accepted(world: World, fi: FlashInferIndex,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert verify(world, fi, head(world), VERSIONS, "--json") == 0
    assert valid("verify-nightly", capsys.readouterr().out) == {
        "sha": head(world), "versions": VERSIONS, "verified": True}


def test_a_sha_that_is_not_the_base_head_is_refused(world: World, fi: FlashInferIndex,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    old = head(world)
    (world.checkout / "NEWS.md").write_text("news\n")
    git(world.checkout, "add", "-A")
    git(world.checkout, "-c", "user.name=dev", "-c", "user.email=dev@example.invalid",
        "commit", "--quiet", "-m", "news")
    git(world.checkout, "push", "--quiet", "origin", "HEAD:main")
    assert verify(world, fi, old, VERSIONS) == 2
    err = capsys.readouterr().err
    assert err == (f"pinbump: error: refusing the nightly gate on {old}: not the head of main "
                   f"({head(world)[:12]}); nightly runs test the default branch's head only\n")
    git(world.checkout, "push", "--quiet", "origin", f"{old}:refs/heads/other")
    assert verify(world, fi, old, VERSIONS, "--base", "other") == 2
    assert capsys.readouterr().err == (
        "pinbump: error: refusing the nightly gate on branch 'other': only the default branch "
        "(main) is gated nightly\n")


@pytest.mark.parametrize(("versions", "message"), [
    (f"flashinfer-python=={NIGHT};rm -rf /", "is not NAME==VERSION"),
    ("--index-url=https://evil.example/simple", "is not NAME==VERSION"),
    (f"flashinfer-python=={NIGHT}+evil", "is not NAME==VERSION"),
    ("flashinfer-python==../../etc/passwd", "is not NAME==VERSION"),
    ("flashinfer-python==0.6.16.x", "is not a PEP 440 version"),
    ("flashinfer-python==0.6.16.dev020261128", "is not a normalized public version"),
    ("flashinfer_python==0.6.16", "is not NAME==VERSION"),
    (f"flashinfer-python=={NIGHT} flashinfer-python=={NIGHT}", "is named twice"),
    (f"flashinfer-python=={NIGHT}\nflashinfer-cubin=={NIGHT}", "is not NAME==VERSION"),
    ("evil-package==1.0", "is not a lead or lockstep package"),
    ("", "empty"),
    ("flashinfer-python==0.6.11", "but the nightly plan of"),  # valid, not what it plans
])
def test_hostile_or_unplanned_versions_are_refused(
        world: World, fi: FlashInferIndex, capsys: pytest.CaptureFixture[str], versions: str,
        message: str) -> None:
    assert verify(world, fi, head(world), versions) == 2
    err = capsys.readouterr().err
    assert err.startswith("pinbump: error: ") and err.count("\n") == 1 and message in err
    assert "evil.example" not in "".join(json.dumps(r) for r in world.emu.log)


def test_the_gpu_jobs_install_the_base_against_the_nightly_set(
        world: World, fi: FlashInferIndex) -> None:
    baseline, candidate = nightly_lists(world.checkout, VERSIONS, "cu129")
    assert [(s.package, s.version, s.index_urls) for s in candidate] == [
        ("flashinfer-python", NIGHT, (f"{fi.whl}/nightly",)),
        ("flashinfer-cubin", NIGHT, (f"{fi.whl}/nightly",)),
        ("flashinfer-jit-cache", NIGHT, (f"{fi.whl}/nightly/cu129",))]
    assert {s.version for s in baseline} == {"0.6.8.post1"}
    with pytest.raises(RefusedTarget, match="is not NAME==VERSION"):
        nightly_lists(world.checkout, "flashinfer-python==1.0 --target=/etc", "cu129")
    assert main(["gpu-gate", "--deploy-base", str(world.checkout), "--nightly-versions",
                 "flashinfer-python==1.0+cu129", "--cuda-variant", "cu129", "--out",
                 str(world.cache / "gate")]) == 2
    assert not (world.cache / "gate").exists()  # refused before anything was installed


def test_the_result_is_a_status_and_shown_on_the_dashboard_never_a_pr(
        world: World, fi: FlashInferIndex, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert run(world, fi) == 0
    sha = head(world)
    reports = tmp_path / "reports"
    for job, passed in (("sm90", True), ("multi-gpu", False)):
        (reports / f"gpu-gate-{job}").mkdir(parents=True)
        (reports / f"gpu-gate-{job}" / "gate.json").write_text(json.dumps({"passed": passed}))
    url = "https://github.com/acme/serving/actions/runs/7"
    assert main(["report-gpu", *github_args(world), "--channel", "nightly", "--sha", sha,
                 f"--versions={VERSIONS}", "--repo", str(world.checkout), "--reports",
                 str(reports), "--target-url", url, "--json"]) == 0
    report = valid("report-gpu", capsys.readouterr().out)
    assert report == {"sha": sha, "channel": "nightly", "statuses": [
        {"job": "sm90", "state": "success", "description": "gpu_tests passed"},
        {"job": "multi-gpu", "state": "failure", "description": "gpu_tests failed"}]}
    final = {s["context"]: s["obj"] for s in world.emu.state.statuses if s["sha"] == sha}
    assert final["pinbump/nightly-gate/sm90"]["state"] == "success"
    assert final["pinbump/nightly-gate/multi-gpu"]["state"] == "failure"
    assert final["pinbump/nightly-gate/sm90"]["description"] == \
        f"nightly flashinfer-python {NIGHT}: gpu_tests passed"
    assert main(["report-gpu", *github_args(world), "--channel", "nightly", "--pr", "1",
                 "--sha", sha, f"--versions={VERSIONS}", "--repo", str(world.checkout),
                 "--reports", str(reports)]) == 2  # a nightly status never names a PR
    assert main(["nightly-dashboard", *github_args(world), "--sha", sha,
                 f"--versions={VERSIONS}", "--repo", str(world.checkout), "--json"]) == 0
    board = valid("nightly-dashboard", capsys.readouterr().out)
    body = dashboard(world)
    assert board == {"dashboard": next(n for n, i in world.emu.state.items.items()
                                       if not i["pr"]), "sha": sha}
    assert f"| `pinbump/nightly-gate/sm90` | [passed]({url}) |" in body
    assert f"| `pinbump/nightly-gate/multi-gpu` | [failed]({url}) |" in body
    assert "> **The nightly flashinfer-python fails the GPU gate**" in body
    # A stable run rewrites the dashboard and keeps the nightly section; nothing was merged.
    assert main(["run", "--repo", str(world.checkout), *github_args(world), "--index-url",
                 fi.pypi, "--cache-dir", str(world.cache)]) == 0
    assert carried_section(dashboard(world)) == carried_section(body) != ""
    assert world.emu.state.merges == []
    assert all(d["inputs"].get("channel") == "nightly" or "pr" in d["inputs"]
               for d in world.emu.state.dispatches)


@pytest.mark.parametrize(("text", "expected"), [
    ("flashinfer-python==0.6.16.dev20261128", {"flashinfer-python": "0.6.16.dev20261128"}),
    ("flashinfer-python==0.7.0rc1 flashinfer-cubin==0.7.0rc1",
     {"flashinfer-python": "0.7.0rc1", "flashinfer-cubin": "0.7.0rc1"}),
    ("flashinfer-python==0.7.0-rc1", RefusedTarget),  # not normalized
    ("flashinfer-python==0.7.0  flashinfer-cubin==0.7.0", RefusedTarget),  # two spaces
    ("Flashinfer-Python==0.7.0", RefusedTarget),  # not canonical
    ("flashinfer-python===0.7.0", RefusedTarget),
    ("flashinfer-python==0.7.0 " * 40, RefusedTarget),  # too long
])
def test_parse_versions(text: str, expected: object) -> None:
    if expected is RefusedTarget:
        with pytest.raises(RefusedTarget):
            parse_versions(text)
    else:
        assert parse_versions(text) == expected


def test_the_section_replaces_itself_and_a_forged_marker_is_ignored() -> None:
    sha = "a" * 40
    section = nightly_section(NightlyRecord(sha, VERSIONS), [])
    body = with_section("# dashboard\n", section)
    assert with_section(body, section) == body
    assert read_record(body) == NightlyRecord(sha, VERSIONS)
    forged = f"<!-- pinbump:nightly sha={sha} versions=evil==1.0; rm -rf / -->"
    assert read_record(forged) is None and carried_section(forged) == ""


def test_nightly_prs_true_opens_the_bot_pr_for_the_nightly_set(
        world: World, fi: FlashInferIndex, capsys: pytest.CaptureFixture[str]) -> None:
    """``nightly-prs = true``: a nightly set is bumped like any other (branch, PR, the PR's
    own GPU gate), no nightly-only dispatch."""
    config = world.checkout / "pinbump.toml"
    config.write_text("nightly-prs = true\n" + config.read_text())
    git(world.checkout, "add", "-A")
    git(world.checkout, "-c", "user.name=dev", "-c", "user.email=dev@example.invalid",
        "commit", "--quiet", "-m", "nightly PRs")
    git(world.checkout, "push", "--quiet", "origin", "HEAD:main")
    assert run(world, fi, "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["action"] == "opened" and out["branch"] == f"pinbump/flashinfer-{NIGHT}"
    [pr] = [i for i in world.emu.state.items.values() if i["pr"]]
    assert pr["head"] == f"pinbump/flashinfer-{NIGHT}"
    [dispatch] = world.emu.state.dispatches
    assert dispatch["inputs"] == {"pr": str(out["pr"]), "sha": out["head_sha"]}
