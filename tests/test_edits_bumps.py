"""What moves in an apply: the bumps a plan makes (each changed pin, the lockstep packages
following the lead, every old version as the target wrote it), merged with those of an
interrupted apply, and the journal they are written to before any file is."""

from __future__ import annotations

from typing import Any

import pytest

from bot.core.config import BUILTIN_GROUPS
from bot.core.discovery import parse_requirements
from bot.core.edits import Bump, bumps_from_intent, bumps_from_plan, bumps_to_intent, merge_bumps
from bot.core.models import Change, Pin, Plan
from bot.errors import ApplyError

GROUP = BUILTIN_GROUPS["flashinfer"]
NAMES = set(GROUP.members)


def pins(text: str, path: str = "requirements.txt") -> tuple[Pin, ...]:
    return tuple(parse_requirements(text, path, NAMES))


def change(package: str, current: str, target: str, requirements: str) -> Change:
    found = pins(requirements)
    return Change(package, current, target, "", "", found, "newer")


def plan(lead_current: str, lead_target: str, *changes: Change) -> Plan:
    return Plan("flashinfer", GROUP.lead, lead_current, lead_target, list(changes))


def as_tuples(bumps: list[Bump]) -> list[tuple[str, list[str], str]]:
    return [(b.package, sorted(b.old), b.new) for b in bumps]


@pytest.mark.parametrize(("the_plan", "expected"), [
    # the lead moves: its lockstep packages follow it, companions move on their own
    (plan("0.6.8.post1", "0.6.11",
          change("flashinfer-python", "0.6.8.post1", "0.6.11", "flashinfer-python==0.6.8.post1\n"),
          change("nvidia-cutlass-dsl", "4.4.2", "4.5.0", "nvidia-cutlass-dsl>=4.4.2,<5\n")),
     [("flashinfer-python", ["0.6.8.post1"], "0.6.11"),
      ("nvidia-cutlass-dsl", ["4.4.2"], "4.5.0"),
      ("flashinfer-cubin", ["0.6.8.post1"], "0.6.11"),
      ("flashinfer-jit-cache", ["0.6.8.post1"], "0.6.11")]),
    # a version written in another spelling than the normalized current one moves too
    (plan("0.6.8.post1", "0.6.11",
          change("flashinfer-python", "0.6.8.post1", "0.6.11",
                 "flashinfer-python==0.6.8post1 ; sys_platform == 'linux'\n")),
     [("flashinfer-python", ["0.6.8.post1", "0.6.8post1"], "0.6.11"),
      ("flashinfer-cubin", ["0.6.8.post1", "0.6.8post1"], "0.6.11"),
      ("flashinfer-jit-cache", ["0.6.8.post1", "0.6.8post1"], "0.6.11")]),
    # a partly bumped tree: one file already at the target, one older; the lead's current
    # comes from the plan when the change has none
    (plan("0.6.8.post1", "0.6.11",
          change("flashinfer-python", "", "0.6.11",
                 "flashinfer-python==0.6.11\nflashinfer-python>=0.6.9\n")),
     [("flashinfer-python", ["0.6.8.post1", "0.6.9"], "0.6.11"),
      ("flashinfer-cubin", ["0.6.8.post1", "0.6.9"], "0.6.11"),
      ("flashinfer-jit-cache", ["0.6.8.post1", "0.6.9"], "0.6.11")]),
    # a compatible-release pin names no old version to replace
    (plan("0.6.11", "0.6.11",
          change("nvidia-cutlass-dsl", "", "4.5.0", "nvidia-cutlass-dsl~=4.4\n")), []),
    # the lead stays: a companion moves alone, lockstep packages stay
    (plan("0.6.11", "0.6.11",
          change("nvidia-cutlass-dsl", "4.4.2", "4.5.0", "nvidia-cutlass-dsl==4.4.2\n")),
     [("nvidia-cutlass-dsl", ["4.4.2"], "4.5.0")]),
    # a change already at its target in every file moves nothing
    (plan("0.6.11", "0.6.11",
          change("nvidia-cutlass-dsl", "4.5.0", "4.5.0", "nvidia-cutlass-dsl==4.5.0\n")), []),
    # the lead's current version only from the plan (its pins not exact): lockstep follows
    (plan("0.6.8.post1", "0.6.11"),
     [("flashinfer-python", ["0.6.8.post1"], "0.6.11"),
      ("flashinfer-cubin", ["0.6.8.post1"], "0.6.11"),
      ("flashinfer-jit-cache", ["0.6.8.post1"], "0.6.11")]),
])
def test_bumps_from_plan(the_plan: Plan, expected: list[tuple[str, list[str], str]]) -> None:
    assert as_tuples(bumps_from_plan(the_plan, GROUP)) == expected


