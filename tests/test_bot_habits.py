"""The bot PR as maintainers expect it (issue 16): hand edits survive, a closed PR skips its
version, the branch is rebased by the repository's policy. Against the GitHub emulator, a
real bare remote and a real pypiserver."""

from __future__ import annotations

import pytest
from test_run_gate import (
    FP4_NEW,
    WS_NEW,
    World,
    api,
    git,
    last_json,
    publish,
    push_branch,
    worlds,
)

HUMAN = "ghp_maintainer_token_00000000000000"
world = pytest.fixture(worlds, name="world")


def hand_commit(world: World, branch: str) -> str:
    return push_branch(world, branch, "Dev", "dev@example.invalid", start=branch,
                       files={"HANDFIX.md": "a maintainer's fix\n"})


def test_hand_commit_survives_rerun(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run() == 0
    first = last_json(capsys.readouterr().out)
    fixed = hand_commit(world, first["branch"])
    for _ in range(2):
        assert world.run() == 0
        again = last_json(capsys.readouterr().out)
        assert again["pr"] == first["pr"] and not again["pushed"]
        assert git(world.bare, "rev-parse", f"refs/heads/{first['branch']}") == fixed
    assert world.emu.state.items[first["pr"]]["state"] == "open"


def test_hand_commit_survives_two_runs_even_where_the_policy_would_rebase(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """rebase-when = "behind" and the base moved: a branch with hand edits is still left as
    it is (it is rebased only on request), run after run."""
    config = (world.checkout / "pinbump.toml").read_text()
    push_branch(world, "main", "dev", "dev@example.invalid",
                files={"pinbump.toml": 'rebase-when = "behind"\n' + config})
    assert world.run() == 0
    first = last_json(capsys.readouterr().out)
    fixed = hand_commit(world, first["branch"])
    push_branch(world, "main", "dev", "dev@example.invalid",
                files={"README.md": "unrelated change on the base\n"})
    for _ in range(2):
        assert world.run() == 0
        captured = capsys.readouterr()
        again = last_json(captured.out)
        assert again["pr"] == first["pr"] and not again["pushed"]
        assert "has 1 hand commit(s): left as it is" in captured.err
        assert git(world.bare, "rev-parse", f"refs/heads/{first['branch']}") == fixed


def test_newer_target_with_hand_edits_is_held_back_and_commented_once(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run() == 0
    first = last_json(capsys.readouterr().out)
    fixed = hand_commit(world, first["branch"])
    publish(world.pypi, "0.6.12", FP4_NEW, WS_NEW)
    for _ in range(2):
        assert world.run() == 0
        held = last_json(capsys.readouterr().out)
        assert held["action"] == "held" and held["pr"] == first["pr"]
    assert git(world.bare, "rev-parse", f"refs/heads/{first['branch']}") == fixed
    assert "pinbump/flashinfer-0.6.12" not in git(world.bare, "branch", "--list")
    notes = [c["body"] for c in world.emu.state.comments.get(first["pr"], [])
             if "new target" in c["body"]]
    assert len(notes) == 1 and "`flashinfer-python` 0.6.12, is available" in notes[0]
    assert "/pinbump recreate" in notes[0]
    assert world.emu.state.items[first["pr"]]["state"] == "open"
    dashboard = world.emu.state.items[held["dashboard"]]["body"]
    assert "**Held back:** 0.6.12 is available, but #1 has hand edits" in dashboard
    assert world.run("--recreate") == 0  # what `/pinbump recreate` runs
    fresh = last_json(capsys.readouterr().out)
    assert fresh["action"] == "opened" and fresh["superseded"] == [first["pr"]]


def test_close_skips_the_version_until_a_newer_target(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run() == 0
    first = last_json(capsys.readouterr().out)
    world.emu.add_account(HUMAN, "maintainer")
    api(world, "PATCH", f"/pulls/{first['pr']}", HUMAN, state="closed")
    assert world.run() == 0
    captured = capsys.readouterr()
    skipped = last_json(captured.out)
    assert skipped["action"] == "ignored" and skipped["pr"] is None
    assert "flashinfer-python 0.6.11 is ignored (#1 was closed without merging" in \
        captured.err
    prs = [n for n, i in world.emu.state.items.items() if i["pr"]]
    assert prs == [first["pr"]] and world.emu.state.items[first["pr"]]["state"] == "closed"
    dashboard = world.emu.state.items[skipped["dashboard"]]["body"]
    assert "### Ignored versions" in dashboard and "`0.6.11`: #1 was closed without " \
        "merging: comment `/pinbump unignore` on it to undo" in dashboard
    publish(world.pypi, "0.6.12", FP4_NEW, WS_NEW)
    assert world.run() == 0
    newer = last_json(capsys.readouterr().out)
    assert newer["action"] == "opened" and newer["branch"] == "pinbump/flashinfer-0.6.12"


def test_a_superseded_pr_is_not_a_skip(world: World,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run() == 0
    publish(world.pypi, "0.6.12", FP4_NEW, WS_NEW)
    assert world.run() == 0
    second = last_json(capsys.readouterr().out)
    assert "pinbump-superseded" in world.emu.state.items[1]["labels"]
    dashboard = world.emu.state.items[second["dashboard"]]["body"]
    assert "Ignored versions" not in dashboard


def test_behind_base_is_rebased_only_when_the_policy_says(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run() == 0
    first = last_json(capsys.readouterr().out)
    push_branch(world, "main", "dev", "dev@example.invalid",
                files={"README.md": "unrelated change on the base\n"})
    assert world.run() == 0  # conflicted (the default): behind but clean, left alone
    assert not last_json(capsys.readouterr().out)["pushed"]
    assert git(world.bare, "rev-parse", f"refs/heads/{first['branch']}") == first["head_sha"]
    config = (world.checkout / "pinbump.toml").read_text()
    push_branch(world, "main", "dev", "dev@example.invalid",
                files={"pinbump.toml": 'rebase-when = "behind"\n' + config})
    assert world.run() == 0
    moved = last_json(capsys.readouterr().out)
    assert moved["pushed"]
    main = git(world.bare, "rev-parse", "main")
    assert git(world.bare, "merge-base", "main", first["branch"]) == main


def test_conflicted_base_is_rebased(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run() == 0
    first = last_json(capsys.readouterr().out)
    pyproject = (world.checkout / "python" / "pyproject.toml")
    git(world.checkout, "fetch", "--quiet", "origin", "main")
    git(world.checkout, "checkout", "--quiet", "--detach", "FETCH_HEAD")
    text = pyproject.read_text().replace("# keep it aligned", "# keep it ALIGNED")
    push_branch(world, "main", "dev", "dev@example.invalid",
                files={"python/pyproject.toml": text})
    assert world.emu.merge_state(first["pr"]) == (False, "dirty")
    assert world.run() == 0
    assert last_json(capsys.readouterr().out)["pushed"]
    assert world.emu.merge_state(first["pr"])[1] == "clean"


def test_rebase_keeps_hand_edits(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run() == 0
    first = last_json(capsys.readouterr().out)
    hand_commit(world, first["branch"])
    push_branch(world, "main", "dev", "dev@example.invalid",
                files={"README.md": "unrelated change on the base\n"})
    assert world.run("--rebase") == 0  # what `/pinbump rebase` runs
    assert last_json(capsys.readouterr().out)["pushed"]
    branch = first["branch"]
    assert git(world.bare, "merge-base", "--is-ancestor", "main", branch) == ""
    assert "HANDFIX.md" in git(world.bare, "ls-tree", "--name-only", branch)
    authors = git(world.bare, "log", "--format=%an", f"main..{branch}").splitlines()
    assert authors[0] == "Dev" and set(authors[1:]) == {"pinbump[bot]"}


def install_app(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """An App installed on the emulated repository, its private key in $PINBUMP_APP_KEY."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from github_emulator import EmulatedApp

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    world.emu.app = EmulatedApp("4242", public.decode())
    monkeypatch.delenv("GITHUB_TOKEN")
    monkeypatch.setenv("PINBUMP_APP_KEY", private)


def test_app_auth_exchanges_a_jwt_for_an_installation_token(
        world: World, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    install_app(world, monkeypatch)
    assert world.run("--app-id", "4242") == 0
    captured = capsys.readouterr()
    result = last_json(captured.out)
    assert result["action"] == "opened"
    assert world.emu.state.items[result["pr"]]["author"] == "pinbump-app[bot]"
    calls = [(m, p, s) for m, p, s in world.emu.log if "install" in p]
    assert calls == [("GET", "/repos/acme/serving/installation", 200),
                     ("POST", "/app/installations/77/access_tokens", 201)]
    assert world.emu.app is not None
    [token] = world.emu.app.tokens
    assert token not in captured.out + captured.err and "PRIVATE KEY" not in captured.err
    monkeypatch.setenv("PINBUMP_APP_KEY", "not a key")
    assert world.run("--app-id", "4242") == 2
    err = capsys.readouterr().err
    assert "the private key is not a usable PEM RSA key" in err and err.count("\n") == 1


def test_app_lacking_a_permission_fails_preflight_before_any_push(
        world: World, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """An installation token says what it may do: one that cannot write pull requests stops
    the run before the branch is pushed (a PAT cannot say, the preflight's REST checks
    remain for it)."""
    install_app(world, monkeypatch)
    assert world.emu.app is not None
    world.emu.app.permissions.update(pull_requests="read")
    del world.emu.app.permissions["actions"]
    assert world.run("--app-id", "4242") == 2
    err = capsys.readouterr().err
    assert err == ("pinbump: error: preflight: GitHub App 4242 lacks pull_requests: write, "
                   "actions: write on acme/serving (grant it in the App's settings and accept "
                   "it on the installation); nothing was changed\n")
    assert "pinbump" not in git(world.bare, "branch", "--list")
    assert world.emu.writes() == [("POST", "/app/installations/77/access_tokens", 201)]


def test_rebase_when_policy_table() -> None:
    """(rebase-when, GitHub's mergeable_state, base moved) -> rebased without being asked."""
    from bot.core.chatops import rebase_needed

    rows = [("conflicted", "dirty", True, True), ("conflicted", "behind", True, False),
            ("conflicted", "clean", False, False), ("behind", "behind", True, True),
            ("behind", "clean", False, False), ("never", "dirty", True, False),
            ("never", "behind", True, False)]
    assert [rebase_needed(w, s, b) for w, s, b, _ in rows] == [r[3] for r in rows]


# -- the target's CI governance (issue 16, item 9) --------------------------------------------
GOVERNED = ('extra-labels = ["run-ci", "ready"]\nci-comment = "/tag-and-rerun-ci"\n'
            'rebase-when = "behind"\n')


def ci_comments(world: World, number: int) -> list[str]:
    return [c["body"] for c in world.emu.state.comments.get(number, [])
            if c["body"].startswith(("/tag", "@"))]


def test_extra_labels_and_ci_comment_follow_each_push(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    config = (world.checkout / "pinbump.toml").read_text()
    push_branch(world, "main", "dev", "dev@example.invalid",
                files={"pinbump.toml": GOVERNED + config})
    assert world.run() == 0
    first = last_json(capsys.readouterr().out)
    pr = first["pr"]
    assert {"run-ci", "ready", "dependencies"} <= set(world.emu.state.items[pr]["labels"])
    assert ci_comments(world, pr) == ["/tag-and-rerun-ci"]
    assert world.run() == 0  # nothing pushed: no CI trigger
    assert not last_json(capsys.readouterr().out)["pushed"]
    assert ci_comments(world, pr) == ["/tag-and-rerun-ci"]
    push_branch(world, "main", "dev", "dev@example.invalid",
                files={"README.md": "unrelated change on the base\n"})
    assert world.run() == 0  # the base moved, rebase-when = "behind": a new push
    moved = last_json(capsys.readouterr().out)
    assert moved["pushed"] and moved["action"] == "updated" and moved["pr"] == pr
    assert ci_comments(world, pr) == ["/tag-and-rerun-ci"] * 2
    labels = world.emu.state.items[pr]["labels"]
    assert {"run-ci", "ready"} <= set(labels) and len(labels) == len(set(labels))


def test_ci_comment_comes_only_from_the_base_config(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """A hand commit on the bot branch that rewrites ci-comment changes nothing: the comment
    is the base branch's config, posted verbatim."""
    config = (world.checkout / "pinbump.toml").read_text()
    push_branch(world, "main", "dev", "dev@example.invalid",
                files={"pinbump.toml": GOVERNED + config})
    assert world.run() == 0
    first = last_json(capsys.readouterr().out)
    hostile = GOVERNED.replace("/tag-and-rerun-ci", "@everyone <img src=x onerror=alert(1)>")
    push_branch(world, first["branch"], "Dev", "dev@example.invalid", start=first["branch"],
                files={"pinbump.toml": hostile + config})
    push_branch(world, "main", "dev", "dev@example.invalid",
                files={"README.md": "unrelated change on the base\n"})
    assert world.run("--rebase") == 0
    assert last_json(capsys.readouterr().out)["pushed"]
    assert ci_comments(world, first["pr"]) == ["/tag-and-rerun-ci"] * 2
    assert not any("@everyone" in c["body"] for c in world.emu.state.comments[first["pr"]])
