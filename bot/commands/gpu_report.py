"""verify-pr and report-gpu: the two doors of the GPU gate workflow that touch GitHub.

``verify-pr`` runs before any GPU job: it refuses a SHA that is not the head of an open
same-repository bot PR (or, for a pull-request event, of a same-repository PR a maintainer
labelled). ``report-gpu`` runs after them in a job that holds ``statuses: write`` and no GPU:
it checks the same again, reads each job's gate.json artifact as data and sets one commit
status per GPU job on that SHA.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO

from bot.adapters.github import GitHub
from bot.commands.pr import GitHubOptions, base_policy, bot_identity
from bot.core.botpr import gate_target_problems
from bot.core.config import STATUS_PREFIX, Policy
from bot.core.gpu_result import MAX_RESULT_BYTES, JobResult, read_result
from bot.errors import RefusedTarget


@dataclass(frozen=True)
class GateTarget:
    pr: int
    sha: str
    allow_label: str | None = None  # pull-request events: a maintainer's label admits a PR


def verified(github: GitHub, target: GateTarget, checkout: Path, token: str,
             remote: str = "origin") -> Policy:
    """The base branch's policy, once ``target`` is shown to be one the gate may test."""
    pr = github.pull(target.pr)
    policy = base_policy(checkout, pr.base_ref, token, remote)
    problems = gate_target_problems(pr, target.sha, github.pull_commits(target.pr),
                                    bot_identity(github, policy),
                                    allow_label=target.allow_label)
    if problems:
        raise RefusedTarget(f"refusing to gate {target.sha[:40]!r}: " + "; ".join(problems))
    return policy


def run_verify(gh_opts: GitHubOptions, target: GateTarget, checkout: Path, *,
               out: IO[str]) -> int:
    token = gh_opts.token() or ""
    verified(gh_opts.client(token), target, checkout, token)
    print(f"pinbump: #{target.pr} at {target.sha[:12]} may be gated", file=out)
    return 0


def _artifact(reports: Path, job: str) -> bytes | None:
    """gpu-gate-<job>/gate.json, read without following a link and only up to the cap."""
    path = reports / f"gpu-gate-{job}" / "gate.json"
    if path.is_symlink() or not path.is_file():
        return None
    with path.open("rb") as fh:
        return fh.read(MAX_RESULT_BYTES + 1)


def run_report(gh_opts: GitHubOptions, target: GateTarget, checkout: Path, reports: Path,
               *, target_url: str = "", out: IO[str]) -> list[JobResult]:
    token = gh_opts.token() or ""
    github = gh_opts.client(token)
    policy = verified(github, target, checkout, token)
    results = [read_result(job, _artifact(reports, job)) for job in policy.runner_labels]
    for r in results:
        github.set_status(target.sha, f"{STATUS_PREFIX}/{r.job}", r.state, target_url,
                          r.description)
        print(f"pinbump: {STATUS_PREFIX}/{r.job} = {r.state} on {target.sha[:12]} "
              f"({r.description})", file=out)
    return results
