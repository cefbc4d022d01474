"""Maintainers' commands on the bot PR (issue 16, item 5): `/pinbump ...` comments from a
collaborator and from an outsider, and the dashboard's checkboxes; against the GitHub
emulator, a real bare remote and a real pypiserver."""

from __future__ import annotations

import json
import re

import pytest
from test_run_gate import FP4_NEW, WS_NEW, World, api, git, last_json, publish, push_branch, worlds

from bot.cli import main

MAINTAINER = "ghp_maintainer_token_11111111111111"
OUTSIDER = "ghp_outsider_token_2222222222222222"
world = pytest.fixture(worlds, name="world")


@pytest.fixture
def people(world: World) -> World:
    world.emu.add_account(MAINTAINER, "maintainer", permission="write")
    world.emu.add_account(OUTSIDER, "passerby", permission="read")
    return world


def say(world: World, number: int, body: str, token: str = MAINTAINER) -> int:
    return api(world, "POST", f"/issues/{number}/comments", token, body=body)["id"]


def command(world: World, *extra: str) -> int:
    assert world.pypi is not None
    return main(["command", "--repo", str(world.checkout), "--github-repo", "acme/serving",
                 "--api-url", world.emu.url, "--write-interval", "0", "--index-url",
                 world.pypi.url, "--cache-dir", str(world.cache), "--json", *extra])


def opened(world: World, capsys: pytest.CaptureFixture[str]) -> dict:
    assert world.run() == 0
    return last_json(capsys.readouterr().out)


def replies(world: World, number: int) -> list[str]:
    return [c["body"] for c in world.emu.state.comments.get(number, [])
            if "pinbump:reply" in c["body"] or "pinbump:refused" in c["body"]]


def test_outsider_command_is_refused_politely_once(
        people: World, capsys: pytest.CaptureFixture[str]) -> None:
    pr = opened(people, capsys)["pr"]
    for _ in range(2):
        assert command(people, "--comment-id", str(say(people, pr, "/pinbump recreate",
                                                        OUTSIDER))) == 0
        assert json.loads(capsys.readouterr().out)[0]["state"] == "refused"
    [refusal] = replies(people, pr)
    assert "only from people with write access" in refusal
    assert people.emu.state.dispatches[-1]["inputs"]["pr"] == str(pr)  # nothing else ran
    assert len(people.emu.state.dispatches) == 1


def test_gate_command_redispatches(people: World, capsys: pytest.CaptureFixture[str]) -> None:
    first = opened(people, capsys)
    assert command(people, "--comment-id", str(say(people, first["pr"], "/pinbump gate"))) == 0
    assert json.loads(capsys.readouterr().out)[0]["state"] == "done"
    assert people.emu.state.dispatches[-1] == {
        "workflow": "pinbump-gpu-gate.yml", "ref": "main",
        "inputs": {"pr": str(first["pr"]), "sha": first["head_sha"]}}
    assert len(people.emu.state.dispatches) == 2
    assert "re-dispatched" in replies(people, first["pr"])[0]


