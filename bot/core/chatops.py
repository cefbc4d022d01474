"""Maintainers' say over the bot PR: comment commands, dashboard checkboxes, ignored
versions and hand edits. Pure functions over data (issue 16, items 1, 2 and 5).

State lives on GitHub where maintainers can see it: a bot PR closed without merging ignores
its version (unless labelled ``pinbump-unignored``); versions ignored by command are listed
in the dashboard issue (one hidden marker per version, carried forward by each run).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from bot.core.models import PullInfo, RebaseWhen

VERBS = ("rebase", "recreate", "ignore", "unignore", "gate", "explain")
WRITE_ROLES = frozenset({"admin", "maintain", "write"})
SUPERSEDED = "pinbump-superseded"  # closed by pinbump for a newer target: not a skip
UNIGNORED = "pinbump-unignored"  # a maintainer undid the skip of a closed PR
_COMMAND = re.compile(r"^\s*/pinbump[ \t]+([a-z-]+)(?:[ \t]+(.*?))?[ \t]*$", re.MULTILINE)
_IGNORED_MARK = re.compile(r"<!-- pinbump:ignored ([0-9A-Za-z.+!_-]{1,64}) -->")
_CHECKED = re.compile(r"^\s*- \[[xX]\] <!-- pinbump:do ([a-z]+)"
                      r"(?: ([0-9A-Za-z.+!_-]{1,64}))? -->", re.MULTILINE)


@dataclass(frozen=True)
class Command:
    verb: str  # one of VERBS, or "unknown"
    version: str | None = None  # ignore/unignore: a version; None: this PR's version
    text: str = ""  # what was typed, for "unknown"


def _version(text: str) -> str | None:
    if len(text) > 64:
        return None
    try:
        return str(Version(text))
    except InvalidVersion:
        return None


def parse_command(body: str) -> Command | None:
    """The first ``/pinbump VERB [ARG]`` line of a comment; None when there is none."""
    m = _COMMAND.search(body or "")
    if m is None:
        return None
    verb, arg = m.group(1), (m.group(2) or "").strip()
    if verb not in VERBS:
        return Command("unknown", text=verb[:40])
    if verb in ("ignore", "unignore"):
        if arg in ("", "this version", "this"):
            return Command(verb)
        version = _version(arg)
        return Command(verb, version) if version else Command("unknown", text=arg[:40])
    return Command(verb)


def may_command(permission: str) -> bool:
    """GitHub's permission of the commenter on the repository (admin, maintain, write,
    triage, read, none): only those who could push may command the bot."""
    return permission in WRITE_ROLES


def refusal_mark(login: str) -> str:
    return f"<!-- pinbump:refused {re.sub(r'[^A-Za-z0-9-]', '', login)[:39]} -->"


def refusal(login: str) -> str:
    return (f"{refusal_mark(login)}\nThanks for the suggestion. pinbump takes commands only "
            "from people with write access to this repository, so this one was not run; a "
            "maintainer can repeat it.")


def refused_before(login: str, comments: Iterable[str]) -> bool:
    mark = refusal_mark(login)
    return any(mark in c for c in comments)


# -- ignored versions -------------------------------------------------------------------------
def version_of(branch: str, prefix: str) -> str | None:
    """The target version a bot branch names, normalized; None when it names none (a fork
    PR's branch is its owner's to name: ``@acme/admins`` must never reach a reply)."""
    return _version(branch[len(prefix):]) if branch.startswith(prefix) else None


def ignored_versions(closed: Sequence[PullInfo], prefix: str, dashboard_body: str
                     ) -> dict[str, str]:
    """version -> how to undo, from closed-unmerged bot PRs and the dashboard's markers."""
    out: dict[str, str] = {}
    for pr in closed:
        version = version_of(pr.head_ref, prefix)
        if version is None or pr.merged or SUPERSEDED in pr.labels or UNIGNORED in pr.labels:
            continue
        out.setdefault(version, f"#{pr.number} was closed without merging: comment "
                                f"`/pinbump unignore` on it to undo")
    for version in _IGNORED_MARK.findall(dashboard_body or ""):
        out.setdefault(version, f"ignored by command: comment `/pinbump unignore {version}` "
                                "on this issue to undo")
    return out


