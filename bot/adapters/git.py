"""Adapter: every git command goes through ``Git.run``.

A token for an HTTPS remote travels only in the environment of the push/fetch process, as an
``http.extraheader`` set through GIT_CONFIG_COUNT/KEY/VALUE: never in a URL, on a command line,
in .git/config or in any file.
"""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from bot.errors import PinbumpError

BOT_NAME = "pinbump[bot]"
BOT_EMAIL = "pinbump-bot@users.noreply.github.com"


class GitError(PinbumpError):
    """A git command failed."""


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
            env: Mapping[str, str] | None = None) -> str:
        """Run ``git args`` and return its stdout; a failure raises GitError (token-free)."""
        proc = subprocess.run(["git", *args], cwd=cwd or self.cwd, capture_output=True,
                              text=True, env={**self._env(), **(env or {})}, timeout=600)
        if check and proc.returncode != 0:
            detail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
            message = f"git {' '.join(args[:3])} failed ({proc.returncode}): " + (
                detail[-1] if detail else "no output")
            if self._token:
                message = message.replace(self._token, "***")
            raise GitError(message)
        return proc.stdout.strip()

    def rev(self, ref: str) -> str | None:
        out = self.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        return out or None

    def remote_head(self, remote: str, branch: str) -> str | None:
        out = self.run("ls-remote", "--heads", remote, f"refs/heads/{branch}")
        return out.split()[0] if out else None
