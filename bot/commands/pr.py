"""pinbump run and pinbump gate: plan, apply and drift put on GitHub.

Wiring only: the decisions (what to write, what the body says, what to do with the PRs,
whether the gate passed) are pure functions of ``bot.core``; git and GitHub are reached
through the services. A dry run is services that record instead of acting: its git pushes
nothing, its GitHub is never contacted, and nothing is written into the user's repository.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from bot.adapters.git import (
    Git,
    RecordingGit,
    remote_url,
    scratch_checkout,
    url_host,
)
from bot.adapters.github import (
    DEFAULT_API,
    GitHub,
    GitHubPort,
    RecordingGitHub,
    app_installation_token,
    check_api_url,
)
from bot.adapters.writer import write_all
from bot.commands.apply import apply
from bot.commands.context import PlanOptions, Services, load_workspace, open_services
from bot.commands.drift import DriftOutcome, drift, edited_sources
from bot.commands.plan import plan as make_plan
from bot.core.botpr import CommitAuthor, bot_branch, hand_commits, not_bot_reasons
from bot.core.chatops import (
    SUPERSEDED,
    ignored_versions,
    marked_versions,
    newer_target_comment,
    newer_target_mark,
    rebase_needed,
)
from bot.core.config import STATUS_PREFIX, Policy
from bot.core.decisions import (
    DashboardAction,
    GateAction,
    GateDecision,
    GateState,
    PrAction,
    RunAction,
    decide,
    decide_dashboard,
    decide_gate,
    decide_pr,
    merge_route,
    supersede_comment,
    undispatched,
)
from bot.core.drift import DriftReport, ReviewSource
from bot.core.models import Channel, CheckState, Plan, PrState, PullInfo, StatusState
from bot.core.nightly import carried_section, with_section
from bot.core.prbody import (
    DASHBOARD_TITLE,
    GateInfo,
    dashboard_body,
    failure_comment,
    pr_body,
    pr_title,
)
from bot.core.release_notes import RELEASE_REPOS, notes_markdown
from bot.core.workspace import Workspace
from bot.errors import GitError, InputError, PinbumpError

GATE_INPUTS = ("pr", "sha")  # the inputs of the gate workflow's workflow_dispatch
DRIFT_STATUS = "pinbump/drift"  # failure while a breaking call remains; the gate requires it


def required_checks(policy: Policy) -> tuple[str, ...]:
    """What the gate waits for: the GPU jobs' statuses (or the configured ones) and drift."""
    required = policy.checks_required
    return required if DRIFT_STATUS in required else (*required, DRIFT_STATUS)
DASHBOARD_LABEL = "pinbump"


@dataclass(frozen=True)
class GitHubOptions:
    repo: str  # OWNER/NAME
    token_env: str = "GITHUB_TOKEN"
    api_url: str = DEFAULT_API
    write_interval: float = 1.0
    budget: float | None = None  # seconds the command may take: bounds rate-limit waits
    app_id: str | None = None  # a GitHub App instead of a token: its id...
    app_key_env: str = "PINBUMP_APP_KEY"  # ...and the variable holding its private key (PEM)

    def client(self, token: str) -> GitHub:
        return GitHub(self.repo, token, base_url=self.api_url,
                      write_interval=self.write_interval, budget=self.budget)

    def token(self, needed: bool = True) -> str | None:
        """The token from the environment; missing is an error before anything changes."""
        check_api_url(self.api_url)  # before the token is read or sent anywhere
        if self.app_id:
            key = os.environ.get(self.app_key_env, "").strip()
            if not key:
                raise InputError(f"${self.app_key_env} is not set: --app-id needs the App's "
                                 "private key (PEM) in it (nothing was changed)")
            return app_installation_token(self.repo, self.app_id, key, self.api_url)
        token = os.environ.get(self.token_env, "").strip()
        if not token and needed:
            raise InputError(f"${self.token_env} is not set: pinbump needs a GitHub token "
                             f"with contents, pull-requests, issues and actions write access "
                             f"to {self.repo} (nothing was changed)")
        return token or None


@dataclass(frozen=True)
class BotServices:
    """The command's services plus git (working in the scratch checkout) and GitHub."""

    base: Services
    git: Git
    github: GitHubPort

    @property
    def dry_run(self) -> bool:
        return isinstance(self.github, RecordingGitHub)

    def say(self, line: str) -> None:
        self.base.say(line)


