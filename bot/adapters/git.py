"""Adapter: every git command goes through ``Git.run``.

A token for an HTTPS remote travels only in the environment of the push/fetch process, as an
``http.extraheader`` set through GIT_CONFIG_COUNT/KEY/VALUE: never in a URL, on a command line,
in .git/config or in any file.
"""

from __future__ import annotations

import base64
import copy
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from bot.core.botpr import BOT_GIT_EMAIL as BOT_EMAIL
from bot.core.botpr import BOT_GIT_NAME as BOT_NAME
from bot.errors import GitError


class Git:
    def __init__(self, cwd: Path, token: str | None = None, host: str = "github.com") -> None:
        self.cwd = cwd
        self._token = token
        self.host = host

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C",
                    "GIT_AUTHOR_NAME": BOT_NAME, "GIT_AUTHOR_EMAIL": BOT_EMAIL,
                    "GIT_COMMITTER_NAME": BOT_NAME, "GIT_COMMITTER_EMAIL": BOT_EMAIL})
        if self._token:
            basic = base64.b64encode(f"x-access-token:{self._token}".encode()).decode()
            env.update({"GIT_CONFIG_COUNT": "1",
                        "GIT_CONFIG_KEY_0": f"http.https://{self.host}/.extraheader",
                        "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}"})
        return env

    def run(self, *args: str, check: bool = True, cwd: Path | None = None,
            env: Mapping[str, str] | None = None, input: str | None = None) -> str:
        """Run ``git args`` and return its stdout; a failure raises GitError (token-free)."""
        proc = subprocess.run(["git", *args], cwd=cwd or self.cwd, capture_output=True,
                              text=True, env={**self._env(), **(env or {})}, timeout=600,
                              input=input)
        if check and proc.returncode != 0:
            detail = " | ".join(line.strip() for line in
                               (proc.stderr.strip() or proc.stdout.strip()).splitlines()
                               if line.strip())
            message = f"git {' '.join(args[:3])} failed ({proc.returncode}): " + (
                detail or "no output")
            if self._token:
                message = message.replace(self._token, "***")
            raise GitError(message)
        return proc.stdout.strip()

    def at(self, cwd: Path) -> Git:
        """The same door (token, host, dry-run or not) working in another folder."""
        clone = copy.copy(self)
        clone.cwd = cwd
        return clone

    def push(self, url: str, branch: str, expected: str | None) -> bool:
        """Push HEAD to ``branch`` of ``url`` if the branch still points at ``expected``
        (None: must not exist). Returns whether anything was pushed."""
        self.run("push", "--quiet", f"--force-with-lease=refs/heads/{branch}:{expected or ''}",
                 url, f"HEAD:refs/heads/{branch}")
        return True

    def check_push(self, url: str) -> None:
        """Preflight: authenticate a push to ``url`` without sending anything (``--dry-run``
        of HEAD to a scratch branch name); a missing write permission fails here, before
        the first write of the run."""
        self.run("push", "--dry-run", "--quiet", "--force", url,
                 "HEAD:refs/heads/pinbump/preflight")

    def rev(self, ref: str) -> str | None:
        out = self.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        return out or None

    def remote_head(self, remote: str, branch: str) -> str | None:
        out = self.run("ls-remote", "--heads", remote, f"refs/heads/{branch}")
        return out.split()[0] if out else None


class RecordingGit(Git):
    """The dry run's git: reads and local work in scratch folders as usual; a push is
    recorded in ``pushed`` instead of made."""

    def __init__(self, cwd: Path, token: str | None = None, host: str = "github.com") -> None:
        super().__init__(cwd, token, host)
        self.pushed: list[tuple[str, str]] = []

    def push(self, url: str, branch: str, expected: str | None) -> bool:
        self.pushed.append((url, branch))
        return False

    def check_push(self, url: str) -> None:
        pass


def remote_url(git: Git, remote: str) -> str:
    """The URL of ``remote`` (insteadOf applied); a relative local path is made absolute."""
    url = git.run("remote", "get-url", remote)
    if "://" in url or re.match(r"^[\w.-]+@[^:/]+:", url) or Path(url).is_absolute():
        return url
    return str((git.cwd / url).resolve())


def url_host(url: str) -> str:
    """The host a push goes to (github.com, or a GitHub Enterprise host)."""
    match = re.match(r"https?://(?:[^@/]+@)?([^/:]+)", url)
    return match.group(1) if match else "github.com"


@contextmanager
def scratch_checkout(git: Git, url: str, base: str) -> Iterator[Git]:
    """A throw-away repository holding ``base`` of ``url``, checked out: the bump is made
    against the remote base, never against the local checkout, and nothing is written into
    the user's repository (its objects are only borrowed, read-only, as alternates)."""
    tmp = Path(tempfile.mkdtemp(prefix="pinbump-"))
    try:
        scratch = git.at(tmp / "tree")
        git.run("init", "--quiet", str(scratch.cwd), cwd=tmp)
        if git.run("rev-parse", "--is-shallow-repository", check=False) == "false":
            objects = Path(git.run("rev-parse", "--path-format=absolute", "--git-common-dir"))
            alternates = scratch.cwd / ".git" / "objects" / "info" / "alternates"
            alternates.write_text(f"{objects / 'objects'}\n")
        scratch.run("fetch", "--quiet", "--no-tags", url,
                    f"+refs/heads/{base}:refs/remotes/base/{base}")
        scratch.run("checkout", "--quiet", "--detach", f"refs/remotes/base/{base}")
        yield scratch
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
