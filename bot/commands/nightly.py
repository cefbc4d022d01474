"""The nightly gate: an early warning, never a merge.

``run --channel nightly`` (without ``nightly-prs``) plans against FlashInfer's nightly indexes
and, when a nightly build is newer than the pins, dispatches the GPU gate workflow on the
default branch's head commit (trusted code, never a PR) with ``channel=nightly`` and the
versions it planned; it opens no branch and no PR. In that workflow ``verify-nightly``
accepts the dispatch only when the SHA is the default branch's current head and the versions
are exactly what the runner plans itself from that commit; ``report-gpu --channel nightly``
sets ``pinbump/nightly-gate/<job>`` on that commit; ``nightly-dashboard`` shows the result
on the dashboard issue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import IO

from bot.adapters.git import Git, remote_url, scratch_checkout, url_host
from bot.adapters.github import GitHub, GitHubPort
from bot.commands.context import PlanOptions, load_workspace, open_services
from bot.commands.gpu_report import _artifact
from bot.commands.plan import plan as make_plan
from bot.commands.pr import (
    DASHBOARD_LABEL,
    BotServices,
    GitHubOptions,
    RunOptions,
    RunResult,
    base_policy,
)
from bot.core.decisions import RunAction
from bot.core.gpu_result import JobResult, read_result
from bot.core.models import IssueInfo, StatusState
from bot.core.nightly import (
    NIGHTLY_PREFIX,
    NightlyRecord,
    format_versions,
    nightly_section,
    parse_versions,
    planned_versions,
    read_record,
    with_section,
)
from bot.core.prbody import DASHBOARD_TITLE
from bot.core.workspace import Workspace
from bot.errors import RefusedTarget

NIGHTLY_INPUTS = ("channel", "versions")  # the gate workflow's inputs beside pr and sha


def nightly_gate(ws: Workspace, bot: BotServices, opts: RunOptions) -> RunResult:
    """Plan the nightly set of the base checkout ``ws``; dispatch the GPU gate on the base's
    head when it is new (once per SHA and set); show it on the dashboard."""
    policy, group = ws.policy, ws.group
    bot.github.preflight(policy.gate_workflow)
    plan = make_plan(ws, bot.base, opts.as_of)
    sha = bot.git.run("rev-parse", f"refs/remotes/base/{opts.base}")
    result = RunResult(action=RunAction.NIGHTLY, head_sha=sha)
    versions = planned_versions(plan, (group.lead, *group.lockstep))
    if group.lead not in versions:
        bot.say(f"nightly: no build newer than {plan.lead} {plan.lead_current} on the nightly "
                "indexes: nothing to gate")
        return result
    jobs = list(policy.runner_labels)
    if not jobs:
        bot.say("nightly: no GPU job in [runner-labels]: nothing to dispatch")
        return result
    record = NightlyRecord(sha, format_versions(versions))
    found = bot.github.find_issue(DASHBOARD_TITLE, DASHBOARD_LABEL)
    if found is not None and read_record(found.body) == record:
        bot.say(f"nightly: {record.versions} already dispatched on {sha[:12]}")
    else:
        bot.github.dispatch(policy.gate_workflow, opts.base,
                            {"sha": sha, **dict(zip(NIGHTLY_INPUTS, ("nightly", record.versions),
                                                   strict=True))})
        for job in jobs:
            bot.github.set_status(sha, f"{NIGHTLY_PREFIX}/{job}", StatusState.PENDING,
                                  description=f"queued: nightly {plan.lead} "
                                              f"{versions[group.lead]}")
        result.dispatched = True
        bot.say(f"dispatched {policy.gate_workflow} (nightly: {record.versions}) on "
                f"{opts.base} at {sha[:12]}; no PR")
    section = nightly_section(record, bot.github.checks(sha), plan.lead)
    result.dashboard = show(bot.github, found, section, bot.say)
    return result


def show(github: GitHubPort, found: IssueInfo | None, section: str,
         say: Callable[[str], None]) -> int:
    """The dashboard with ``section`` as its nightly section (created when there is none);
    written only when it changes."""
    if found is None:
        github.ensure_labels([DASHBOARD_LABEL])
        issue = github.create_issue(DASHBOARD_TITLE, with_section("", section),
                                    [DASHBOARD_LABEL])
        say(f"created the dashboard {issue.url}")
        return issue.number
    body = with_section(found.body, section)
    if body != found.body:
        github.edit_issue(found.number, body)
        say(f"updated the dashboard's nightly section {found.url}")
    return found.number


# -- the gate workflow's side ------------------------------------------------------------
def _default_head(github: GitHub, checkout: Path, token: str, base: str) -> tuple[Git, str,
                                                                                   str]:
    """(git, remote URL, head SHA of ``base``), once ``base`` is shown to be the repository's
    default branch: nightly runs test trusted code only."""
    default = github.default_branch()
    if base != default:
        raise RefusedTarget(f"refusing the nightly gate on branch {base[:100]!r}: only the "
                            f"default branch ({default}) is gated nightly")
    probe = Git(checkout)
    url = remote_url(probe, "origin")
    git = Git(checkout, token, host=url_host(url))
    head = git.remote_head(url, base)
    if head is None:
        raise RefusedTarget(f"refusing the nightly gate: {base} has no head on the remote")
    return git, url, head


def run_verify_nightly(plan_opts: PlanOptions, gh_opts: GitHubOptions, sha: str,
                       versions_text: str, base: str, *, out: IO[str]) -> dict[str, str]:
    """Accept a nightly dispatch only when ``sha`` is the default branch's head now and
    ``versions`` is exactly what this runner plans, on the nightly channel, from that
    commit's own tree and policy. The versions are parsed before anything else is done."""
    wanted = parse_versions(versions_text)
    token = gh_opts.token() or ""
    github = gh_opts.client(token)
    git, url, head = _default_head(github, plan_opts.repo, token, base)
    if head != sha:
        raise RefusedTarget(f"refusing the nightly gate on {sha}: not the head of {base} "
                            f"({head[:12]}); nightly runs test the default branch's head only")
    plan_opts = replace(plan_opts, channel="nightly")
    with open_services(plan_opts, out=out) as services, \
            scratch_checkout(git, url, base) as scratch:
        if scratch.run("rev-parse", f"refs/remotes/base/{base}") != sha:
            raise RefusedTarget(f"refusing the nightly gate on {sha}: {base} moved while it "
                                "was checked")
        ws = load_workspace(scratch.cwd, plan_opts.overrides)
        group = ws.group
        parse_versions(versions_text, (group.lead, *group.lockstep))
        planned = planned_versions(make_plan(ws, services, plan_opts.as_of),
                                   (group.lead, *group.lockstep))
    if wanted != planned:
        raise RefusedTarget(f"refusing the nightly gate: the dispatch names "
                            f"{format_versions(wanted)}, but the nightly plan of {sha[:12]} "
                            f"is {format_versions(planned) or 'nothing newer'}")
    print(f"pinbump: nightly {format_versions(planned)} on {base} at {sha[:12]} may be gated",
          file=out)
    return {"sha": sha, "versions": format_versions(planned)}


