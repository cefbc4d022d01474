"""Hostile text in the places a command is read from (a comment, a ticked dashboard box, a bot
branch's name): only a PEP 440 version, normalized, ever leaves them; a shell fragment, an
option, a mention or Markdown becomes no version at all."""

from __future__ import annotations

import pytest

from bot.core.chatops import (
    checked_commands,
    ignored_marks,
    ignored_versions,
    parse_command,
    untick,
    version_of,
)

HOSTILE = ["0.6.12; rm -rf ~", "--index-url=https://evil.example/simple", "@acme/admins",
           "0.6.12 @acme/admins", "`0.6.12`", "[x](https://evil.example)", "0.6.12 -->",
           "$(touch pwned)", "0.6.12\n/pinbump recreate", "../../etc/passwd", "1" * 80]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_version_in_a_comment_is_no_version(text: str) -> None:
    command = parse_command(f"/pinbump ignore {text}")
    assert command is not None
    assert command.version is None or command.version == "0.6.12"
    if command.version is None:
        assert command.verb == "unknown" and len(command.text) <= 40


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_version_in_a_ticked_box_commands_nothing(text: str) -> None:
    body = f"- [x] <!-- pinbump:do ignore {text} --> Ignore it\n"
    commands = checked_commands(body)
    assert all(c.version in (None, "0.6.12") for c in commands)
    assert untick(body).startswith("- [ ] <!-- pinbump:do ignore ")


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_bot_branch_name_is_no_version(text: str) -> None:
    """A fork PR's head branch is the fork owner's to name: ``/pinbump ignore`` on it must not
    echo ``@acme/admins`` (a mention) or anything else that is not a version."""
    prefix = "pinbump/flashinfer-"
    assert version_of(prefix + text, prefix) is None
    assert ignored_marks([text]) == []


def test_a_bot_branch_names_its_version_normalized() -> None:
    prefix = "pinbump/flashinfer-"
    assert version_of(prefix + "0.6.11", prefix) == "0.6.11"
    assert version_of(prefix + "0.6.8-post1", prefix) == "0.6.8.post1"
    assert version_of("feature/x", prefix) is None
    assert ignored_versions([], prefix, "<!-- pinbump:ignored 0.6.12; rm -rf -->") == {}
