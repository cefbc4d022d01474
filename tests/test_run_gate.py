"""pinbump run and pinbump gate against the local GitHub emulator (held to GitHub's OpenAPI
description), a real bare git repository as the remote, and a real pypiserver."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import cmarkgfm
import jsonschema
import pytest

from bot.adapters.github import GitHub
from bot.cli import main
from bot.render.jsonout import schema
from github_emulator import GitHubEmulator
from reads import count_reads
from servers import PypiServer, serve
from test_apply import TREE

TOKEN = "ghp_testtoken_0123456789abcdef"
OLD = datetime.now(timezone.utc) - timedelta(days=60)
FP4_OLD = ("def fp4_quantize(input, global_scale=None, sf_vec_size=16, sf_use_ue8m0=False,\n"
           "                 is_sf_swizzled_layout=True, is_sf_8x4_layout=False,\n"
           "                 enable_pdl=None, backend='cuda'):\n    return input\n")
FP4_NEW = FP4_OLD.replace("is_sf_8x4_layout=False,\n",
                          "is_sf_8x4_layout=False, is_global_scale_inversed=False,\n")
WS_OLD = ("def create_allreduce_fusion_workspace(backend='auto', world_size=None, rank=None,\n"
          "                                      max_token_num=None, hidden_dim=None):\n"
          "    return None\n")
WS_NEW = WS_OLD.replace("hidden_dim=None)", "hidden_dim=None, group=None)")
CALLER = ("from flashinfer import fp4_quantize as _fq\n\n\n"
          "def quantize(x, s, pdl):\n"
          "    return _fq(x, s, 16, False, True, False, pdl, 'cuda')\n")
CONFIG = ('reviewers = ["alice"]\n'
          '[runner-labels]\nsm90 = ["self-hosted", "linux", "gpu", "sm90"]\n'
          'multi-gpu = ["self-hosted", "linux", "gpu", "multi-gpu"]\n')
GPU_JOBS = ["pinbump/gpu-gate/sm90", "pinbump/gpu-gate/multi-gpu"]
REQUIRED = [*GPU_JOBS, "pinbump/drift"]  # run sets pinbump/drift; the gate requires it too


def sources(fp4: str, ws: str) -> dict[str, str]:
    return {"flashinfer/__init__.py": "from flashinfer.quantization.fp4 import fp4_quantize\n"
                                      "from flashinfer import comm\n",
            "flashinfer/quantization/__init__.py": "",
            "flashinfer/quantization/fp4.py": fp4,
            "flashinfer/comm/__init__.py": "from flashinfer.comm.allreduce import "
                                           "create_allreduce_fusion_workspace\n",
            "flashinfer/comm/allreduce.py": ws}


def publish(pypi: PypiServer, version: str, fp4: str, ws: str) -> None:
    pypi.add("flashinfer-python", version, uploaded=OLD, files=sources(fp4, ws),
             requires=["nvidia-cutlass-dsl>=4.4"])
    pypi.add("flashinfer-cubin", version, uploaded=OLD)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


class World:
    def __init__(self, tmp: Path, pypi: PypiServer | None, files: dict[str, str] | None = None
                 ) -> None:
        self.pypi = pypi
        self.bare = tmp / "remote.git"
        git(tmp, "init", "--quiet", "--bare", "-b", "main", str(self.bare))
        self.checkout = tmp / "checkout"
        git(tmp, "clone", "--quiet", str(self.bare), str(self.checkout))
        for rel, text in {**(files or TREE), "python/sglang/srt/layers/fp4.py": CALLER,
                          "pinbump.toml": CONFIG}.items():
            (self.checkout / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.checkout / rel).write_text(text)
        git(self.checkout, "add", "-A")
        git(self.checkout, "-c", "user.name=dev", "-c", "user.email=dev@example.invalid",
            "commit", "--quiet", "-m", "init")
        git(self.checkout, "push", "--quiet", "origin", "HEAD:main")
        self.emu = GitHubEmulator("acme", "serving", self.bare, TOKEN)
        serve(self.emu)
        self.cache = tmp / "cache"

    def run(self, *extra: str) -> int:
        assert self.pypi is not None
        return main(["run", "--repo", str(self.checkout), "--github-repo", "acme/serving",
                     "--api-url", self.emu.url, "--write-interval", "0", "--index-url",
                     self.pypi.url, "--cache-dir",
                     str(self.cache), "--json", *extra])

    def gate(self, pr: int, *extra: str) -> int:
        return main(["gate", "--github-repo", "acme/serving", "--api-url", self.emu.url,
                     "--write-interval", "0", "--pr", str(pr), "--repo", str(self.checkout),
                     *extra])

    def status(self, sha: str, context: str, state: str) -> None:
        import requests

        r = requests.post(f"{self.emu.url}/repos/acme/serving/statuses/{sha}",
                          json={"state": state, "context": context,
                                "target_url": "https://ci.example.invalid/job/1"},
                          headers={"Authorization": f"token {TOKEN}"}, timeout=10)
        assert r.status_code == 201

    def bot_pr(self, branch: str = "pinbump/flashinfer-0.6.11") -> tuple[int, str]:
        """A bot branch pushed by hand and its PR opened through the API: what the gate
        needs, without planning. Returns (PR number, head SHA)."""
        import requests

        git(self.checkout, "checkout", "--quiet", "-b", branch)
        (self.checkout / "BUMP.md").write_text(f"{branch}\n")
        git(self.checkout, "add", "-A")
        git(self.checkout, "-c", "user.name=pinbump[bot]", "-c",  # the bot's git identity
            "user.email=pinbump-bot@users.noreply.github.com", "commit", "--quiet", "-m",
            "bump")
        git(self.checkout, "push", "--quiet", "origin", f"HEAD:{branch}")
        git(self.checkout, "checkout", "--quiet", "main")
        r = requests.post(f"{self.emu.url}/repos/acme/serving/pulls",
                          json={"title": "Bump", "body": "b", "head": branch, "base": "main"},
                          headers={"Authorization": f"token {TOKEN}"}, timeout=10)
        assert r.status_code == 201, r.text
        return r.json()["number"], git(self.bare, "rev-parse", f"refs/heads/{branch}")

    def client(self) -> GitHub:
        return GitHub("acme/serving", TOKEN, base_url=self.emu.url, write_interval=0)

    def close(self) -> None:
        self.emu.shutdown()
        self.emu.server_close()


def worlds(tmp_path: Path, pypi: PypiServer, monkeypatch: pytest.MonkeyPatch):
    """A World with 0.6.8.post1 pinned and 0.6.11 published; its emulator saw no violation."""
    publish(pypi, "0.6.8.post1", FP4_OLD, WS_OLD)
    publish(pypi, "0.6.11", FP4_NEW, WS_NEW)
    for v in ("4.4.2", "4.5.0"):
        pypi.add("nvidia-cutlass-dsl", v, uploaded=OLD)
    pypi.add("quack-kernels", "0.3.0", uploaded=OLD)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    w = World(tmp_path, pypi)
    yield w
    w.close()
    assert w.emu.violations == [], "\n".join(w.emu.violations)


world = pytest.fixture(worlds, name="world")


@pytest.fixture
def github_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The remote and the GitHub emulator, no package index: for the gate and the adapter."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    w = World(tmp_path, None)
    yield w
    w.close()
    assert w.emu.violations == [], "\n".join(w.emu.violations)


def last_json(out: str) -> dict:
    """The --json record of a run (its last line), checked against its published schema."""
    doc = json.loads(out.strip().splitlines()[-1])
    jsonschema.Draft202012Validator(schema("run")).validate(doc)
    return doc


def test_first_run_opens_the_pr_then_second_run_is_a_no_op(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run() == 0
    result = last_json(capsys.readouterr().out)
    assert result["action"] == "opened" and result["pushed"] and result["dispatched"]
    branch = "pinbump/flashinfer-0.6.11"
    head = git(world.bare, "rev-parse", f"refs/heads/{branch}")
    assert result["head_sha"] == head
    diff = git(world.bare, "diff", "main", branch)
    assert '-  "flashinfer_python==0.6.8.post1", # keep it aligned' in diff
    assert '+  "flashinfer_python==0.6.11", # keep it aligned' in diff
    assert "+ARG FLASHINFER_VERSION=0.6.11" in diff
    state = world.emu.state
    pr = state.items[result["pr"]]
    assert pr["pr"] and pr["head"] == branch and pr["base"] == "main"
    # the Dockerfile's ARG FLASHINFER_VERSION installs flashinfer-jit-cache: it moves too
    assert pr["title"] == "Bump flashinfer-python 0.6.8.post1 → 0.6.11 (+ flashinfer-cubin, " \
                         "flashinfer-jit-cache, nvidia-cutlass-dsl)"
    assert pr["labels"] == ["dependencies", "pinbump", "gpu-gate"]
    assert pr["reviewers"] == ["alice"]
    assert state.dispatches == [{"workflow": "pinbump-gpu-gate.yml", "ref": "main",
                                 "inputs": {"pr": str(result["pr"]), "sha": head}}]
    body = pr["body"]
    html = cmarkgfm.github_flavored_markdown_to_html(body)
    assert html.count("<table>") >= 3  # versions, drift, GPU jobs
    assert "<td><code>flashinfer-python</code></td>" in html
    assert "parameter <code>is_global_scale_inversed</code> inserted before" in html
    assert "python/sglang/srt/layers/fp4.py:5" in body
    dashboard = state.items[result["dashboard"]]
    assert dashboard["title"] == "pinbump: dependency dashboard"
    assert "GPU gate: **pending**" in dashboard["body"]

    writes = len(world.emu.writes())
    assert world.run() == 0
    again = last_json(capsys.readouterr().out)
    assert again["action"] == "unchanged" and not again["pushed"] and not again["dispatched"]
    assert git(world.bare, "rev-parse", f"refs/heads/{branch}") == head
    assert len(world.emu.writes()) == writes  # no commit, no PR edit, no comment


def test_newer_version_supersedes_the_old_pr(world: World,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run() == 0
    first = last_json(capsys.readouterr().out)["pr"]
    publish(world.pypi, "0.6.12", FP4_NEW, WS_NEW)
    assert world.run() == 0
    second = last_json(capsys.readouterr().out)
    assert second["action"] == "opened" and second["superseded"] == [first]
    old = world.emu.state.items[first]
    assert old["state"] == "closed"
    assert world.emu.state.comments[first][-1]["body"].startswith(f"Superseded by #"
                                                                   f"{second['pr']}")
    assert world.emu.state.items[second["pr"]]["head"] == "pinbump/flashinfer-0.6.12"


def test_gate_pending_failed_passed_and_merged(github_world: World,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    world = github_world
    pr, sha = world.bot_pr()
    assert world.gate(pr) == 0
    assert "pending on" in capsys.readouterr().err
    world.status(sha, REQUIRED[0], "success")
    world.status(sha, REQUIRED[1], "failure")
    world.status(sha, "pinbump/drift", "success")
    reports = world.checkout.parent / "reports" / "gpu-gate-multi-gpu"
    reports.mkdir(parents=True)
    (reports / "summary.md").write_text("### GPU gate: flashinfer 0.6.8.post1 → 0.6.11: "
                                        "**FAILED**\n")
    assert world.gate(pr, "--reports", str(reports.parent)) == 1
    assert world.gate(pr) == 1  # the failure is commented once per head SHA
    comments = world.emu.state.comments[pr]
    assert len(comments) == 1 and "`pinbump/gpu-gate/multi-gpu`" in comments[0]["body"]
    assert "https://ci.example.invalid/job/1" in comments[0]["body"]
    assert "<summary>gpu-gate-multi-gpu</summary>" in comments[0]["body"]
    assert "0.6.11: **FAILED**" in comments[0]["body"]
    world.status(sha, REQUIRED[1], "success")  # re-run passed
    assert world.gate(pr) == 0
    assert world.emu.state.merges == [{"number": pr, "sha": sha, "method": "squash"}]
    assert world.gate(pr) == 0
    assert "is merged" in capsys.readouterr().err


def test_a_push_after_a_green_gate_resets_it(github_world: World,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    world = github_world
    branch = "pinbump/flashinfer-0.6.11"
    pr, sha = world.bot_pr(branch)
    for context in REQUIRED:
        world.status(sha, context, "success")
    git(world.checkout, "checkout", "--quiet", branch)
    (world.checkout / "NOTE.md").write_text("a human pushed\n")
    git(world.checkout, "add", "-A")
    git(world.checkout, "-c", "user.name=dev", "-c", "user.email=d@x.invalid", "commit",
        "--quiet", "-m", "human")
    git(world.checkout, "push", "--quiet", "origin", f"HEAD:{branch}")
    assert world.gate(pr) == 0
    assert "pending on" in capsys.readouterr().err
    assert world.emu.state.merges == []


def test_secondary_rate_limit_and_502_are_retried(github_world: World) -> None:
    world = github_world
    branch = "pinbump/flashinfer-0.6.11"
    world.bot_pr("pinbump/other")  # the branch exists; open its PR through the adapter
    git(world.checkout, "push", "--quiet", "origin", f"pinbump/other:{branch}")
    world.emu.inject(r"^POST .*/pulls$", 403, headers={"Retry-After": "1"},
                     body={"message": "You have exceeded a secondary rate limit. Please wait a "
                                      "few minutes before you try again.",
                           "documentation_url": "https://docs.github.com/rest"})
    world.emu.inject(r"^GET /repos/acme/serving$", 502)
    start = len(world.emu.log)
    pr = world.client().create_pull(title="t", body="b", head=branch, base="main")
    assert pr.head_ref == branch
    log = world.emu.log[start:]
    assert [s for m, p, s in log if p.endswith("/pulls") and m == "POST"] == [403, 201]
    assert ("GET", "/repos/acme/serving", 502) in log


def test_primary_rate_limit_waits_for_the_reset(github_world: World) -> None:
    world = github_world
    world.emu.inject(r"^GET /repos/acme/serving/pulls$", 403, reset_in=2,
                     body={"message": "API rate limit exceeded for installation.",
                           "documentation_url": "https://docs.github.com/rest"})
    world.bot_pr()
    start = len(world.emu.log)
    assert [p.head_ref for p in world.client().open_pulls("main", "pinbump/")] == \
        ["pinbump/flashinfer-0.6.11"]
    pulls = [i for i, (m, p, _) in enumerate(world.emu.log) if m == "GET" and
             p.endswith("/pulls") and i >= start]
    assert [world.emu.log[i][2] for i in pulls[:2]] == [403, 200]
    waited = world.emu.stamps[pulls[1]] - world.emu.stamps[pulls[0]]
    assert waited >= 1.5, waited  # held back until x-ratelimit-reset, not retried at once


def test_missing_token_fails_before_any_change(world: World, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    assert world.run() == 2
    err = capsys.readouterr().err
    assert err.startswith("pinbump: error: $GITHUB_TOKEN is not set") and err.count("\n") == 1
    assert world.emu.log == []
    assert git(world.bare, "branch", "--list") == "main" or "pinbump" not in git(
        world.bare, "branch", "--list")


def test_token_never_leaks(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run("--print-body") == 0
    captured = capsys.readouterr()
    assert TOKEN not in captured.out + captured.err
    assert any(h.get("Authorization") == f"token {TOKEN}" for h in world.emu.request_headers)
    for path in [*world.checkout.rglob("*"), *world.bare.rglob("*"), *world.cache.rglob("*")]:
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    assert TOKEN not in git(world.checkout, "config", "--list")
    assert world.gate(999) == 2  # an API error on the way out: reported without the token
    err = capsys.readouterr().err
    assert err.startswith("pinbump: error: GitHub reading PR #999 failed: HTTP 404")
    assert TOKEN not in err


def test_nothing_to_bump_says_so(tmp_path: Path, pypi: PypiServer,
                                 monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi, "0.6.11", FP4_NEW, WS_NEW)
    pypi.add("nvidia-cutlass-dsl", "4.5.0", uploaded=OLD)
    pypi.add("quack-kernels", "0.3.0", uploaded=OLD)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    current = {k: v.replace("0.6.8.post1", "0.6.11").replace("4.4.2", "4.5.0")
               for k, v in TREE.items()}
    w = World(tmp_path, pypi, current)
    try:
        assert w.run() == 0
        captured = capsys.readouterr()
        assert "pinbump: nothing to bump: flashinfer-python 0.6.11 is the newest" in captured.err
        assert last_json(captured.out)["action"] == "nothing"
        assert [i for i in w.emu.state.items.values() if i["pr"]] == []
        [dash] = w.emu.state.items.values()
        assert "**Up to date**" in dash["body"]
        writes = len(w.emu.writes())
        assert w.run() == 0
        assert len(w.emu.writes()) == writes
        assert "pinbump" not in git(w.bare, "branch", "--list")
    finally:
        w.close()
    assert w.emu.violations == []


def git_dir_state(checkout: Path) -> dict[str, bytes]:
    """Every file of the checkout's .git folder (refs, objects, worktrees, config)."""
    return {p.relative_to(checkout).as_posix(): p.read_bytes()
            for p in sorted((checkout / ".git").rglob("*")) if p.is_file()}