def test_ignore_this_version_then_unignore(people: World,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    first = opened(people, capsys)
    pr = first["pr"]
    assert command(people, "--comment-id",
                   str(say(people, pr, "/pinbump ignore this version"))) == 0
    capsys.readouterr()
    assert people.emu.state.items[pr]["state"] == "closed"
    assert people.run() == 0
    assert last_json(capsys.readouterr().out)["action"] == "ignored"
    assert command(people, "--comment-id", str(say(people, pr, "/pinbump unignore"))) == 0
    capsys.readouterr()
    assert "pinbump-unignored" in people.emu.state.items[pr]["labels"]
    assert people.run() == 0
    again = last_json(capsys.readouterr().out)
    assert again["action"] == "opened" and again["branch"] == first["branch"]


def test_ignore_a_version_from_the_dashboard(people: World,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    first = opened(people, capsys)
    dash = first["dashboard"]
    publish(people.pypi, "0.6.12", FP4_NEW, WS_NEW)
    assert command(people, "--comment-id", str(say(people, dash, "/pinbump ignore 0.6.12"))) == 0
    capsys.readouterr()
    assert "<!-- pinbump:ignored 0.6.12 -->" in people.emu.state.items[dash]["body"]
    assert people.run() == 0
    out = last_json(capsys.readouterr().out)
    assert out["action"] == "ignored"
    body = people.emu.state.items[dash]["body"]
    assert "<!-- pinbump:ignored 0.6.12 -->" in body  # carried forward by the run
    assert "`0.6.12`: ignored by command: comment `/pinbump unignore 0.6.12`" in body


def test_recreate_command_drops_hand_edits(people: World,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    first = opened(people, capsys)
    fixed = push_branch(people, first["branch"], "Dev", "dev@example.invalid",
                        start=first["branch"], files={"HANDFIX.md": "fix\n"})
    assert command(people, "--comment-id",
                   str(say(people, first["pr"], "/pinbump recreate"))) == 0
    assert json.loads(capsys.readouterr().out)[0]["state"] == "done"
    head = git(people.bare, "rev-parse", f"refs/heads/{first['branch']}")
    assert head != fixed
    assert "HANDFIX.md" not in git(people.bare, "ls-tree", "--name-only", head)


def test_rebase_command_keeps_hand_edits(people: World,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    first = opened(people, capsys)
    branch = first["branch"]
    push_branch(people, branch, "Dev", "dev@example.invalid", start=branch,
                files={"HANDFIX.md": "fix\n"})
    base = push_branch(people, "main", "dev", "dev@example.invalid",
                       files={"README.md": "unrelated change on the base\n"})
    assert command(people, "--comment-id",
                   str(say(people, first["pr"], "/pinbump rebase"))) == 0
    [done] = json.loads(capsys.readouterr().out)
    assert (done["verb"], done["state"]) == ("rebase", "done")
    head = git(people.bare, "rev-parse", f"refs/heads/{branch}")
    assert git(people.bare, "merge-base", head, "main") == base  # on the moved base
    assert "HANDFIX.md" in git(people.bare, "ls-tree", "--name-only", head)
    assert f"`/pinbump rebase`: updated at `{head[:12]}`." in replies(people, first["pr"])[0]


def test_explain_command_replies_with_the_plans_reasons(
        people: World, capsys: pytest.CaptureFixture[str]) -> None:
    pr = opened(people, capsys)["pr"]
    assert command(people, "--comment-id", str(say(people, pr, "/pinbump explain"))) == 0
    [reply] = replies(people, pr)
    assert "`flashinfer-python` `==0.6.8.post1` → `==0.6.11`" in reply
    assert "`nvidia-cutlass-dsl`" in reply


def test_unknown_command_gets_the_list(people: World,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    pr = opened(people, capsys)["pr"]
    assert command(people, "--comment-id", str(say(people, pr, "/pinbump merge now"))) == 0
    assert json.loads(capsys.readouterr().out)[0]["state"] == "unknown"
    assert "does not know `/pinbump merge`" in replies(people, pr)[0]


def test_dashboard_checkbox_runs_the_command_once(
        people: World, capsys: pytest.CaptureFixture[str]) -> None:
    first = opened(people, capsys)
    dash = first["dashboard"]
    body = people.emu.state.items[dash]["body"]
    assert "- [ ] <!-- pinbump:do gate -->" in body
    api(people, "PATCH", f"/issues/{dash}", MAINTAINER,
        body=body.replace("- [ ] <!-- pinbump:do gate -->", "- [x] <!-- pinbump:do gate -->"))
    for expected in (1, 0):
        assert command(people, "--dashboard", "--sender", "maintainer") == 0
        assert len(json.loads(capsys.readouterr().out)) == expected
    assert len(people.emu.state.dispatches) == 2
    assert "- [ ] <!-- pinbump:do gate -->" in people.emu.state.items[dash]["body"]


# -- the dashboard's boxes: every command, the ticker's permission, unticked once done ------
TRIAGER = "ghp_triager_token_33333333333333333"


def tick(world: World, dash: int, marker: str, token: str = MAINTAINER) -> None:
    """Tick the box whose hidden marker is ``marker`` (e.g. ``ignore 0.6.11``), as GitHub's
    task list does: an ``issues`` ``edited`` event whose sender is the token's account."""
    body = world.emu.state.items[dash]["body"]
    box = f"- [ ] <!-- pinbump:do {marker} -->"
    assert box in body, body
    api(world, "PATCH", f"/issues/{dash}", token, body=body.replace(box, box.replace("[ ]", "[x]")))


def boxes(world: World, dash: int) -> list[str]:
    return re.findall(r"- \[[ xX]\] <!-- pinbump:do ([^>]*?) -->",
                      world.emu.state.items[dash]["body"])


def dashboard_command(world: World, sender: str, capsys: pytest.CaptureFixture[str]) -> list:
    assert command(world, "--dashboard", "--sender", sender) == 0
    return json.loads(capsys.readouterr().out)


def test_dashboard_ignore_checkbox_ignores_the_target(
        people: World, capsys: pytest.CaptureFixture[str]) -> None:
    first = opened(people, capsys)
    dash, pr = first["dashboard"], first["pr"]
    assert boxes(people, dash) == ["recreate", "rebase", "gate", "explain", "ignore 0.6.11"]
    tick(people, dash, "ignore 0.6.11")
    [done] = dashboard_command(people, "maintainer", capsys)
    assert (done["verb"], done["state"]) == ("ignore", "done")
    assert people.emu.state.items[pr]["state"] == "closed"
    assert "Closed: ignoring 0.6.11" in people.emu.state.comments[pr][-1]["body"]
    assert "ignoring 0.6.11" in replies(people, dash)[0]
    assert "[x]" not in people.emu.state.items[dash]["body"]  # unticked
    assert people.run() == 0
    assert last_json(capsys.readouterr().out)["action"] == "ignored"
    assert boxes(people, dash) == ["recreate", "rebase", "gate", "explain", "unignore 0.6.11"]
    assert [n for n, i in people.emu.state.items.items() if i["pr"]] == [pr]  # no new PR


def test_dashboard_unignore_checkbox_names_its_version(
        people: World, capsys: pytest.CaptureFixture[str]) -> None:
    first = opened(people, capsys)
    dash = first["dashboard"]
    tick(people, dash, "ignore 0.6.11")
    dashboard_command(people, "maintainer", capsys)
    publish(people.pypi, "0.6.12", FP4_NEW, WS_NEW)
    second = opened(people, capsys)
    assert second["branch"] == "pinbump/flashinfer-0.6.12"
    tick(people, dash, "ignore 0.6.12")
    dashboard_command(people, "maintainer", capsys)
    assert people.run() == 0
    assert last_json(capsys.readouterr().out)["action"] == "ignored"
    assert boxes(people, dash)[-2:] == ["unignore 0.6.11", "unignore 0.6.12"]
    tick(people, dash, "unignore 0.6.12")  # the newer one only
    [done] = dashboard_command(people, "maintainer", capsys)
    assert done["verb"] == "unignore" and "0.6.12 is no longer ignored" in done["reply"]
    assert "pinbump-unignored" in people.emu.state.items[second["pr"]]["labels"]
    assert "pinbump-unignored" not in people.emu.state.items[first["pr"]]["labels"]
    again = opened(people, capsys)
    assert again["action"] == "opened" and again["branch"] == "pinbump/flashinfer-0.6.12"
    body = people.emu.state.items[dash]["body"]
    assert "- `0.6.11`: #1 was closed without merging" in body and "- `0.6.12`:" not in body
    assert "unignore 0.6.11" in boxes(people, dash)


def test_dashboard_explain_checkbox_replies_with_reasons(
        people: World, capsys: pytest.CaptureFixture[str]) -> None:
    first = opened(people, capsys)
    dash = first["dashboard"]
    tick(people, dash, "explain")
    [done] = dashboard_command(people, "maintainer", capsys)
    assert (done["verb"], done["number"], done["state"]) == ("explain", dash, "done")
    [reply] = replies(people, dash)  # on the dashboard, where the box was ticked
    assert "`flashinfer-python` `==0.6.8.post1` → `==0.6.11`" in reply
    assert replies(people, first["pr"]) == []
    assert "- [ ] <!-- pinbump:do explain -->" in people.emu.state.items[dash]["body"]


def test_dashboard_checkbox_from_outsider_is_refused_once(
        people: World, capsys: pytest.CaptureFixture[str]) -> None:
    people.emu.add_account(TRIAGER, "triager", permission="triage")
    first = opened(people, capsys)
    dash, pr = first["dashboard"], first["pr"]
    writes = len(people.emu.writes())
    for _ in range(2):
        tick(people, dash, "ignore 0.6.11", TRIAGER)
        tick(people, dash, "gate", TRIAGER)
        results = dashboard_command(people, "triager", capsys)
        assert [(r["verb"], r["state"]) for r in results] == [("gate", "refused"),
                                                              ("ignore", "refused")]
        assert "[x]" not in people.emu.state.items[dash]["body"]  # unticked
    [refusal] = replies(people, dash)
    assert "only from people with write access" in refusal and "pinbump:refused triager" \
        in refusal
    assert people.emu.state.items[pr]["state"] == "open"  # nothing ran
    assert "pinbump:ignored" not in people.emu.state.items[dash]["body"]
    assert len(people.emu.state.dispatches) == 1
    assert len(people.emu.writes()) == writes + 4 + 2 + 1  # ticks, unticks, one refusal


# -- red team: an issue that imitates the dashboard commands nothing -------------------------
def imitation(world: World, token: str, body: str, labels: list[str]) -> int:
    """An issue with the dashboard's title (and, from a triager, its label), not the bot's."""
    from bot.core.prbody import DASHBOARD_TITLE

    return int(api(world, "POST", "/issues", token, title=DASHBOARD_TITLE, body=body,
                   labels=labels)["number"])


def test_an_imitation_dashboard_ignores_nothing_and_is_never_edited(
        people: World, capsys: pytest.CaptureFixture[str]) -> None:
    """A triager (no write access) opens the dashboard's title with its label before the bot
    ever made one, carrying an ignored-version marker: the bot's dashboard is its own."""
    people.emu.add_account(TRIAGER, "triager", permission="triage")
    fake = imitation(people, TRIAGER, "<!-- pinbump:ignored 0.6.11 -->\n"
                     "- [x] <!-- pinbump:do ignore 0.6.11 --> x", ["pinbump"])
    before = dict(people.emu.state.items[fake])
    first = opened(people, capsys)
    assert first["action"] == "opened" and first["branch"] == "pinbump/flashinfer-0.6.11"
    assert first["dashboard"] != fake
    assert people.emu.state.items[first["dashboard"]]["author"] != "triager"
    assert people.emu.state.items[fake] == before  # never edited
    assert dashboard_command(people, "maintainer", capsys) == []  # its box commands nothing
    assert people.emu.state.items[first["pr"]]["state"] == "open"


def test_an_outsider_editing_their_own_issue_leaves_a_maintainers_box_alone(
        people: World, capsys: pytest.CaptureFixture[str]) -> None:
    """The ``issues`` ``edited`` event of an issue an outsider opened with the dashboard's
    title: nothing is unticked, nobody refused; the maintainer's own run then does the box."""
    first = opened(people, capsys)
    dash = first["dashboard"]
    tick(people, dash, "gate")
    fake = imitation(people, OUTSIDER, "- [x] <!-- pinbump:do gate --> x", [])
    assert command(people, "--dashboard", "--sender", "passerby", "--issue", str(fake)) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert "- [x] <!-- pinbump:do gate -->" in people.emu.state.items[dash]["body"]
    assert replies(people, dash) == [] and replies(people, fake) == []
    assert command(people, "--dashboard", "--sender", "maintainer", "--issue", str(dash)) == 0
    [done] = json.loads(capsys.readouterr().out)
    assert (done["verb"], done["state"]) == ("gate", "done")
    assert len(people.emu.state.dispatches) == 2