@dataclass(frozen=True)
class RunOptions:
    base: str  # the base branch
    url: str  # the remote's URL: fetched from, pushed to
    as_of: str | None = None
    repo: str = ""  # OWNER/NAME on GitHub, for links to the branch's lines
    gate_report: ReviewSource | None = None  # a GPU gate run's observations, for drift
    recreate: bool = False  # start the bot branch over, hand edits or not
    rebase: bool = False  # bring the bot branch onto its base now, hand edits kept


@dataclass
class RunResult:
    action: RunAction
    branch: str = ""
    pr: int | None = None
    head_sha: str = ""
    pushed: bool = False
    superseded: list[int] = field(default_factory=list)
    dispatched: bool = False
    dashboard: int | None = None
    body: str = ""


def run_bot(plan_opts: PlanOptions, gh_opts: GitHubOptions, base: str, *, dry_run: bool,
            remote: str = "origin", out: IO[str], gate_report: ReviewSource | None = None,
            recreate: bool = False, rebase: bool = False) -> RunResult:
    """The door of ``pinbump run``: services built once, the base checked out once."""
    nightly = plan_opts.channel == Channel.NIGHTLY \
        and not load_workspace(plan_opts.repo, plan_opts.overrides).policy.nightly_prs
    if nightly:
        # Nightly plans are early warnings for GPU runs: the gate is dispatched on the base's
        # head (bot.commands.nightly), never a branch or a PR unless asked.
        print("pinbump: --channel nightly: no branch and no PR (set nightly-prs = true in the "
              "config to open them); the GPU gate runs the nightly set on the base's head",
              file=out)
    token = gh_opts.token(needed=not dry_run)
    root = plan_opts.repo
    if Git(root).run("rev-parse", "--is-inside-work-tree", check=False) != "true":
        raise InputError(f"{root}: not a git checkout (pinbump run commits and pushes)")
    url = remote_url(Git(root), remote)
    git = (RecordingGit if dry_run else Git)(root, token, host=url_host(url))
    github: GitHubPort = RecordingGitHub() if dry_run else gh_opts.client(token or "")
    with open_services(plan_opts, out=out) as services, \
            scratch_checkout(git, url, base) as scratch:
        ws = load_workspace(scratch.cwd, plan_opts.overrides)
        bot = BotServices(services, scratch, github)
        if nightly:
            from bot.commands.nightly import nightly_gate

            return nightly_gate(ws, bot, RunOptions(base, url, plan_opts.as_of, gh_opts.repo))
        return bump(ws, bot, RunOptions(base, url, plan_opts.as_of, gh_opts.repo, gate_report,
                                        recreate, rebase))


def plan_only(plan_opts: PlanOptions, base: str, remote: str, out: IO[str],
              token: str | None) -> Plan:
    """The plan ``run`` would make, from a scratch checkout of the remote base
    (``/pinbump explain``)."""
    root = plan_opts.repo
    url = remote_url(Git(root), remote)
    git = Git(root, token, host=url_host(url))
    with open_services(plan_opts, out=out) as services, \
            scratch_checkout(git, url, base) as scratch:
        ws = load_workspace(scratch.cwd, plan_opts.overrides)
        return make_plan(ws, services, plan_opts.as_of)