def run_report_nightly(gh_opts: GitHubOptions, checkout: Path, sha: str, versions_text: str,
                       base: str, reports: Path, *, target_url: str = "", out: IO[str]
                       ) -> list[JobResult]:
    """``pinbump/nightly-gate/<job>`` on the tested base commit from each job's gate.json
    (read as data). The SHA need not be the head any more (the base may have moved while the
    GPUs ran; ``verify-nightly`` checked it when the run started): a nightly status gates
    nothing, it only warns."""
    versions = parse_versions(versions_text)
    token = gh_opts.token() or ""
    github = gh_opts.client(token)
    _default_head(github, checkout, token, base)
    policy = base_policy(checkout, base, token)
    lead, version = next(iter(versions.items()))
    results = [read_result(job, _artifact(reports, job)) for job in policy.runner_labels]
    for r in results:
        context = f"{NIGHTLY_PREFIX}/{r.job}"
        github.set_status(sha, context, r.state, target_url,
                          f"nightly {lead} {version}: {r.description}"[:140])
        print(f"pinbump: {context} = {r.state} on {sha[:12]} ({r.description})", file=out)
    return results


def run_nightly_dashboard(gh_opts: GitHubOptions, checkout: Path, sha: str, versions_text: str,
                          base: str, *, out: IO[str]) -> int:
    """The dashboard's nightly section from the ``pinbump/nightly-gate/*`` statuses on
    ``sha`` (read as data: their state and an https link)."""
    versions = parse_versions(versions_text)
    token = gh_opts.token() or ""
    github = gh_opts.client(token)
    _default_head(github, checkout, token, base)
    record = NightlyRecord(sha, format_versions(versions))
    lead = next(iter(versions), "")
    section = nightly_section(record, github.checks(sha), lead)
    found = github.find_issue(DASHBOARD_TITLE, DASHBOARD_LABEL)
    return show(github, found, section, lambda line: print(f"pinbump: {line}", file=out))