FI = "flashinfer-python"


@pytest.mark.parametrize(("bumps", "resumed", "expected"), [
    # nothing interrupted
    ([Bump(FI, frozenset({"0.6.8.post1"}), "0.6.11")], [],
     [(FI, ["0.6.8.post1"], "0.6.11")]),
    # the plan moved on since the killed run: a file it did not reach still holds an old
    # version, a file it did reach holds its (older) target
    ([Bump(FI, frozenset({"0.6.9"}), "0.6.11")], [Bump(FI, frozenset({"0.6.8.post1"}), "0.6.10")],
     [(FI, ["0.6.10", "0.6.8.post1", "0.6.9"], "0.6.11")]),
    # the killed run aimed higher than the plan now does: its target is no old version
    ([Bump(FI, frozenset({"0.6.8.post1"}), "0.6.10")], [Bump(FI, frozenset({"0.6.9"}), "0.6.11")],
     [(FI, ["0.6.8.post1", "0.6.9"], "0.6.10")]),
    # a target that is not a version is never taken as older
    ([Bump(FI, frozenset({"0.6.8.post1"}), "0.6.11")], [Bump(FI, frozenset(), "main")],
     [(FI, ["0.6.8.post1"], "0.6.11")]),
    # a package only the killed run moved, after the plan's
    ([Bump(FI, frozenset({"0.6.8.post1"}), "0.6.11")],
     [Bump("flashinfer-cubin", frozenset({"0.6.8.post1"}), "0.6.11"),
      Bump(FI, frozenset({"0.6.9"}), "0.6.11")],
     [(FI, ["0.6.8.post1", "0.6.9"], "0.6.11"), ("flashinfer-cubin", ["0.6.8.post1"], "0.6.11")]),
    # the killed run's only old version is the plan's target: nothing left to move
    ([], [Bump(FI, frozenset({"0.6.11"}), "0.6.11")], []),
])
def test_merge_bumps(bumps: list[Bump], resumed: list[Bump],
                     expected: list[tuple[str, list[str], str]]) -> None:
    assert as_tuples(merge_bumps(bumps, resumed)) == expected


def test_the_journal_round_trips() -> None:
    bumps = [Bump(FI, frozenset({"0.6.9", "0.6.8.post1"}), "0.6.11"),
             Bump("nvidia-cutlass-dsl", frozenset({"4.4.2"}), "4.5.0")]
    intent = bumps_to_intent(bumps)
    assert intent == {"bumps": [
        {"package": FI, "old": ["0.6.8.post1", "0.6.9"], "new": "0.6.11"},
        {"package": "nvidia-cutlass-dsl", "old": ["4.4.2"], "new": "4.5.0"}]}
    assert bumps_from_intent(intent, ".pinbump/apply.json") == bumps


@pytest.mark.parametrize("intent", [
    None, [], "bumps", {}, {"bumps": {}}, {"bumps": ["x"]},
    {"bumps": [{"old": [], "new": "1"}]},
    {"bumps": [{"package": 1, "old": [], "new": "1"}]},
    {"bumps": [{"package": "p", "old": []}]},
    {"bumps": [{"package": "p", "old": [], "new": 1}]},
    {"bumps": [{"package": "p", "new": "1"}]},
    {"bumps": [{"package": "p", "old": "1.0", "new": "1"}]},
    {"bumps": [{"package": "p", "old": ["1.0", 2], "new": "1"}]},
    {"bumps": [{"package": "p", "old": [], "new": "1"}, {"package": "q"}]},
])
def test_a_malformed_journal_is_an_error(intent: Any) -> None:
    with pytest.raises(ApplyError) as err:
        bumps_from_intent(intent, ".pinbump/apply.json")
    assert str(err.value) == (".pinbump/apply.json: not a pinbump apply journal; remove it "
                              "and run again")
