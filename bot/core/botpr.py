"""Who may be gated, tested and merged: the bot PR's identity rules. Pure functions.

A pull request is the bot's own only when every one of these holds (issue 11, item 2):
its head branch is ``pinbump/*``, it lives in the base repository (not a fork), GitHub says
the bot's identity opened it, and every commit on it carries the bot's git identity and,
where GitHub links the commit to an account, that account is the bot. Anything else is a
human PR: the GPU gate may test it (when a maintainer labelled it), pinbump never merges it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.core.models import PrState, PullInfo
from bot.errors import InputError

BRANCH_PREFIX = "pinbump/"
BOT_GIT_NAME = "pinbump[bot]"
BOT_GIT_EMAIL = "pinbump-bot@users.noreply.github.com"


@dataclass(frozen=True)
class CommitAuthor:
    """One commit of a PR as GitHub reports it: the git identity and the linked accounts."""

    sha: str
    name: str
    email: str
    login: str | None  # the account GitHub links the author email to, if any
    committer_login: str | None = None


MAX_BRANCH = 100  # a ref is a file name on the remote: keep far below the 255-byte limit


def bot_branch(group: str, version: str) -> str:
    """``pinbump/<group>-<version>``; a version that cannot name a branch is an input error."""
    branch = f"{BRANCH_PREFIX}{group}-{version}"
    if len(branch) > MAX_BRANCH or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", version):
        shown = version if len(version) <= 40 else f"{version[:20]}…({len(version)} chars)"
        raise InputError(f"{group}: target version {shown!r} cannot name a branch "
                         f"({BRANCH_PREFIX}{group}-VERSION must be at most {MAX_BRANCH} "
                         "characters of letters, digits, '.', '+', '-' and '_')")
    return branch


def is_bot_commit(commit: CommitAuthor, bot_login: str) -> bool:
    if (commit.name, commit.email.lower()) != (BOT_GIT_NAME, BOT_GIT_EMAIL):
        return False
    return all(login in (None, bot_login) for login in (commit.login, commit.committer_login))


def hand_commits(commits: Sequence[CommitAuthor], bot_login: str) -> list[CommitAuthor]:
    """The commits on a bot branch that the bot did not make."""
    return [c for c in commits if not is_bot_commit(c, bot_login)]


def not_bot_reasons(pr: PullInfo, commits: Sequence[CommitAuthor], bot_login: str
                    ) -> list[str]:
    """Why ``pr`` is not the bot's own PR; empty when it is."""
    reasons = []
    if not pr.head_ref.startswith(BRANCH_PREFIX):
        reasons.append(f"its head branch {pr.head_ref!r} is not a {BRANCH_PREFIX}* branch")
    if pr.head_repo != pr.base_repo:
        reasons.append(f"its head lives in {pr.head_repo or 'a deleted repository'!s}, "
                       f"not in {pr.base_repo}")
    if pr.author != bot_login:
        reasons.append(f"it was opened by {pr.author!r}, not by the bot ({bot_login!r})")
    others = hand_commits(commits, bot_login)
    if others:
        shas = ", ".join(c.sha[:12] for c in others[:5])
        reasons.append(f"{len(others)} commit(s) not made by the bot ({shas})")
    if not commits:
        reasons.append("GitHub lists no commits on it")
    return reasons


def gate_target_problems(pr: PullInfo, sha: str, commits: Sequence[CommitAuthor],
                         bot_login: str, *, allow_label: str | None = None) -> list[str]:
    """Why the GPU gate must not test ``sha`` for ``pr``; empty when it may.

    A dispatch (``allow_label`` None) must name the head SHA of an open, same-repository
    bot PR. A pull-request event may also test a same-repository PR a maintainer labelled
    ``allow_label`` (its results are reported; pinbump never merges it)."""
    problems = []
    if pr.merged or pr.state != PrState.OPEN:
        problems.append(f"#{pr.number} is {'merged' if pr.merged else pr.state}")
    if sha != pr.head_sha:
        problems.append(f"{sha[:40]!r} is not the head of #{pr.number} "
                        f"({pr.head_sha[:12]})")
    if pr.head_repo != pr.base_repo:
        problems.append(f"#{pr.number} comes from {pr.head_repo or 'a deleted repository'}, "
                        f"not from {pr.base_repo}")
    if not problems:
        reasons = not_bot_reasons(pr, commits, bot_login)
        if reasons and not (allow_label and allow_label in pr.labels):
            problems.append(f"#{pr.number} is not a bot PR: " + "; ".join(reasons))
    return problems