def bump(ws: Workspace, bot: BotServices, opts: RunOptions) -> RunResult:
    """Plan, apply, drift; commit and push the bot branch; open or update the PR."""
    bot.github.preflight(ws.policy.gate_workflow)  # before the first write, GitHub's
    bot.git.check_push(opts.url)  # and the remote's
    plan = make_plan(ws, bot.base, opts.as_of)
    prefix = f"pinbump/{ws.group.name}-"
    found = bot.github.find_issue(DASHBOARD_TITLE, DASHBOARD_LABEL)
    ignored = ignored_versions(bot.github.closed_pulls(opts.base, prefix), prefix,
                               found.body if found else "")
    view = DashView(ignored=ignored, marks=marked_versions(found.body if found else ""))
    if not plan.changes or plan.lead_target in ignored:
        if plan.changes:
            bot.say(f"{plan.lead} {plan.lead_target} is ignored "
                    f"({ignored[plan.lead_target]}): nothing to do until a newer version "
                    "appears")
        else:
            bot.say(f"nothing to bump: {plan.lead} {plan.lead_current} is the newest "
                    "complete and consistent set")
        open_prs = bot.github.open_pulls(opts.base, prefix)
        dashboard = _dashboard(bot, plan, open_prs[0] if open_prs else None, ws.policy, view)
        action = RunAction.IGNORED if plan.changes else RunAction.NOTHING
        return RunResult(action=action, dashboard=None if bot.dry_run else dashboard)
    branch = bot_branch(ws.group.name, plan.lead_target)
    held = _held_back(ws, bot, plan, opts, branch)
    if held is not None:
        view = replace(view, held=(plan.lead_target, held.number))
        return RunResult(action=RunAction.HELD, branch=held.head_ref, pr=held.number,
                         head_sha=held.head_sha,
                         dashboard=_dashboard(bot, plan, held, ws.policy, view))
    body, outcome = _body(ws, bot, plan, _blob_url(opts, bot, branch), opts.gate_report)
    head_sha, pushed = _commit_and_push(bot, plan, opts, branch, outcome, ws.policy)
    result = RunResult(action=RunAction.UNCHANGED, branch=branch, head_sha=head_sha, pushed=pushed,
                       body=body)
    _open_or_update(ws, bot, plan, opts, result, view)
    _drift_status(bot, head_sha, outcome.report if outcome else None)
    if bot.dry_run:
        bot.say(f"dry run: would push {branch} and open or update its PR; nothing was "
                "changed")
        return RunResult(action=RunAction.DRY_RUN, branch=branch, head_sha=head_sha, body=body)
    return result


def _hand_commits(git: Git, url: str, branch: str, base: str) -> tuple[str | None, list[str]]:
    """(remote head of ``branch``, its commits since the base that the bot did not make),
    read with git from the remote: the bot's identity is its git author."""
    remote_sha = git.remote_head(url, branch)
    if remote_sha is None:
        return None, []
    git.run("fetch", "--quiet", "--no-tags", url,
            f"+refs/heads/{branch}:refs/remotes/bot/{branch}")
    log = git.run("log", "--format=%H%x00%an%x00%ae%x00%cn%x00%ce",
                  f"refs/remotes/base/{base}..{remote_sha}")
    commits = []
    for line in log.splitlines():
        sha, an, ae, cn, ce = line.split("\0")
        commits.append(CommitAuthor(sha, an, ae, None))
        commits.append(CommitAuthor(sha, cn, ce, None))
    return remote_sha, sorted({c.sha for c in hand_commits(commits, "")})


def _held_back(ws: Workspace, bot: BotServices, plan: Plan, opts: RunOptions, branch: str
               ) -> PullInfo | None:
    """An older open bot PR with hand edits holds a newer target back: it is not
    superseded (its edits would be lost); it gets one comment saying what is available."""
    if opts.recreate:
        return None
    prefix = f"pinbump/{ws.group.name}-"
    for old in bot.github.open_pulls(opts.base, prefix):
        if old.head_ref == branch:
            continue
        _, hand = _hand_commits(bot.git, opts.url, old.head_ref, opts.base)
        if not hand:
            continue
        mark = newer_target_mark(plan.lead_target)
        if not any(mark in c for c in bot.github.comments(old.number)):
            bot.github.comment(old.number, newer_target_comment(plan.lead_target, plan.lead))
        bot.say(f"#{old.number} ({old.head_ref}) has hand edits: {plan.lead} "
                f"{plan.lead_target} is held back (/pinbump recreate starts over)")
        return old
    return None


def _body(ws: Workspace, bot: BotServices, plan: Plan, blob_url: str | None,
          gate_report: ReviewSource | None = None) -> tuple[str, DriftOutcome | None]:
    """Apply the plan in the scratch checkout and compute the drift with its codemod (kept in
    the outcome, committed apart from the pins): the PR body."""
    applied = apply(ws, plan)
    notes = applied.notes
    outcome: DriftOutcome | None = None
    try:
        outcome = drift(ws, bot.base, plan.lead_current, plan.lead_target, fix=True,
                        sources=edited_sources(ws, applied.edits), write=False,
                        gate_report=gate_report)
    except PinbumpError as exc:
        notes = [*notes, f"API drift could not be computed: {exc}"]
    policy = ws.policy
    gate = GateInfo(policy.gate_workflow, policy.runner_labels, required_checks(policy))
    release_notes = _release_notes(bot, plan)
    return pr_body(plan, applied.edits, outcome.report if outcome else None, gate, notes,
                   blob_url=blob_url, release_notes=release_notes), outcome


