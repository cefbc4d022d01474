"""The gate's identity rules and the GPU result reader: pure decisions over data."""

from __future__ import annotations

import json

import pytest

from bot.core.botpr import (
    BOT_GIT_EMAIL,
    BOT_GIT_NAME,
    CommitAuthor,
    bot_branch,
    gate_target_problems,
    hand_commits,
    not_bot_reasons,
)
from bot.core.config import Policy, parse_config
from bot.core.decisions import decide
from bot.core.gpu_result import read_result
from bot.core.models import PullInfo
from bot.errors import ConfigError, InputError

BOT = "pinbump-bot"
SHA = "a" * 40
PR = PullInfo(7, "pinbump/flashinfer-0.6.11", SHA, "Bump", "", "open", False, (), "",
              author=BOT, head_repo="acme/serving", base_repo="acme/serving")
MINE = CommitAuthor(SHA, BOT_GIT_NAME, BOT_GIT_EMAIL, None)


@pytest.mark.parametrize(("change", "commits", "reason"), [
    ({}, [MINE], None),
    ({"head_ref": "feature"}, [MINE], "'feature' is not a pinbump/* branch"),
    ({"head_repo": "mallory/serving"}, [MINE], "lives in mallory/serving, not in acme/serving"),
    ({"head_repo": ""}, [MINE], "lives in a deleted repository"),
    ({"author": "mallory"}, [MINE], "opened by 'mallory', not by the bot"),
    ({}, [MINE, CommitAuthor("b" * 40, "Dev", "dev@x.invalid", "dev")], "1 commit(s) not "
                                                                          "made by the bot"),
    ({}, [CommitAuthor("c" * 40, BOT_GIT_NAME, BOT_GIT_EMAIL, "mallory")], "not made by"),
    ({}, [], "GitHub lists no commits"),
], ids=["bot", "branch", "fork", "deleted-fork", "author", "hand-commit", "forged-identity",
        "no-commits"])
def test_not_bot_reasons(change: dict, commits: list[CommitAuthor], reason: str | None
                         ) -> None:
    from dataclasses import replace

    reasons = not_bot_reasons(replace(PR, **change), commits, BOT)
    if reason is None:
        assert reasons == []
    else:
        assert any(reason in r for r in reasons), reasons


def test_hand_commits_are_those_the_bot_did_not_make() -> None:
    other = CommitAuthor("d" * 40, "Dev", "dev@x.invalid", None)
    assert hand_commits([MINE, other, MINE], BOT) == [other]


@pytest.mark.parametrize(("change", "sha", "label", "problem"), [
    ({}, SHA, None, None),
    ({}, "b" * 40, None, "is not the head of #7"),
    ({"state": "closed"}, SHA, None, "#7 is closed"),
    ({"head_repo": "mallory/serving"}, SHA, "gpu-gate", "comes from mallory/serving"),
    ({"author": "mallory", "head_ref": "x"}, SHA, None, "is not a bot PR"),
    ({"author": "mallory", "head_ref": "x", "labels": ("gpu-gate",)}, SHA, "gpu-gate", None),
    ({"author": "mallory", "head_ref": "x", "labels": ("gpu-gate",)}, SHA, None, "not a bot"),
], ids=["head", "stale-sha", "closed", "fork-even-labelled", "human-dispatch",
        "labelled-pull-request", "labelled-but-dispatched"])
def test_gate_target_problems(change: dict, sha: str, label: str | None,
                              problem: str | None) -> None:
    from dataclasses import replace

    problems = gate_target_problems(replace(PR, **change), sha, [MINE], BOT, allow_label=label)
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


def test_a_version_that_cannot_name_a_branch_is_an_input_error() -> None:
    assert bot_branch("flashinfer", "0.6.11") == "pinbump/flashinfer-0.6.11"
    with pytest.raises(InputError, match=r"target version '0\.6\.9999.*\(600 chars\)' cannot "
                                         r"name a branch"):
        bot_branch("flashinfer", "0.6." + "9" * 596)
    with pytest.raises(InputError):
        bot_branch("flashinfer", "0.6.11/../../x")


@pytest.mark.parametrize(("raw", "state", "words"), [
    (json.dumps({"passed": True}).encode(), "success", "gpu_tests passed"),
    (json.dumps({"passed": False, "note": "@everyone"}).encode(), "failure", "gpu_tests failed"),
    (None, "failure", "no result"),
    (b"\xff\xfe", "failure", "not JSON"),
    (b"[1, 2]", "failure", "no boolean 'passed'"),
    (json.dumps({"passed": "yes"}).encode(), "failure", "no boolean 'passed'"),
    (b"[" * 100_000, "failure", "not JSON"),
    (b" " * (2 << 20), "failure", "over 1 MiB"),
], ids=["passed", "failed", "missing", "binary", "not-object", "string-passed", "deep",
        "huge"])
def test_gpu_result_is_read_as_data(raw: bytes | None, state: str, words: str) -> None:
    result = read_result("sm90", raw)
    assert (result.job, result.state) == ("sm90", state)
    assert words in result.description


def test_an_empty_required_set_is_an_error_wherever_it_comes_from() -> None:
    policy = parse_config({"runner-labels": {}}, "pinbump.toml")
    with pytest.raises(ConfigError, match=r"pinbump\.toml: no required checks"):
        policy.checks_required  # noqa: B018
    assert parse_config({"runner-labels": {}, "required-checks": ["ci/x"]},
                        "pinbump.toml").checks_required == ("ci/x",)
    with pytest.raises(ConfigError, match="no required checks"):
        decide([], [])
    assert Policy().checks_required  # the defaults require the GPU jobs


def test_bot_login_is_a_policy_key() -> None:
    assert parse_config({"bot-login": "github-actions[bot]"}, "pinbump.toml").bot_login == \
        "github-actions[bot]"
    with pytest.raises(ConfigError, match="'bot-login' must be a GitHub login"):
        parse_config({"bot-login": 3}, "pinbump.toml")
