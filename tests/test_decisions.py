"""The bot's decisions as data: (open PRs, what changed) -> what to do."""

from __future__ import annotations

import pytest

from bot.core.decisions import (
    DashboardAction,
    GateAction,
    GateState,
    PrAction,
    decide_dashboard,
    decide_gate,
    decide_pr,
    failure_mark,
)
from bot.core.models import Check, IssueInfo, PullInfo

BRANCH = "pinbump/flashinfer-0.6.11"
LABELS = ("dependencies", "pinbump", "gpu-gate")


def pull(number: int, head: str = BRANCH, *, title: str = "T", body: str = "B",
         labels: tuple[str, ...] = LABELS, state: str = "open", merged: bool = False
         ) -> PullInfo:
    return PullInfo(number, head, "a" * 40, title, body, state, merged, labels,
                    f"https://github.invalid/pull/{number}")


def pr(pulls: list[PullInfo], pushed: bool = False, title: str = "T", body: str = "B"):
    return decide_pr(branch=BRANCH, title=title, body=body, pulls=pulls, pushed=pushed,
                     labels=LABELS, reviewers=("alice",))


def test_no_open_pr_opens_one_with_reviewers_labels_and_the_gate() -> None:
    d = pr([])
    assert (d.action, d.pr, d.edit, d.dispatch) == (PrAction.OPEN, None, False, True)
    assert d.reviewers == ("alice",) and d.labels == LABELS and d.supersede == ()


def test_same_branch_same_text_nothing_pushed_is_left_alone() -> None:
    mine = pull(7)
    d = pr([mine])
    assert (d.action, d.pr, d.edit, d.dispatch, d.labels) == (PrAction.KEEP, mine, False,
                                                              False, ())
    assert d.reviewers == ()  # requested once, when the PR was opened


@pytest.mark.parametrize(("mine", "pushed", "edit", "dispatch"), [
    (pull(7, body="old body"), False, True, False),
    (pull(7, title="old title"), False, True, False),
    (pull(7), True, False, True),  # a new commit: the gate runs again on the new head
    (pull(7, body="old body"), True, True, True),
])
def test_changes_update_the_pr(mine: PullInfo, pushed: bool, edit: bool,
                               dispatch: bool) -> None:
    d = pr([mine], pushed=pushed)
    assert (d.action, d.edit, d.dispatch) == (PrAction.UPDATE, edit, dispatch)


def test_only_missing_labels_are_added() -> None:
    d = pr([pull(7, labels=("pinbump", "custom"))])
    assert d.labels == ("dependencies", "gpu-gate")


def test_older_bot_prs_of_the_group_are_superseded() -> None:
    old, older = pull(3, "pinbump/flashinfer-0.6.10"), pull(2, "pinbump/flashinfer-0.6.9")
    d = pr([old, older])
    assert d.action == PrAction.OPEN and d.supersede == (old, older)
    mine = pull(7)
    assert pr([old, mine]).supersede == (old,)
    assert pr([old, mine]).pr == mine


@pytest.mark.parametrize(("found", "body", "expected"), [
    (None, "x", DashboardAction.CREATE),
    (IssueInfo(1, "t", "x", "u"), "x", DashboardAction.KEEP),
    (IssueInfo(1, "t", "old", "u"), "x", DashboardAction.EDIT),
])
def test_dashboard(found: IssueInfo | None, body: str, expected: DashboardAction) -> None:
    assert decide_dashboard(found, body) == expected


REQUIRED = ("pinbump/gpu-gate/sm90", "pinbump/gpu-gate/multi-gpu")
SHA = "a" * 40


def checks(*states: str) -> list[Check]:
    return [Check(name, state, f"https://ci.invalid/{i}", SHA)
            for i, (name, state) in enumerate(zip(REQUIRED, states, strict=False))]


@pytest.mark.parametrize(("the_pull", "found", "comments", "action", "state"), [
    (pull(7, merged=True, state="closed"), [], [], GateAction.SKIP, GateState.MERGED),
    (pull(7, state="closed"), [], [], GateAction.SKIP, GateState.CLOSED),
    (pull(7), checks("success", "success"), [], GateAction.MERGE, GateState.MERGED),
    (pull(7), checks("success"), [], GateAction.WAIT, GateState.PENDING),
    (pull(7), checks("success", "pending"), [], GateAction.WAIT, GateState.PENDING),
    (pull(7), checks("success", "failure"), [], GateAction.COMMENT, GateState.FAILURE),
    (pull(7), checks("failure", "pending"), [], GateAction.COMMENT, GateState.FAILURE),
    # commented on this head SHA already: not again
    (pull(7), checks("success", "failure"), ["hi", failure_mark(SHA) + "\nfailed"],
     GateAction.FAILED, GateState.FAILURE),
    # a comment on an older head SHA does not count
    (pull(7), checks("success", "failure"), [failure_mark("b" * 40)], GateAction.COMMENT,
     GateState.FAILURE),
])
def test_gate(the_pull: PullInfo, found: list[Check], comments: list[str],
              action: GateAction, state: GateState) -> None:
    verdict = decide_gate(the_pull, REQUIRED, found, comments)
    assert (verdict.action, verdict.state) == (action, state)


def test_gate_failure_lists_the_failing_checks() -> None:
    verdict = decide_gate(pull(7), REQUIRED, checks("failure", "failure"), [])
    assert verdict.decision is not None
    assert [c.name for c in verdict.decision.failing] == list(REQUIRED)
