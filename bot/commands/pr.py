"""pinbump run and pinbump gate: plan, apply and drift put on GitHub.

Wiring only: the decisions (what to write, what the body says, whether the gate passed) are
made by the pure modules; git and GitHub are reached through their adapters.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from bot.adapters.git import Git
from bot.adapters.github import DEFAULT_API, GitHub, PullInfo
from bot.adapters.http import HttpClient
from bot.adapters.tree import read_tree
from bot.adapters.writer import write_all
from bot.commands.pipeline import PlanOptions, planned, run_drift
from bot.core.config import Policy
from bot.core.drift import DriftReport
from bot.core.editset import compute_edits
from bot.core.models import Plan
from bot.core.prbody import (
    DASHBOARD_TITLE,
    GateInfo,
    dashboard_body,
    decide,
    failure_comment,
    pr_body,
    pr_title,
)
from bot.errors import InputError, PinbumpError

GATE_INPUTS = ("pr", "sha")  # the inputs of the gate workflow's workflow_dispatch


@dataclass(frozen=True)
class GitHubOptions:
    repo: str  # OWNER/NAME
    token_env: str = "GITHUB_TOKEN"
    api_url: str = DEFAULT_API
    write_interval: float = 1.0

    def client(self, token: str) -> GitHub:
        return GitHub(self.repo, token, base_url=self.api_url,
                      write_interval=self.write_interval)

    def token(self, needed: bool = True) -> str | None:
        """The token from the environment; missing is an error before anything changes."""
        token = os.environ.get(self.token_env, "").strip()
        if not token and needed:
            raise InputError(f"${self.token_env} is not set: pinbump needs a GitHub token "
                             f"with contents, pull-requests, issues and actions write access "
                             f"to {self.repo} (nothing was changed)")
        return token or None


@dataclass
class RunResult:
    action: str  # nothing | opened | updated | unchanged | dry-run
    branch: str = ""
    pr: int | None = None
    head_sha: str = ""
    pushed: bool = False
    superseded: list[int] = field(default_factory=list)
    dispatched: bool = False
    dashboard: int | None = None
    body: str = ""


def _say(out: IO[str]) -> Callable[[str], None]:
    return lambda line: print(f"pinbump: {line}", file=out)


def run_bot(plan_opts: PlanOptions, gh_opts: GitHubOptions, base: str, *, dry_run: bool,
            remote: str = "origin", out: IO[str]) -> RunResult:
    say = _say(out)
    token = gh_opts.token(needed=not dry_run)
    root = plan_opts.repo
    if Git(root).run("rev-parse", "--is-inside-work-tree", check=False) != "true":
        raise InputError(f"{root}: not a git checkout (pinbump run commits and pushes)")
    git = Git(root, token, host=_remote_host(Git(root), remote))
    git.run("fetch", "--quiet", remote, f"+refs/heads/{base}:refs/remotes/{remote}/{base}")
    with base_worktree(git, f"{remote}/{base}") as worktree:
        return _run_on(worktree, git, replace(plan_opts, repo=worktree), gh_opts, token, base,
                       dry_run, remote, say)


def _remote_host(git: Git, remote: str) -> str:
    """The host the push goes to (github.com, or a GitHub Enterprise host)."""
    url = git.run("remote", "get-url", remote, check=False)
    match = re.match(r"https?://(?:[^@/]+@)?([^/:]+)", url)
    return match.group(1) if match else "github.com"


@contextmanager
def base_worktree(git: Git, ref: str) -> Iterator[Path]:
    """A throw-away worktree of ``ref``: the bump is made against the remote base, never
    against whatever the local checkout holds."""
    tmp = Path(tempfile.mkdtemp(prefix="pinbump-"))
    worktree = tmp / "tree"
    git.run("worktree", "add", "--quiet", "--detach", str(worktree), ref)
    try:
        yield worktree
    finally:
        git.run("worktree", "remove", "--force", str(worktree), check=False)
        shutil.rmtree(tmp, ignore_errors=True)


def _run_on(worktree: Path, git: Git, plan_opts: PlanOptions, gh_opts: GitHubOptions,
            token: str | None, base: str, dry_run: bool, remote: str,
            say: Callable[[str], None]) -> RunResult:
    with HttpClient(plan_opts.cache, timeout=plan_opts.timeout,
                    retries=plan_opts.retries) as http:
        return _bump(worktree, git, plan_opts, gh_opts, token, base, dry_run, remote, say,
                     http)


def _bump(worktree: Path, git: Git, plan_opts: PlanOptions, gh_opts: GitHubOptions,
          token: str | None, base: str, dry_run: bool, remote: str,
          say: Callable[[str], None], http: HttpClient) -> RunResult:
    """One index client serves the plan and the drift."""
    with planned(plan_opts, http=http) as done:
        plan, policy = done.plan, done.policy
    github = None if dry_run else gh_opts.client(token or "")
    group = policy.active_group
    prefix = f"pinbump/{group.name}-"
    if not plan.changes:
        say(f"nothing to bump: {plan.lead} {plan.lead_current} is the newest complete and "
            "consistent set")
        result = RunResult(action="nothing")
        if github is not None:
            open_prs = github.open_pulls(base, prefix)
            result.dashboard = _dashboard(github, plan, open_prs[0] if open_prs else None,
                                          policy, say)
        return result
    branch = f"{prefix}{plan.lead_target}"
    result = RunResult(action="dry-run" if dry_run else "unchanged", branch=branch)
    body, head_sha, pushed = _prepare_branch(git, Git(worktree, token, git.host), plan,
                                             policy, plan_opts, base, branch, remote, dry_run,
                                             say, http)
    result.body, result.head_sha, result.pushed = body, head_sha, pushed
    if github is None:
        say(f"dry run: would push {branch} and open or update its PR; nothing was changed")
        return result
    title = pr_title(plan)
    pulls = github.open_pulls(base, prefix)
    mine = next((p for p in pulls if p.head_ref == branch), None)
    if mine is None:
        mine = github.create_pull(title=title, body=body, head=branch, base=base)
        result.action = "opened"
        say(f"opened {mine.url}")
        if policy.reviewers:
            github.request_reviewers(mine.number, list(policy.reviewers))
    elif mine.body != body or mine.title != title:
        github.edit_pull(mine.number, title=title, body=body)
        result.action = "updated"
        say(f"updated {mine.url}")
    elif pushed:
        result.action = "updated"
    else:
        say(f"{mine.url} is current: nothing to do")
    result.pr = mine.number
    missing = [label for label in policy.labels if label not in mine.labels]
    if missing:
        github.ensure_labels(missing)
        github.add_labels(mine.number, missing)
    for old in pulls:
        if old.head_ref == branch:
            continue
        github.comment(old.number, f"Superseded by #{mine.number} ({plan.lead} "
                                   f"{plan.lead_target}). Closing this one.")
        github.edit_pull(old.number, state="closed")
        result.superseded.append(old.number)
        say(f"closed #{old.number} ({old.head_ref}): superseded by #{mine.number}")
    if pushed or result.action == "opened":
        github.dispatch(policy.gate_workflow, base,
                        dict(zip(GATE_INPUTS, (str(mine.number), head_sha), strict=True)))
        result.dispatched = True
        say(f"dispatched {policy.gate_workflow} for #{mine.number} at {head_sha[:12]}")
    current = github.pull(mine.number)
    result.dashboard = _dashboard(github, plan, current, policy, say)
    return result


def _prepare_branch(git: Git, wt: Git, plan: Plan, policy: Policy, plan_opts: PlanOptions,
                    base: str, branch: str, remote: str, dry_run: bool,
                    say: Callable[[str], None], http: HttpClient) -> tuple[str, str, bool]:
    """Apply the plan in the base worktree, commit, push when the tree differs.

    Returns (PR body, head SHA, whether a new commit was pushed)."""
    tree = read_tree(wt.cwd)
    edits, notes = compute_edits(plan, policy, tree.text)
    write_all(wt.cwd, {f.path: f.new.encode("utf-8") for f in edits.files}, tree.raw)
    drift: DriftReport | None = None
    try:
        drift = run_drift(plan_opts, plan.lead_current, plan.lead_target, http=http).report
    except PinbumpError as exc:
        notes = [*notes, f"API drift could not be computed: {exc}"]
    gate = GateInfo(policy.gate_workflow, policy.runner_labels, policy.checks_required)
    body = pr_body(plan, edits, drift, gate, notes)
    wt.run("add", "-A")
    wt.run("commit", "--quiet", "--no-verify", "-m", _message(plan))
    new_tree = wt.run("rev-parse", "HEAD^{tree}")
    remote_sha = git.remote_head(remote, branch)
    if remote_sha:
        git.run("fetch", "--quiet", remote, f"+refs/heads/{branch}:refs/pinbump/{branch}")
        if git.run("rev-parse", f"{remote_sha}^{{tree}}") == new_tree and \
                git.run("rev-parse", f"{remote_sha}^") == git.rev(f"{remote}/{base}"):
            return body, remote_sha, False
    head = wt.run("rev-parse", "HEAD")
    if dry_run:
        return body, head, False
    wt.run("push", "--quiet", f"--force-with-lease=refs/heads/{branch}:{remote_sha or ''}",
           remote, f"HEAD:refs/heads/{branch}")
    say(f"pushed {branch} at {head[:12]}")
    return body, head, True


def _message(plan: Plan) -> str:
    lines = [f"Bump {plan.lead} to {plan.lead_target}", ""]
    lines += [f"- {c.package}: {c.specifier_before} -> {c.specifier_after} ({c.reason})"
              for c in plan.changes]
    lines += ["", "Generated by pinbump."]
    return "\n".join(lines)


def _dashboard(github: GitHub, plan: Plan, pr: PullInfo | None, policy: Policy,
               say: Callable[[str], None]) -> int:
    state = None
    if pr is not None:
        state = decide(policy.checks_required, github.checks(pr.head_sha)).state
    body = dashboard_body(plan, pr.url if pr else None, state)
    label = "pinbump"
    found = github.find_issue(DASHBOARD_TITLE, label)
    if found is None:
        github.ensure_labels([label])
        issue = github.create_issue(DASHBOARD_TITLE, body, [label])
        say(f"created the dashboard {issue.url}")
        return issue.number
    if found.body != body:
        github.edit_issue(found.number, body)
        say(f"updated the dashboard {found.url}")
    return found.number


# -- the gate ------------------------------------------------------------------------------
@dataclass
class GateResult:
    state: str  # success | failure | pending | merged | closed
    sha: str
    exit_code: int
    commented: bool = False


def read_summaries(reports: Path | None) -> list[tuple[str, str]]:
    """(job, summary.md) for each downloaded gpu-gate-<job> artifact folder."""
    if reports is None or not reports.is_dir():
        return []
    return [(path.parent.name, path.read_text(errors="replace"))
            for path in sorted(reports.glob("*/summary.md"))]


def run_pr_gate(gh_opts: GitHubOptions, number: int, policy: Policy, *, out: IO[str],
                reports: Path | None = None) -> GateResult:
    say = _say(out)
    token = gh_opts.token() or ""
    github = gh_opts.client(token)
    pr = github.pull(number)
    if pr.merged or pr.state != "open":
        say(f"#{number} is {'merged' if pr.merged else 'closed'}: nothing to gate")
        return GateResult("merged" if pr.merged else "closed", pr.head_sha, 0)
    decision = decide(policy.checks_required, github.checks(pr.head_sha))
    if decision.state == "success":
        github.merge(number, pr.head_sha, policy.merge_method, f"{pr.title} (#{number})")
        say(f"all required checks passed on {pr.head_sha[:12]}: merged #{number} "
            f"({policy.merge_method})")
        return GateResult("merged", pr.head_sha, 0)
    if decision.state == "failure":
        mark = f"<!-- pinbump: gate-failed {pr.head_sha} -->"
        commented = False
        if not any(mark in c for c in github.comments(number)):
            github.comment(number, failure_comment(pr.head_sha, decision,
                                                   read_summaries(reports)))
            commented = True
        names = ", ".join(c.name for c in decision.failing)
        say(f"gate failed on {pr.head_sha[:12]}: {names}; #{number} stays open")
        return GateResult("failure", pr.head_sha, 1, commented)
    say(f"pending on {pr.head_sha[:12]}: waiting for {', '.join(decision.waiting)}")
    return GateResult("pending", pr.head_sha, 0)