def _release_notes(bot: BotServices, plan: Plan) -> list[str]:
    """The lead's release notes between current and target; [] (the table keeps its links)
    when the lead has no known repository or its releases cannot be read."""
    repo = RELEASE_REPOS.get(plan.lead)
    if repo is None:
        return []
    try:
        releases = bot.github.releases(repo)
    except PinbumpError as exc:
        bot.say(f"release notes unavailable ({exc}); the PR body links them instead")
        return []
    return notes_markdown(plan.lead, repo, releases, plan.lead_current, plan.lead_target)


def _blob_url(opts: RunOptions, bot: BotServices, branch: str) -> str | None:
    """Where the branch's files are shown on GitHub, for the banner's links."""
    return f"https://{bot.git.host}/{opts.repo}/blob/{branch}" if opts.repo else None


def _commit_and_push(bot: BotServices, plan: Plan, opts: RunOptions, branch: str,
                     outcome: DriftOutcome | None, policy: Policy) -> tuple[str, bool]:
    """Commit the applied tree, then the codemod's rewrites in a commit of their own; push
    unless the remote branch already holds the same change (on the same base, or on an
    older one the policy does not rebase from). Hand edits on the branch are never
    overwritten: without ``recreate`` the branch is left as it is, or, with ``rebase``,
    replayed onto the base. Returns (head SHA, whether a new commit was pushed)."""
    git = bot.git
    git.run("add", "-A")
    git.run("commit", "--quiet", "--no-verify", "-m", _message(plan))
    if outcome is not None and outcome.rewritten:
        write_all(git.cwd, {p: t.encode("utf-8") for p, t in outcome.rewritten.items()},
                  {p: t.encode("utf-8") for p, t in outcome.before.items()})
        git.run("add", "-A")
        git.run("commit", "--quiet", "--no-verify", "-m", codemod_message(plan, outcome))
    head = git.run("rev-parse", "HEAD")
    base_ref = f"refs/remotes/base/{opts.base}"
    remote_sha, hand = _hand_commits(git, opts.url, branch, opts.base)
    if remote_sha and hand and not opts.recreate:
        if not opts.rebase:
            bot.say(f"{branch} has {len(hand)} hand commit(s): left as it is (comment "
                    "/pinbump rebase or /pinbump recreate to change that)")
            return remote_sha, False
        return _rebase_hand_edits(bot, opts, branch, remote_sha)
    if remote_sha and not opts.recreate:
        fork = git.run("merge-base", remote_sha, base_ref)
        behind = fork != git.rev(base_ref)
        if _same_change(git, fork, remote_sha, base_ref, "HEAD"):
            state = _mergeable_state(bot, opts, branch) if behind else ""
            if not (opts.rebase and behind) and \
                    not rebase_needed(policy.rebase_when, state, behind):
                return remote_sha, False
    pushed = git.push(opts.url, branch, remote_sha)
    if pushed:
        bot.say(f"pushed {branch} at {head[:12]}")
    return head, pushed


def _same_change(git: Git, a0: str, a1: str, b0: str, b1: str) -> bool:
    """Whether two commits make the same change (git's stable patch id of their diffs)."""
    def patch_id(x: str, y: str) -> str:
        diff = git.run("diff", "--no-color", "--full-index", x, y)
        if not diff:
            return ""
        out = git.run("patch-id", "--stable", input=diff + "\n")
        return out.split()[0] if out else ""
    return patch_id(a0, a1) == patch_id(b0, b1)


def _mergeable_state(bot: BotServices, opts: RunOptions, branch: str) -> str:
    pulls = [p for p in bot.github.open_pulls(opts.base, branch) if p.head_ref == branch]
    return bot.github.pull(pulls[0].number).mergeable_state if pulls else ""