def test_dry_run_pushes_and_writes_nothing(world: World, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")  # a dry run needs no token
    before = git_dir_state(world.checkout)
    reads = count_reads(monkeypatch)
    assert world.run("--dry-run") == 0
    after = git_dir_state(world.checkout)
    assert after == before  # no ref (refs/pinbump/*, remote-tracking), object or worktree
    assert reads.config_parses == 1
    scratch = [w for w in reads.walks if "pinbump-" in w and w.endswith("/tree")]
    assert len(scratch) == 1  # the scratch checkout of the base, walked once
    # apply, then drift: each file read once; an edited one once more, as it is written
    per_file = reads.under(Path(scratch[0]))
    assert per_file["docs/notes.md"] == 1 and max(per_file.values()) == 2
    assert {p for p, n in per_file.items() if n == 2} == {
        "docker/Dockerfile", "python/pyproject.toml", "python/pyproject_other.toml",
        "python/sglang/srt/entrypoints/engine.py", "python/sglang/srt/layers/fp4.py",
        "python/sglang/srt/utils/common.py"}
    assert reads.walks_of(world.checkout) == []
    captured = capsys.readouterr()
    assert "### API drift: `flashinfer-python` 0.6.8.post1 → 0.6.11" in captured.out
    assert "dry run: would push pinbump/flashinfer-0.6.11" in captured.err
    assert world.emu.log == []
    assert "pinbump" not in git(world.bare, "branch", "--list")
    assert git(world.checkout, "status", "--porcelain") == ""
    assert "pinbump" not in git(world.checkout, "worktree", "list")


def test_status_command_sets_a_commit_status(github_world: World,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    world = github_world
    sha = git(world.bare, "rev-parse", "main")
    assert main(["status", "--github-repo", "acme/serving", "--api-url", world.emu.url,
                 "--write-interval", "0", "--sha", sha, "--context", "pinbump/gpu-gate/sm90",
                 "--state", "failure", "--target-url", "https://ci.example.invalid/run/9",
                 "--description", "gpu_tests: failure"]) == 0
    [status] = world.emu.state.statuses
    assert (status["sha"], status["context"], status["obj"]["state"]) == (
        sha, "pinbump/gpu-gate/sm90", "failure")


def test_the_bump_is_made_against_the_remote_base(world: World,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Local edits in the checkout (uncommitted or unpushed) never leak into the bot branch."""
    pyproject = world.checkout / "python" / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"requests",', '"requests==1.0",'))
    (world.checkout / "scratch.txt").write_text("local only\n")
    assert world.run() == 0
    branch = last_json(capsys.readouterr().out)["branch"]
    changed = git(world.bare, "diff", "--name-only", "main", branch).splitlines()
    assert "scratch.txt" not in changed
    assert '"requests",' in git(world.bare, "show", f"{branch}:python/pyproject.toml")
    assert "requests==1.0" in pyproject.read_text()  # the checkout itself is left alone
    assert "pinbump-" not in git(world.checkout, "worktree", "list")
    assert "pinbump" not in git(world.checkout, "for-each-ref")
    # with the bot branch now on the remote, a dry run still writes nothing here (it used to
    # fetch the branch into refs/pinbump/*)
    before = git_dir_state(world.checkout)
    assert world.run("--dry-run") == 0
    assert git_dir_state(world.checkout) == before
    assert "pinbump" not in git(world.checkout, "for-each-ref")


# -- who the gate merges, and from which policy (issue 11, items 2, 3 and 14) -------------
HUMAN = "ghp_human_token_fedcba9876543210"


def api(world: World, method: str, path: str, token: str = TOKEN, **body: object) -> dict:
    import requests

    r = requests.request(method, f"{world.emu.url}/repos/acme/serving{path}", json=body or None,
                         headers={"Authorization": f"token {token}"}, timeout=10)
    assert r.status_code < 300, (r.status_code, r.text)
    return r.json() if r.text else {}


def push_branch(world: World, branch: str, name: str, email: str, start: str = "main",
                files: dict[str, str] | None = None) -> str:
    git(world.checkout, "fetch", "--quiet", "origin", start)
    git(world.checkout, "checkout", "--quiet", "--detach", "FETCH_HEAD")
    for rel, text in (files or {"NOTE.md": f"{branch}\n"}).items():
        (world.checkout / rel).write_text(text)
    git(world.checkout, "add", "-A")
    git(world.checkout, "-c", f"user.name={name}", "-c", f"user.email={email}", "commit",
        "--quiet", "-m", f"change on {branch}")
    git(world.checkout, "push", "--quiet", "origin", f"HEAD:refs/heads/{branch}")
    return git(world.checkout, "rev-parse", "HEAD")


def all_green(world: World, sha: str) -> None:
    for context in REQUIRED:
        world.status(sha, context, "success")


def test_gate_never_merges_a_human_pr_labelled_gpu_gate(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    world.emu.add_account(HUMAN, "mallory", emails=("mallory@example.invalid",))
    sha = push_branch(world, "feature", "Mallory", "mallory@example.invalid")
    pr = api(world, "POST", "/pulls", HUMAN, title="tweak", head="feature", base="main")
    api(world, "POST", f"/issues/{pr['number']}/labels", labels=["gpu-gate"])
    all_green(world, sha)
    assert world.gate(pr["number"]) == 0
    err = capsys.readouterr().err
    assert "is not a bot PR" in err and "opened by 'mallory'" in err
    assert "'feature' is not a pinbump/* branch" in err
    assert world.emu.state.merges == []


def test_gate_never_merges_a_bot_branch_someone_else_opened(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """The branch name and the git identity can be forged; the PR's author cannot."""
    world.emu.add_account(HUMAN, "mallory")
    sha = push_branch(world, "pinbump/flashinfer-9.9", "pinbump[bot]",
                      "pinbump-bot@users.noreply.github.com")
    pr = api(world, "POST", "/pulls", HUMAN, title="Bump", head="pinbump/flashinfer-9.9",
             base="main")
    all_green(world, sha)
    assert world.gate(pr["number"]) == 0
    assert "opened by 'mallory', not by the bot ('pinbump-bot')" in capsys.readouterr().err
    assert world.emu.state.merges == []


def test_gate_never_merges_a_bot_pr_with_a_hand_commit(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run() == 0
    result = last_json(capsys.readouterr().out)
    sha = push_branch(world, result["branch"], "Dev", "dev@example.invalid",
                      start=result["branch"])
    all_green(world, sha)
    assert world.gate(result["pr"]) == 0
    assert "1 commit(s) not made by the bot" in capsys.readouterr().err
    assert world.emu.state.merges == []


def test_gate_policy_comes_from_the_base_branch_not_the_pr(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """A bot-looking commit that empties [runner-labels] on the PR, with the PR checked out
    (as a pull-request workflow has it): the gate still requires the base's statuses."""
    assert world.run() == 0
    result = last_json(capsys.readouterr().out)
    push_branch(world, result["branch"], "pinbump[bot]",
                "pinbump-bot@users.noreply.github.com", start=result["branch"],
                files={"pinbump.toml": "[runner-labels]\n"})
    assert world.gate(result["pr"]) == 0  # the checkout holds the PR's pinbump.toml
    err = capsys.readouterr().err
    assert "pending on" in err and "pinbump/gpu-gate/sm90" in err
    assert world.emu.state.merges == []


def test_an_empty_required_set_on_the_base_is_an_error(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run() == 0
    result = last_json(capsys.readouterr().out)
    push_branch(world, "main", "dev", "dev@example.invalid",
                files={"pinbump.toml": "[runner-labels]\n"})
    assert world.gate(result["pr"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pinbump: error: pinbump.toml: no required checks") and \
        err.count("\n") == 1
    assert world.emu.state.merges == []


def test_rerun_dispatches_the_gate_a_failed_run_left_out(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    world.emu.inject(r"^POST .*/dispatches$", 403,  # dies after opening the PR
                     body={"message": "Resource not accessible by integration"})
    assert world.run() == 2
    assert "GitHub dispatching pinbump-gpu-gate.yml failed" in capsys.readouterr().err
    [pr] = [n for n, i in world.emu.state.items.items() if i["pr"]]
    assert world.emu.state.dispatches == []
    assert world.run() == 0
    again = last_json(capsys.readouterr().out)
    assert again["pr"] == pr and again["dispatched"]
    head = world.emu.head_sha(again["branch"])
    assert world.emu.state.dispatches == [{"workflow": "pinbump-gpu-gate.yml", "ref": "main",
                                           "inputs": {"pr": str(pr), "sha": head}}]
    queued = {(s["sha"], s["context"], s["obj"]["state"]) for s in world.emu.state.statuses}
    assert queued == {(head, c, "pending") for c in GPU_JOBS} | {
        (head, "pinbump/drift", "success")}
    assert world.run() == 0  # converged: nothing is missing any more
    assert not last_json(capsys.readouterr().out)["dispatched"]
    assert len(world.emu.state.dispatches) == 1


def test_the_token_goes_only_to_https_or_loopback(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gate", "--github-repo", "acme/serving", "--api-url",
                 "http://api.example.com", "--pr", "1", "--repo", str(world.checkout)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pinbump: error: --api-url 'http://api.example.com': the token is "
                          "sent only to an https:// API URL") and err.count("\n") == 1
    assert world.emu.log == []


def test_a_rate_limit_wait_beyond_the_budget_is_an_error(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    import time

    world.emu.inject(r"^GET /repos/acme/serving/pulls$", 403, reset_in=120,
                     body={"message": "API rate limit exceeded for installation.",
                           "documentation_url": "https://docs.github.com/rest"})
    start = time.monotonic()
    assert world.run("--budget", "30") == 2
    assert time.monotonic() - start < 30
    err = capsys.readouterr().err
    assert "rate limited for 12" in err and "beyond the command's time budget" in err
    assert err.count("pinbump: error:") == 1


def test_a_request_error_while_reading_labels_is_one_line(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    world.emu.inject(r"^GET .*/labels/", 0, times=20)  # status 0: drop the connection
    assert world.run() == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("pinbump: error: GitHub reading label "
                                           "'dependencies' failed: ConnectionError")
    assert "Traceback" not in err



def gpu_cmd(world: World, command: str, pr: int, sha: str, *extra: str) -> int:
    return main([command, "--github-repo", "acme/serving", "--api-url", world.emu.url,
                 "--write-interval", "0", "--pr", str(pr), "--sha", sha, "--repo",
                 str(world.checkout), *extra])


def test_a_dispatch_naming_another_sha_is_refused(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run() == 0
    result = last_json(capsys.readouterr().out)
    assert gpu_cmd(world, "verify-pr", result["pr"], result["head_sha"]) == 0
    base = git(world.bare, "rev-parse", "main")
    assert gpu_cmd(world, "verify-pr", result["pr"], base) == 2
    err = capsys.readouterr().err
    assert f"refusing to gate '{base}'" in err and "is not the head of" in err
    statuses = len(world.emu.state.statuses)
    reports = world.checkout.parent / "reports"
    assert gpu_cmd(world, "report-gpu", result["pr"], base, "--reports", str(reports)) == 2
    assert len(world.emu.state.statuses) == statuses  # nothing reported on a refused SHA


def test_a_dispatch_for_a_human_pr_is_refused_unless_labelled_on_a_pull_request_event(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    world.emu.add_account(HUMAN, "mallory")
    sha = push_branch(world, "feature", "Mallory", "mallory@example.invalid")
    pr = api(world, "POST", "/pulls", HUMAN, title="tweak", head="feature", base="main")
    assert gpu_cmd(world, "verify-pr", pr["number"], sha) == 2
    assert "is not a bot PR" in capsys.readouterr().err
    assert gpu_cmd(world, "verify-pr", pr["number"], sha, "--allow-label", "gpu-gate") == 2
    api(world, "POST", f"/issues/{pr['number']}/labels", labels=["gpu-gate"])
    assert gpu_cmd(world, "verify-pr", pr["number"], sha, "--allow-label", "gpu-gate") == 0


def test_statuses_come_from_the_artifacts_read_as_data(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run() == 0
    result = last_json(capsys.readouterr().out)
    reports = world.checkout.parent / "reports"
    (reports / "gpu-gate-sm90").mkdir(parents=True)
    (reports / "gpu-gate-sm90" / "gate.json").write_text('{"passed": true}')
    (reports / "gpu-gate-multi-gpu").mkdir()
    (reports / "gpu-gate-multi-gpu" / "gate.json").write_text('{"passed": "@everyone"}')
    (reports / "gpu-gate-extra").mkdir()  # a job the base policy does not have: ignored
    (reports / "gpu-gate-extra" / "gate.json").write_text('{"passed": true}')
    assert gpu_cmd(world, "report-gpu", result["pr"], result["head_sha"], "--reports",
                   str(reports), "--target-url", "https://ci.example.invalid/run/5") == 0
    final = {s["context"]: (s["obj"]["state"], s["obj"]["description"])
             for s in world.emu.state.statuses if s["obj"]["state"] != "pending"
             and s["context"] != "pinbump/drift"}  # run's own status, not the artifacts'
    assert final == {"pinbump/gpu-gate/sm90": ("success", "gpu_tests passed"),
                     "pinbump/gpu-gate/multi-gpu": (
                         "failure", "unreadable result: gate.json has no boolean 'passed'")}
    assert world.gate(result["pr"]) == 1


def test_gate_and_status_speak_json(github_world: World,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    world = github_world
    pr, sha = world.bot_pr()
    capsys.readouterr()
    assert main(["status", "--github-repo", "acme/serving", "--api-url", world.emu.url,
                 "--write-interval", "0", "--sha", sha, "--context", REQUIRED[0],
                 "--state", "success", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "sha": sha, "context": REQUIRED[0], "state": "success", "target_url": "",
        "description": ""}
    assert world.gate(pr, "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["pr"], out["state"], out["sha"], out["exit_code"]) == (pr, "pending", sha, 0)
    assert out["passed"] == [REQUIRED[0]] and out["waiting"] == REQUIRED[1:]
    world.status(sha, REQUIRED[1], "failure")
    assert world.gate(pr, "--json") == 1
    out = json.loads(capsys.readouterr().out)
    assert out["state"] == "failure" and out["commented"] is True
    assert out["failing"] == [{"name": REQUIRED[1], "url": "https://ci.example.invalid/job/1"}]


# -- preflight and git errors (issue 16, item 7) ----------------------------------------------
def test_preflight_failure_leaves_the_remote_untouched(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    world.emu.accounts[TOKEN].permission = "read"
    assert world.run() == 2
    err = capsys.readouterr().err
    assert err.startswith("pinbump: error: preflight: the token lacks contents: write (push "
                          "the bot branch); pull-requests and issues: write") and \
        err.count("\n") == 1
    assert "pinbump" not in git(world.bare, "branch", "--list")
    assert world.emu.writes() == []


def test_unreachable_github_pushes_nothing(world: World, capsys: pytest.CaptureFixture[str]
                                           ) -> None:
    import socket

    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    assert main(["run", "--repo", str(world.checkout), "--github-repo", "acme/serving",
                 "--api-url", dead, "--write-interval", "0", "--index-url", world.pypi.url,
                 "--cache-dir", str(world.cache)]) == 2
    err = capsys.readouterr().err
    assert "pinbump: error: preflight: GitHub reading acme/serving failed: ConnectionError" \
        in err and "nothing was pushed" in err
    assert "pinbump" not in git(world.bare, "branch", "--list")


def test_git_errors_carry_all_of_git_stderr_without_the_token(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    hook = world.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'remote: protected branch hook declined' >&2\n"
                    f"echo 'remote: token {TOKEN} is not allowed here' >&2\nexit 1\n")
    hook.chmod(0o755)
    assert world.run() == 2
    err = capsys.readouterr().err
    line = err.strip().splitlines()[-1]
    assert line.startswith("pinbump: error: git push")
    assert "protected branch hook declined" in line and "is not allowed here" in line
    assert TOKEN not in err and "***" in line


LEGACY = ("from flashinfer.quantization.fp4 import legacy_quantize\n\n\n"
          "def old_path(x):\n    return legacy_quantize(x)\n")


GATE_JSON = Path(__file__).resolve().parents[1] / "gpu_tests" / "results" / \
    "2026-11-29-h200" / "ab-gate.json"  # a real GPU gate run, 0.6.8.post1 -> 0.6.11


def test_run_commits_the_codemod_apart_and_sets_the_drift_status(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run("--gate-report", str(GATE_JSON)) == 0
    result = last_json(capsys.readouterr().out)
    branch = "pinbump/flashinfer-0.6.11"
    log = git(world.bare, "log", "--format=%s", f"main..{branch}").splitlines()
    assert log == ["Pass 1 call by keyword for flashinfer-python 0.6.11",
                   "Bump flashinfer-python to 0.6.11"]
    message = git(world.bare, "log", "-1", "--format=%B", branch)
    assert "- python/sglang/srt/layers/fp4.py:5 flashinfer.fp4_quantize(enable_pdl, backend)" \
        in message
    codemod = git(world.bare, "show", "--format=", branch)  # the codemod commit alone
    assert "-    return _fq(x, s, 16, False, True, False, pdl, 'cuda')" in codemod
    assert "+    return _fq(x, s, 16, False, True, False, enable_pdl=pdl, backend='cuda')" \
        in codemod
    assert "flashinfer_python==" not in codemod  # the pins are in the first commit
    [status] = [s for s in world.emu.state.statuses if s["context"] == "pinbump/drift"]
    assert status["sha"] == result["head_sha"] and status["obj"]["state"] == "success"
    body = world.emu.state.items[result["pr"]]["body"]
    assert "Not ready" not in body
    visible = body[body.index("### API drift"):].split("<details>")[0]
    # the gate's observation diff and the shipped advisory, on the one fp4_quantize call
    where = ("[python/sglang/srt/layers/fp4.py:5](https://github.com/acme/serving/blob/"
             "pinbump/flashinfer-0.6.11/python/sglang/srt/layers/fp4.py#L5)")
    assert f"| review | {where} | `flashinfer.fp4_quantize` | GPU gate: recorded behaviour " \
           "changed | check the inputs this call passes: the GPU gate saw `global_scale[2]` " \
           "change" in visible
    assert "global_scale must have shape \\[1\\] or \\[num_tokens\\]" in visible
    writes = len(world.emu.writes())
    assert world.run("--gate-report", str(GATE_JSON)) == 0  # the same two commits: no push
    assert not last_json(capsys.readouterr().out)["pushed"]
    assert len(world.emu.writes()) == writes


@pytest.fixture
def legacy_world(tmp_path: Path, pypi: PypiServer, monkeypatch: pytest.MonkeyPatch):
    """0.6.11 removed a function the target calls: a breaking call no codemod can fix."""
    publish(pypi, "0.6.8.post1", FP4_OLD + "\n\ndef legacy_quantize(x):\n    return x\n",
            WS_OLD)
    publish(pypi, "0.6.11", FP4_NEW, WS_NEW)
    for v in ("4.4.2", "4.5.0"):
        pypi.add("nvidia-cutlass-dsl", v, uploaded=OLD)
    pypi.add("quack-kernels", "0.3.0", uploaded=OLD)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    w = World(tmp_path, pypi, {**TREE, "python/sglang/srt/layers/legacy.py": LEGACY})
    yield w
    w.close()
    assert w.emu.violations == [], "\n".join(w.emu.violations)


def test_unfixable_calls_put_a_banner_on_top_and_fail_the_gate(
        legacy_world: World, capsys: pytest.CaptureFixture[str]) -> None:
    world = legacy_world
    assert world.run() == 0
    result = last_json(capsys.readouterr().out)
    body = world.emu.state.items[result["pr"]]["body"]
    first = body.split("\n")[0:2]  # the banner is the first thing in the body
    assert first[0] == "> [!CAUTION]"
    assert first[1].startswith("> **Not ready: 1 call needs a hand fix** ")
    link = ("[python/sglang/srt/layers/legacy.py:5](https://github.com/acme/serving/blob/"
            "pinbump/flashinfer-0.6.11/python/sglang/srt/layers/legacy.py#L5)")
    assert f"> - {link} `flashinfer.quantization.fp4.legacy_quantize`:" in body
    html = cmarkgfm.github_flavored_markdown_to_html(body)
    assert "<strong>Not ready: 1 call needs a hand fix</strong>" in html
    sha = result["head_sha"]
    [status] = [s for s in world.emu.state.statuses if s["context"] == "pinbump/drift"]
    assert (status["sha"], status["obj"]["state"]) == (sha, "failure")
    assert status["obj"]["description"] == "1 call needs a hand fix"
    for context in GPU_JOBS:  # every GPU job passed: the drift status still holds it
        world.status(sha, context, "success")
    assert world.gate(result["pr"]) == 1
    assert world.emu.state.merges == []
    assert "`pinbump/drift`" in world.emu.state.comments[result["pr"]][-1]["body"]


def test_nightly_channel_reports_and_opens_no_pr(world: World,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """--channel nightly is an early warning: nothing is pushed and no PR is opened unless
    nightly-prs = true; the GPU gate is dispatched on the base's head (tests/
    test_nightly_gate.py has the rest)."""
    assert world.run("--channel", "nightly") == 0
    captured = capsys.readouterr()
    assert "--channel nightly: no branch and no PR" in captured.err
    assert not [i for i in world.emu.state.items.values() if i["pr"]]
    assert "pinbump" not in git(world.bare, "branch", "--list")
    [dispatch] = world.emu.state.dispatches
    assert dispatch["inputs"]["channel"] == "nightly" and "pr" not in dispatch["inputs"]


# -- merging by the repository's rules (issue 16, item 4) ------------------------------------
def test_branch_protection_requiring_a_review_blocks_the_merge_until_it_exists(
        github_world: World, capsys: pytest.CaptureFixture[str]) -> None:
    world = github_world
    world.emu.state.required_approvals = 1
    pr, sha = world.bot_pr()
    all_green(world, sha)
    assert world.gate(pr, "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["state"] == "blocked" and world.emu.state.merges == []
    world.emu.state.items[pr].setdefault("reviews", []).append(
        {"user": "maintainer", "state": "APPROVED", "commit_id": sha})
    assert world.gate(pr) == 0
    assert world.emu.state.merges == [{"number": pr, "sha": sha, "method": "squash"}]


def test_native_auto_merge_is_enabled_through_graphql(
        github_world: World, capsys: pytest.CaptureFixture[str]) -> None:
    world = github_world
    world.emu.state.auto_merge_allowed = True
    world.emu.state.required_approvals = 1  # GitHub, not pinbump, waits for the review
    pr, sha = world.bot_pr()
    all_green(world, sha)
    assert world.gate(pr, "--json") == 0
    assert json.loads(capsys.readouterr().out)["state"] == "auto-merge"
    auto = world.emu.state.items[pr]["auto_merge"]
    assert (auto["sha"], auto["method"]) == (sha, "SQUASH")
    assert world.emu.state.merges == []
    assert any("enablePullRequestAutoMerge" in q["query"] for q in world.emu.gql_log)
    assert world.gate(pr) == 0  # already on: not enabled twice
    assert sum("enablePullRequestAutoMerge" in q["query"] for q in world.emu.gql_log) == 1


def test_required_checks_from_any_ci_count(github_world: World,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A Buildkite status and a GitHub Actions check run, required by the base's config."""
    import requests

    world = github_world
    config = (world.checkout / "pinbump.toml").read_text()
    push_branch(world, "main", "dev", "dev@example.invalid",
                files={"pinbump.toml": 'required-checks = ["buildkite/sglang", "unit-tests"]\n'
                                       + config})
    git(world.checkout, "checkout", "--quiet", "main")
    git(world.checkout, "pull", "--quiet", "origin", "main")
    pr, sha = world.bot_pr()
    world.status(sha, "buildkite/sglang", "success")
    world.status(sha, "pinbump/drift", "success")
    assert world.gate(pr) == 0 and world.emu.state.merges == []  # unit-tests still missing
    r = requests.post(f"{world.emu.url}/repos/acme/serving/check-runs",
                      json={"name": "unit-tests", "head_sha": sha, "status": "completed",
                            "conclusion": "success"},
                      headers={"Authorization": f"token {TOKEN}"}, timeout=10)
    assert r.status_code == 201
    assert world.gate(pr) == 0
    assert [m["sha"] for m in world.emu.state.merges] == [sha]


def test_merge_queue_is_joined_only_when_pinbumps_own_checks_pass(
        github_world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """A base whose protection requires a merge queue, the repository's auto-merge setting
    off: GitHub refuses a REST merge there; the gate never tries one, and asks GitHub to merge
    when ready (which queues the PR) only once the GPU jobs and pinbump/drift are green on the
    head SHA."""
    import requests

    world = github_world
    world.emu.state.merge_queue = True
    pr, sha = world.bot_pr()
    refused = requests.put(f"{world.emu.url}/repos/acme/serving/pulls/{pr}/merge",
                           json={"sha": sha, "merge_method": "squash"}, timeout=10,
                           headers={"Authorization": f"token {TOKEN}"})
    assert refused.status_code == 405
    assert refused.json()["message"] == "Changes must be made through the merge queue"
    world.emu.log.clear()

    def enabled() -> int:
        return sum("enablePullRequestAutoMerge" in q["query"] for q in world.emu.gql_log)

    for context in GPU_JOBS:
        world.status(sha, context, "success")
    assert world.gate(pr, "--json") == 0  # drift not reported yet
    assert json.loads(capsys.readouterr().out)["state"] == "pending"
    world.status(sha, "pinbump/drift", "failure")
    assert world.gate(pr) == 1  # the GPU gate is green, drift is not
    assert enabled() == 0 and world.emu.state.queue == []
    world.status(sha, "pinbump/drift", "success")
    assert world.gate(pr, "--json") == 0
    assert json.loads(capsys.readouterr().out)["state"] == "auto-merge"
    assert [(e["number"], e["sha"]) for e in world.emu.state.queue] == [(pr, sha)]
    [query] = [q for q in world.emu.gql_log if "enablePullRequestAutoMerge" in q["query"]]
    assert query["variables"] == {"id": f"PR_{world.emu.state.items[pr]['id']}", "sha": sha}
    assert world.gate(pr) == 0  # already queued: not asked twice
    assert enabled() == 1
    assert not [entry for entry in world.emu.log if entry[1].endswith("/merge")]
    assert world.emu.state.merges == []


def test_auto_merge_pinned_to_a_stale_head_is_refused_with_githubs_reason(
        github_world: World) -> None:
    from bot.errors import GitHubError

    world = github_world
    world.emu.state.auto_merge_allowed = True
    pr, sha = world.bot_pr()
    with pytest.raises(GitHubError) as caught:
        world.client().auto_merge(pr, "0" * 40, "squash")
    assert str(caught.value) == (f"GitHub enabling auto-merge on #{pr} failed: HTTP 400: "
                                 "Head sha didn't match expected head sha")
    assert "auto_merge" not in world.emu.state.items[pr]
    assert world.client().auto_merge(pr, sha, "squash") is True
