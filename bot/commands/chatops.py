"""pinbump command: what a maintainer asks in a PR comment (``/pinbump rebase``...) or by
ticking a box of the dashboard issue (issue 16, item 5).

Only people GitHub reports with write access (admin, maintain or write, read through the
collaborator API, not from the comment's own ``author_association``) may command; anyone else
gets one polite refusal per issue. The commands that change the branch run ``pinbump run``
with the matching option; the others are a single API call each.

A ticked dashboard box is the same command from the ``issues`` ``edited`` event's sender,
held to the same permission rule. Every box is unticked before its command runs (so it can be
ticked again, and a box runs once even when the job dies). Replies to boxes, ``explain``
included, go on the dashboard issue: that is where the box was ticked, and a plan may have no
open bot PR to explain (its target ignored or held back). ``ignore`` and ``unignore`` boxes
carry the version the dashboard showed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from bot.adapters.github import GitHub
from bot.commands.context import PlanOptions
from bot.commands.pr import (
    DASHBOARD_LABEL,
    GATE_INPUTS,
    GitHubOptions,
    base_policy,
    plan_only,
    run_bot,
)
from bot.core.chatops import (
    UNIGNORED,
    Command,
    checked_commands,
    ignored_marks,
    marked_versions,
    may_command,
    parse_command,
    refusal,
    refused_before,
    untick,
    version_of,
)
from bot.core.models import PrState, PullInfo, Vocabulary
from bot.core.prbody import DASHBOARD_TITLE, explain_markdown

REPLY = "<!-- pinbump:reply -->"


class CommandState(Vocabulary):
    """What became of a comment (``state`` of ``pinbump command --json``)."""

    DONE = "done"
    REFUSED = "refused"  # from someone who may not command the bot
    NOT_A_COMMAND = "not-a-command"
    UNKNOWN = "unknown"  # /pinbump with a verb it does not know


@dataclass
class CommandResult:
    verb: str
    number: int
    state: CommandState
    reply: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"verb": self.verb, "number": self.number, "state": self.state,
                "reply": self.reply}


@dataclass(frozen=True)
class Context:
    plan_opts: PlanOptions
    gh_opts: GitHubOptions
    base: str
    remote: str
    out: IO[str]


def run_comment(ctx: Context, comment_id: int) -> CommandResult:
    """The door of ``pinbump command --comment-id``."""
    token = ctx.gh_opts.token() or ""
    github = ctx.gh_opts.client(token)
    number, login, body = github.comment_at(comment_id)
    command = parse_command(body) if REPLY not in body else None
    if command is None:
        return CommandResult("", number, CommandState.NOT_A_COMMAND)
    if not may_command(github.permission(login)):
        if not refused_before(login, github.comments(number)):
            github.comment(number, refusal(login))
        _say(ctx, f"refused /pinbump {command.verb} from {login!r}: no write access")
        return CommandResult(command.verb, number, CommandState.REFUSED)
    reply = _execute(ctx, token, command, number)
    github.comment(number, f"{REPLY}\n{reply}")
    state = CommandState.UNKNOWN if command.verb == "unknown" else CommandState.DONE
    return CommandResult(command.verb, number, state, reply)


def run_dashboard(ctx: Context, sender: str, issue: int | None = None) -> list[CommandResult]:
    """The door of ``pinbump command --dashboard``: the boxes ``sender`` ticked. ``issue`` is
    the issue whose edit this is: an edit of any other issue (one an outsider opened with the
    dashboard's title) touches nothing, not even a maintainer's box waiting for its run."""
    token = ctx.gh_opts.token() or ""
    github = ctx.gh_opts.client(token)
    found = github.find_issue(DASHBOARD_TITLE, DASHBOARD_LABEL)
    if found is None or (issue is not None and issue != found.number):
        return []
    commands = checked_commands(found.body)
    if not commands:
        return []
    github.edit_issue(found.number, untick(found.body))  # a box runs once
    if not may_command(github.permission(sender)):
        if not refused_before(sender, github.comments(found.number)):
            github.comment(found.number, refusal(sender))
        return [CommandResult(c.verb, found.number, CommandState.REFUSED) for c in commands]
    results = []
    for command in commands:
        if command.verb in ("explain", "ignore", "unignore"):  # no bot PR needed
            reply = _execute(ctx, token, command, found.number)
        elif pulls := github.open_pulls(ctx.base, "pinbump/"):
            reply = _execute(ctx, token, command, pulls[0].number)
        else:
            reply = f"`/pinbump {command.verb}`: there is no open bot PR to act on"
        github.comment(found.number, f"{REPLY}\n{reply}")
        results.append(CommandResult(command.verb, found.number, CommandState.DONE, reply))
    return results


def _say(ctx: Context, line: str) -> None:
    print(f"pinbump: {line}", file=ctx.out)


def _execute(ctx: Context, token: str, command: Command, number: int) -> str:
    github = ctx.gh_opts.client(token)
    verb = command.verb
    if verb == "unknown":
        return (f"pinbump does not know `/pinbump {command.text}`. Commands: `rebase`, "
                "`recreate`, `ignore this version`, `ignore <version>`, `unignore`, `gate`, "
                "`explain`.")
    if verb in ("rebase", "recreate"):
        result = run_bot(ctx.plan_opts, ctx.gh_opts, ctx.base, dry_run=False,
                         remote=ctx.remote, out=ctx.out, rebase=verb == "rebase",
                         recreate=verb == "recreate")
        where = f" at `{result.head_sha[:12]}`" if result.head_sha else ""
        return f"`/pinbump {verb}`: {result.action}{where}."
    if verb == "explain":
        plan = plan_only(ctx.plan_opts, ctx.base, ctx.remote, ctx.out, token)
        return explain_markdown(plan)
    is_pull = github.is_pull(number)
    pr = github.pull(number) if is_pull else None
    policy = base_policy(ctx.plan_opts.repo, ctx.base, token, ctx.remote)
    prefix = f"pinbump/{policy.active_group.name}-"
    if verb == "gate":
        if pr is None or pr.state != PrState.OPEN or not pr.head_ref.startswith(prefix):
            return "`/pinbump gate` works on an open bot PR."
        github.dispatch(policy.gate_workflow, ctx.base,
                        dict(zip(GATE_INPUTS, (str(pr.number), pr.head_sha), strict=True)))
        return f"re-dispatched `{policy.gate_workflow}` on `{pr.head_sha[:12]}`."
    return _ignore_or_unignore(ctx, github, command, pr, prefix)


def _ignore_or_unignore(ctx: Context, github: GitHub, command: Command,
                        pr: PullInfo | None, prefix: str) -> str:
    """``/pinbump ignore`` closes this PR (or marks a version on the dashboard);
    ``/pinbump unignore`` drops the dashboard's mark and labels the closed PRs."""
    verb = command.verb
    version = command.version or (version_of(pr.head_ref, prefix) if pr else None)
    if version is None:
        return f"`/pinbump {verb}` needs a version here: `/pinbump {verb} <version>`."
    dashboard = github.find_issue(DASHBOARD_TITLE, DASHBOARD_LABEL)
    marks = marked_versions(dashboard.body) if dashboard else []
    if verb == "ignore":
        if pr is not None and command.version is None and pr.state == PrState.OPEN:
            github.edit_pull(pr.number, state=PrState.CLOSED)
            return _ignoring(version)
        if dashboard is not None and version not in marks:
            github.edit_issue(dashboard.number, dashboard.body.rstrip("\n") + "\n" +
                              "\n".join(ignored_marks([version])) + "\n")
        for p in github.open_pulls(ctx.base, prefix):  # its open bot PR closes: a skip
            if version_of(p.head_ref, prefix) == version:
                github.comment(p.number, f"{REPLY}\nClosed: {_ignoring(version)}")
                github.edit_pull(p.number, state=PrState.CLOSED)
        return _ignoring(version)
    # unignore: the dashboard's marker goes, closed PRs of the version are labelled
    if dashboard is not None and version in marks:
        body = dashboard.body.replace(ignored_marks([version])[0], "")
        github.edit_issue(dashboard.number, body)
    closed = [p for p in github.closed_pulls(ctx.base, prefix)
              if version_of(p.head_ref, prefix) == version and not p.merged]
    if closed:
        github.ensure_labels([UNIGNORED])
    for p in closed:
        github.add_labels(p.number, [UNIGNORED])
    return f"{version} is no longer ignored: the next run may propose it again."


def _ignoring(version: str) -> str:
    return (f"ignoring {version}: pinbump will not propose it until a newer version "
            f"appears. `/pinbump unignore {version}` undoes it.")