def _rebase_hand_edits(bot: BotServices, opts: RunOptions, branch: str, remote_sha: str
                       ) -> tuple[str, bool]:
    """Replay the branch, hand commits included, onto the base; a conflict leaves the
    remote untouched and says so."""
    git = bot.git
    git.run("checkout", "--quiet", "--detach", remote_sha)
    try:
        git.run("rebase", "--quiet", f"refs/remotes/base/{opts.base}")
    except GitError:
        git.run("rebase", "--abort", check=False)
        raise InputError(f"{branch}: its hand edits do not rebase cleanly onto {opts.base}; "
                         "resolve the conflict by hand, or comment /pinbump recreate to "
                         "start over (nothing was pushed)") from None
    head = git.run("rev-parse", "HEAD")
    if head == remote_sha:
        return remote_sha, False
    pushed = git.push(opts.url, branch, remote_sha)
    if pushed:
        bot.say(f"rebased {branch} (hand edits kept) onto {opts.base} at {head[:12]}")
    return head, pushed


def _open_or_update(ws: Workspace, bot: BotServices, plan: Plan, opts: RunOptions,
                    result: RunResult, view: DashView) -> None:
    policy, github = ws.policy, bot.github
    title = pr_title(plan)
    pulls = github.open_pulls(opts.base, f"pinbump/{ws.group.name}-")
    jobs = [f"{STATUS_PREFIX}/{job}" for job in policy.runner_labels]
    missing = undispatched(jobs, github.checks(result.head_sha))
    decision = decide_pr(branch=result.branch, title=title, body=result.body, pulls=pulls,
                         pushed=result.pushed, labels=(*policy.labels, *policy.extra_labels),
                         reviewers=policy.reviewers, undispatched=missing)
    mine = decision.pr
    if mine is None:
        mine = github.create_pull(title=title, body=result.body, head=result.branch,
                                  base=opts.base)
        bot.say(f"opened {mine.url}")
        if decision.reviewers:
            github.request_reviewers(mine.number, list(decision.reviewers))
    elif decision.edit:
        github.edit_pull(mine.number, title=title, body=result.body)
        bot.say(f"updated {mine.url}")
    elif decision.action == PrAction.KEEP:
        bot.say(f"{mine.url} is current: nothing to do")
    result.action, result.pr = RunAction(decision.action.value), mine.number
    if decision.labels:
        github.ensure_labels(list(decision.labels))
        github.add_labels(mine.number, list(decision.labels))
    if result.pushed and policy.ci_comment:
        github.comment(mine.number, policy.ci_comment)  # the target's CI trigger, per push
    for old in decision.supersede:
        github.comment(old.number, supersede_comment(mine.number, plan.lead, plan.lead_target))
        github.ensure_labels([SUPERSEDED])
        github.add_labels(old.number, [SUPERSEDED])  # closed by pinbump: not a skip
        github.edit_pull(old.number, state=PrState.CLOSED)
        result.superseded.append(old.number)
        bot.say(f"closed #{old.number} ({old.head_ref}): superseded by #{mine.number}")
    if decision.dispatch:
        # Dispatch first, then mark the jobs queued: a run that dies in between dispatches
        # again next time (the gate's concurrency group keeps one), and a run that died
        # before dispatching leaves nothing on the head SHA, so the next one dispatches.
        github.dispatch(policy.gate_workflow, opts.base,
                        dict(zip(GATE_INPUTS, (str(mine.number), result.head_sha),
                                 strict=True)))
        for context in missing:
            github.set_status(result.head_sha, context, StatusState.PENDING,
                              description="queued: GPU gate dispatched by pinbump run")
        result.dispatched = True
        bot.say(f"dispatched {policy.gate_workflow} for #{mine.number} at "
                f"{result.head_sha[:12]}")
    result.dashboard = _dashboard(bot, plan, github.pull(mine.number), policy, view)


def codemod_message(plan: Plan, outcome: DriftOutcome) -> str:
    n = len(outcome.fixed)
    lines = [f"Pass {n} call{'s' if n != 1 else ''} by keyword for {plan.lead} "
             f"{plan.lead_target}", "",
             f"{plan.lead} {plan.lead_target} would bind these positional arguments to other "
             "parameters; each now names the parameter it bound under "
             f"{plan.lead_current}:", ""]
    lines += [f"- {f.file}:{f.line} {f.function}({', '.join(k for _, k in f.fix)})"
              for f in outcome.fixed]
    lines += ["", "Generated by pinbump (drift --fix)."]
    return "\n".join(lines)