def ignored_marks(versions: Iterable[str]) -> list[str]:
    return [f"<!-- pinbump:ignored {v} -->" for v in sorted(set(versions))
            if _IGNORED_MARK.fullmatch(f"<!-- pinbump:ignored {v} -->")]


def marked_versions(dashboard_body: str) -> list[str]:
    return sorted(set(_IGNORED_MARK.findall(dashboard_body or "")))


# -- dashboard checkboxes ---------------------------------------------------------------------
# Each box carries its command in a hidden marker; ignore and unignore carry their version, so
# a box means what the dashboard showed when it was ticked, whatever the target is by then.
CHECKBOXES = (("recreate", "Recreate the bot PR from scratch (drops hand edits on its branch)"),
              ("rebase", "Rebase the bot PR on the base branch (keeps hand edits)"),
              ("gate", "Re-run the GPU gate on the bot PR's head commit"),
              ("explain", "Explain the plan: pinbump replies on this issue with why each "
                          "newer version was taken or rejected"))


def checkbox_lines(target: str | None = None, ignored: Iterable[str] = ()) -> list[str]:
    """The dashboard's boxes: the fixed commands, ``ignore`` for the current ``target`` (when
    it is not ignored already) and one ``unignore`` per ignored version."""
    lines = [f"- [ ] <!-- pinbump:do {verb} --> {text}" for verb, text in CHECKBOXES]
    skipped = sorted({v for v in map(_version, ignored) if v}, key=Version)
    version = _version(target or "")
    if version and version not in skipped:
        lines.append(f"- [ ] <!-- pinbump:do ignore {version} --> Ignore `{version}`: skip "
                     "it (its open bot PR is closed) until a newer version appears")
    lines += [f"- [ ] <!-- pinbump:do unignore {v} --> Unignore `{v}`: pinbump may propose "
              "it again" for v in skipped]
    return lines


def checked_commands(body: str) -> list[Command]:
    """The commands whose dashboard checkbox a maintainer ticked, in the dashboard's order;
    ignore and unignore name the version their box carries (None: the marker has none)."""
    out: dict[tuple[str, str | None], Command] = {}
    for verb, arg in _CHECKED.findall(body or ""):
        if verb not in VERBS:
            continue
        version = _version(arg) if verb in ("ignore", "unignore") and arg else None
        out.setdefault((verb, version), Command(verb, version))
    return list(out.values())


def untick(body: str) -> str:
    return re.sub(r"^(\s*- )\[[xX]\]( <!-- pinbump:do )", r"\1[ ]\2", body, flags=re.MULTILINE)


# -- hand edits -------------------------------------------------------------------------------
def newer_target_mark(version: str) -> str:
    return f"<!-- pinbump:newer-target {version} -->"


def newer_target_comment(version: str, lead: str) -> str:
    return (f"{newer_target_mark(version)}\npinbump: a new target, `{lead}` {version}, is "
            "available; this branch has hand edits, so pinbump leaves it alone. Comment "
            "`/pinbump recreate` to start over from the new target (the hand edits are "
            "dropped), or `/pinbump rebase` to bring this branch up to date with its base.")


def rebase_needed(rebase_when: RebaseWhen, mergeable_state: str, behind: bool) -> bool:
    """Whether an unchanged bot branch whose base moved is rebased: ``conflicted`` (the
    default) only when GitHub reports a conflict, ``behind`` whenever the base moved,
    ``never`` only on request."""
    if not behind:
        return False
    if rebase_when == RebaseWhen.BEHIND:
        return True
    return rebase_when == RebaseWhen.CONFLICTED and mergeable_state == "dirty"
