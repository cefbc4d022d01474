"""The bot's decisions, as pure functions over data: what to do with the bot PR (open, update,
leave, supersede the older ones, label, dispatch the gate), with the dashboard issue, and with
a PR at the gate (merge, comment the failure, wait, skip). The commands only carry them out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.core.models import Check, CheckState, IssueInfo, PrState, PullInfo, Vocabulary
from bot.errors import ConfigError


class PrAction(Vocabulary):
    OPEN = "opened"
    UPDATE = "updated"  # title or body changed (or a new commit was pushed)
    KEEP = "unchanged"


class RunAction(Vocabulary):
    """What ``pinbump run`` did (``action`` of its ``--json`` record): a PrAction, or why no
    PR was touched."""

    NOTHING = "nothing"  # the pins are the newest complete set
    OPENED = PrAction.OPEN.value
    UPDATED = PrAction.UPDATE.value
    UNCHANGED = PrAction.KEEP.value
    DRY_RUN = "dry-run"
    IGNORED = "ignored"  # the newest set is ignored (/pinbump ignore)
    HELD = "held"  # hand edits on the bot branch hold the bump back
    NIGHTLY = "nightly"  # --channel nightly: the nightly gate (bot.commands.nightly), no PR


@dataclass(frozen=True)
class PrDecision:
    action: PrAction
    pr: PullInfo | None  # the open bot PR of this branch; None: open one
    edit: bool  # the title or body must be rewritten
    reviewers: tuple[str, ...]  # requested when the PR is opened
    labels: tuple[str, ...]  # missing labels to add
    supersede: tuple[PullInfo, ...]  # older bot PRs of the group: comment and close
    dispatch: bool  # start the GPU gate on the new head


def decide_pr(*, branch: str, title: str, body: str, pulls: Sequence[PullInfo], pushed: bool,
              labels: Sequence[str], reviewers: Sequence[str],
              undispatched: Sequence[str] = ()) -> PrDecision:
    """``pulls``: the open PRs of the group's bot branches; ``pushed``: a new commit went up;
    ``undispatched``: GPU jobs with no status at all on the head SHA (a run that died
    before dispatching left them so: this run dispatches them)."""
    mine = next((p for p in pulls if p.head_ref == branch), None)
    older = tuple(p for p in pulls if p.head_ref != branch)
    if mine is None:
        return PrDecision(PrAction.OPEN, None, False, tuple(reviewers), tuple(labels), older,
                          dispatch=True)
    edit = mine.body != body or mine.title != title
    action = PrAction.UPDATE if edit or pushed else PrAction.KEEP
    missing = tuple(label for label in labels if label not in mine.labels)
    return PrDecision(action, mine, edit, (), missing, older,
                      dispatch=pushed or bool(undispatched))


def undispatched(status_names: Sequence[str], checks: Sequence[Check]) -> list[str]:
    """The GPU jobs' statuses the head SHA does not carry at all (``checks`` are of that SHA
    only: results of older SHAs never count)."""
    seen = {c.name for c in checks}
    return [name for name in status_names if name not in seen]


def supersede_comment(new_number: int, lead: str, target: str) -> str:
    return f"Superseded by #{new_number} ({lead} {target}). Closing this one."


class DashboardAction(Vocabulary):
    CREATE = "create"
    EDIT = "edit"
    KEEP = "keep"


def decide_dashboard(found: IssueInfo | None, body: str) -> DashboardAction:
    if found is None:
        return DashboardAction.CREATE
    return DashboardAction.EDIT if found.body != body else DashboardAction.KEEP


# -- the gate -------------------------------------------------------------------------------
class GateState(Vocabulary):
    SUCCESS = "success"
    FAILURE = "failure"
    PENDING = "pending"
    MERGED = "merged"
    CLOSED = "closed"
    NOT_BOT = "not-bot"  # green, but not the bot's own PR: reported, never merged
    AUTO_MERGE = "auto-merge"  # GitHub's native auto-merge is on: it merges by the rules
    BLOCKED = "blocked"  # pinbump's checks passed; GitHub's rules (reviews...) do not yet


@dataclass
class GateDecision:
    state: GateState
    failing: list[Check] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)  # required names pending or missing
    passed: list[str] = field(default_factory=list)


def decide(required: Sequence[str], checks: Sequence[Check]) -> GateDecision:
    """Required checks of one head SHA; the first entry per name is the latest."""
    if not required:
        raise ConfigError("no required checks: a gate that requires nothing would merge "
                          "anything")
    decision = GateDecision(state=GateState.SUCCESS)
    for name in required:
        found = [c for c in checks if c.name == name]
        if not found or found[0].state == CheckState.PENDING:
            decision.waiting.append(name)
        elif found[0].state == CheckState.FAILURE:
            decision.failing.append(found[0])
        else:
            decision.passed.append(name)
    if decision.failing:
        decision.state = GateState.FAILURE
    elif decision.waiting:
        decision.state = GateState.PENDING
    return decision


MERGEABLE_NOW = frozenset({"clean", "unstable", "has_hooks"})


def merge_route(auto_merge: bool | None, mergeable_state: str) -> GateState:
    """How a bot PR whose own conditions hold is merged by the repository's rules: native
    auto-merge where the repository allows it (``auto_merge`` not None), else a REST merge
    only when GitHub says the PR is mergeable now (every required review and check from any
    CI passed); otherwise it waits, blocked."""
    if auto_merge is not None:
        return GateState.AUTO_MERGE
    return GateState.MERGED if mergeable_state in MERGEABLE_NOW else GateState.BLOCKED


def failure_mark(sha: str) -> str:
    """The first line of the failure comment: read back so a head SHA is commented once."""
    return f"<!-- pinbump: gate-failed {sha} -->"


class GateAction(Vocabulary):
    SKIP = "skip"  # merged or closed: nothing to gate
    MERGE = "merge"
    COMMENT = "comment"  # failed: comment (once per head SHA), leave open
    FAILED = "failed"  # failed and already commented on this SHA
    WAIT = "wait"
    REPORT = "report"  # green, but not a bot PR: say why, never merge


@dataclass(frozen=True)
class GatePlan:
    action: GateAction
    state: GateState
    decision: GateDecision | None = None


def decide_gate(pr: PullInfo, required: Sequence[str], checks: Sequence[Check],
                comments: Sequence[str], not_bot: Sequence[str] = ()) -> GatePlan:
    """``checks`` of ``pr.head_sha`` only; ``comments`` on the PR so far; ``not_bot``: why
    the PR is not the bot's own (bot.core.botpr.not_bot_reasons), empty when it is."""
    if pr.merged or pr.state != PrState.OPEN:
        return GatePlan(GateAction.SKIP, GateState.MERGED if pr.merged else GateState.CLOSED)
    decision = decide(required, checks)
    if decision.state == GateState.SUCCESS:
        if not_bot:
            return GatePlan(GateAction.REPORT, GateState.NOT_BOT, decision)
        return GatePlan(GateAction.MERGE, GateState.MERGED, decision)
    if decision.state == GateState.FAILURE:
        mark = failure_mark(pr.head_sha)
        done = any(mark in c for c in comments)
        return GatePlan(GateAction.FAILED if done else GateAction.COMMENT, GateState.FAILURE,
                        decision)
    return GatePlan(GateAction.WAIT, GateState.PENDING, decision)