def _drift_status(bot: BotServices, sha: str, report: DriftReport | None) -> None:
    """``pinbump/drift`` on the head SHA: failure while a breaking call remains (error when
    drift could not be computed), success otherwise; written only when it changes."""
    if report is None:
        state, text = StatusState.ERROR, "API drift could not be computed: see the PR body"
    elif report.breaking:
        n = len(report.breaking)
        state, text = StatusState.FAILURE, f"{n} call{'s need' if n != 1 else ' needs'} a hand fix"
    else:
        state, text = StatusState.SUCCESS, "no call of the target breaks"
    current = next((c for c in bot.github.checks(sha) if c.name == DRIFT_STATUS), None)
    if current is not None and current.state == (
            CheckState.SUCCESS if state == StatusState.SUCCESS else CheckState.FAILURE):
        return  # already says so (the adapter reads error as failure)
    bot.github.set_status(sha, DRIFT_STATUS, state, description=text)
    if not bot.dry_run:
        bot.say(f"set {DRIFT_STATUS} to {state} on {sha[:12]}: {text}")


def _message(plan: Plan) -> str:
    lines = [f"Bump {plan.lead} to {plan.lead_target}", ""]
    lines += [f"- {c.package}: {c.specifier_before} -> {c.specifier_after} ({c.reason})"
              for c in plan.changes]
    lines += ["", "Generated by pinbump."]
    return "\n".join(lines)


@dataclass(frozen=True)
class DashView:
    """What the dashboard shows besides the plan: ignored versions, a held-back target."""

    ignored: dict[str, str] = field(default_factory=dict)
    marks: list[str] = field(default_factory=list)  # versions ignored by command
    held: tuple[str, int] | None = None  # (target, PR with hand edits)


def _dashboard(bot: BotServices, plan: Plan, pr: PullInfo | None, policy: Policy,
               view: DashView | None = None) -> int:
    github = bot.github
    view = view or DashView()
    state = None
    if pr is not None:
        state = decide(required_checks(policy), github.checks(pr.head_sha)).state
    body = dashboard_body(plan, pr.url if pr else None, state, ignored=view.ignored,
                          marks=view.marks, held=view.held)
    found = github.find_issue(DASHBOARD_TITLE, DASHBOARD_LABEL)
    if found is not None:  # the nightly gate's section (bot.commands.nightly) stays
        body = with_section(body, carried_section(found.body))
    action = decide_dashboard(found, body)
    if action == DashboardAction.CREATE or found is None:
        github.ensure_labels([DASHBOARD_LABEL])
        issue = github.create_issue(DASHBOARD_TITLE, body, [DASHBOARD_LABEL])
        bot.say(f"created the dashboard {issue.url}")
        return issue.number
    if action == DashboardAction.EDIT:
        github.edit_issue(found.number, body)
        bot.say(f"updated the dashboard {found.url}")
    return found.number


# -- the gate ------------------------------------------------------------------------------
@dataclass
class GateResult:
    state: GateState
    sha: str
    exit_code: int
    commented: bool = False
    decision: GateDecision | None = None
    not_bot: tuple[str, ...] = ()

    def as_dict(self, number: int) -> dict[str, object]:
        """What ``pinbump gate --json`` prints."""
        d = self.decision
        return {"pr": number, "state": str(self.state), "sha": self.sha,
                "exit_code": self.exit_code, "commented": self.commented,
                "passed": list(d.passed) if d else [],
                "waiting": list(d.waiting) if d else [],
                "failing": [{"name": c.name, "url": c.url} for c in d.failing] if d else [],
                "not_bot": list(self.not_bot)}


def read_summaries(reports: Path | None) -> list[tuple[str, str]]:
    """(job, summary.md) for each downloaded gpu-gate-<job> artifact folder."""
    if reports is None or not reports.is_dir():
        return []
    return [(path.parent.name, path.read_text(errors="replace"))
            for path in sorted(reports.glob("*/summary.md"))]


def base_policy(checkout: Path, base: str, token: str | None, remote: str = "origin"
                ) -> Policy:
    """The policy of the base branch as the remote holds it, read from a scratch checkout of
    ``<remote>/<base>``: never from what ``checkout`` has checked out (in a pull-request
    workflow that is the PR's own tree). An empty set of required checks is an error."""
    probe = Git(checkout)
    if probe.run("rev-parse", "--is-inside-work-tree", check=False) != "true":
        raise InputError(f"{checkout}: not a git checkout (the gate reads its policy from the "
                         "base branch through git)")
    url = remote_url(probe, remote)
    with scratch_checkout(Git(checkout, token, host=url_host(url)), url, base) as scratch:
        policy = load_workspace(scratch.cwd).policy
    _ = policy.checks_required
    return policy


def bot_identity(github: GitHub, policy: Policy) -> str:
    return policy.bot_login or github.identity()


def run_pr_gate(gh_opts: GitHubOptions, number: int, checkout: Path, *, out: IO[str],
                reports: Path | None = None, remote: str = "origin") -> GateResult:
    """The door of ``pinbump gate``: the policy of the PR's base branch, the bot's identity
    and the PR's commits, then the pure decision."""
    token = gh_opts.token() or ""
    github = gh_opts.client(token)
    pr = github.pull(number)
    if pr.merged or pr.state != PrState.OPEN:
        return gate(github, number, Policy(), out=out)
    policy = base_policy(checkout, pr.base_ref, token, remote)
    not_bot = not_bot_reasons(pr, github.pull_commits(number), bot_identity(github, policy))
    return gate(github, number, policy, out=out, reports=reports, not_bot=not_bot)


def gate(github: GitHubPort, number: int, policy: Policy, *, out: IO[str],
         reports: Path | None = None, not_bot: list[str] | None = None) -> GateResult:
    def say(line: str) -> None:
        print(f"pinbump: {line}", file=out)

    pr = github.pull(number)
    is_open = pr.state == PrState.OPEN and not pr.merged
    checks = github.checks(pr.head_sha) if is_open else []
    required = required_checks(policy)
    failed = is_open and decide(required, checks).state == GateState.FAILURE
    comments = github.comments(number) if failed else []  # read only when they matter
    verdict = decide_gate(pr, required, checks, comments, not_bot or ())
    decision = verdict.decision
    if verdict.action == GateAction.SKIP:
        say(f"#{number} is {verdict.state}: nothing to gate")
        return GateResult(verdict.state, pr.head_sha, 0)
    assert decision is not None
    if verdict.action == GateAction.REPORT:
        say(f"all required checks passed on {pr.head_sha[:12]}, but #{number} is not a bot "
            f"PR ({'; '.join(not_bot or ())}): pinbump merges only its own PRs; review and "
            "merge it by hand")
        return GateResult(GateState.NOT_BOT, pr.head_sha, 0, decision=decision,
                          not_bot=tuple(not_bot or ()))
    if verdict.action == GateAction.MERGE:
        enabled = github.auto_merge(number, pr.head_sha, policy.merge_method)
        route = merge_route(enabled, pr.mergeable_state)
        if route == GateState.AUTO_MERGE:
            say(f"pinbump's checks passed on {pr.head_sha[:12]}: GitHub's auto-merge is "
                f"{'now ' if enabled else ''}on for #{number}; it merges (through the merge "
                "queue where the base requires one) once the repository's required reviews "
                "and checks pass")
        elif route == GateState.BLOCKED:
            say(f"pinbump's checks passed on {pr.head_sha[:12]}, but GitHub says #{number} "
                f"is {pr.mergeable_state or 'unknown'} (required reviews, checks or branch "
                "protection): not merged yet")
        else:
            github.merge(number, pr.head_sha, policy.merge_method, f"{pr.title} (#{number})")
            say(f"all required checks passed on {pr.head_sha[:12]}: merged #{number} "
                f"({policy.merge_method})")
        return GateResult(route, pr.head_sha, 0, decision=decision)
    if verdict.state == GateState.FAILURE:
        commented = verdict.action == GateAction.COMMENT
        if commented:
            github.comment(number, failure_comment(pr.head_sha, decision,
                                                   read_summaries(reports)))
        names = ", ".join(c.name for c in decision.failing)
        say(f"gate failed on {pr.head_sha[:12]}: {names}; #{number} stays open")
        return GateResult(GateState.FAILURE, pr.head_sha, 1, commented, decision)
    say(f"pending on {pr.head_sha[:12]}: waiting for {', '.join(decision.waiting)}")
    return GateResult(GateState.PENDING, pr.head_sha, 0, decision=decision)
