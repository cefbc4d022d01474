"""One exception family; every message names what was tried, what was found and how to fix it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

_CREDENTIALS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/?#\s]+@", re.IGNORECASE)


def redact(text: str) -> str:
    """Remove user:password (or a token) from any URL inside ``text``: a last line of defence
    for messages; index URLs lose their credentials where they are read (bot.core.urls)."""
    return _CREDENTIALS.sub(r"\g<scheme>***@", text)


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """Control characters (a newline in a URL, a file name or a version from outside) shown
    as escapes: a message stays one line, and no outside text starts a line of its own (a
    ``::error::`` workflow command in a CI log)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


class PinbumpError(Exception):
    """Base class. ``exit_code`` is what the CLI returns; 2 means bad input or environment.
    The message is made one line, then its credentials are redacted."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(redact(one_line(message)))


class InputError(PinbumpError):
    """A file of the target (pyproject, requirements, config) cannot be used as it is."""


class ConfigError(InputError):
    """pinbump.toml or [tool.pinbump] holds an unknown key or a value of the wrong type."""


class IndexError_(PinbumpError):
    """The package index could not answer (unreachable, failing, malformed)."""


class UnknownPackage(IndexError_):
    """The index has no project page for a package (HTTP 404)."""


class MetadataError(IndexError_):
    """A distribution's core metadata could not be read or did not verify."""


class WheelError(MetadataError):
    """A wheel that is unsafe or too big to read: a member name that would leave its folder,
    a member over the size or compression-ratio limits, an unsupported compression, corrupt
    data. The message names the wheel and the member."""


class Conflict(NamedTuple):
    """One candidate of the lead that could not form a set, and why (the requirement it
    conflicts with, the missing lockstep package, ...)."""

    package: str
    version: str
    reason: str


class ResolutionError(PinbumpError):
    """No complete and consistent set exists. ``conflicts`` are the lead's candidates, newest
    first, each with the requirement that ruled it out; ``unavailable`` says why the pinned
    version itself cannot be kept, when it cannot (not on the index, not yet published)."""

    def __init__(self, group: str, conflicts: Sequence[Conflict],
                 unavailable: str | None = None) -> None:
        self.group = group
        self.conflicts = tuple(conflicts)
        self.unavailable = unavailable
        parts = [f"{c.package} {c.version}: {c.reason}" for c in self.conflicts]
        parts += [unavailable] if unavailable else []
        super().__init__(f"no complete and consistent set for group {group!r}: "
                         + "; ".join(parts or ["no versions"]))


class ApplyError(PinbumpError):
    """An edit cannot be made safely; nothing is written."""


class DockerfileConflict(ApplyError):
    """One Dockerfile gives the same ARG two different defaults."""


class GitError(PinbumpError):
    """A git command failed."""


class WriteError(PinbumpError):
    """A file could not be written; nothing was (or everything was rolled back)."""


class LockTimeout(WriteError):
    """Another pinbump command held the target's lock for too long; nothing was written."""


class DriftError(PinbumpError):
    """The sources of a version could not be fetched or loaded."""


class WholeFile(Exception):
    """The server answered a range request with the whole file (HTTP 200); its body went to
    the fetcher's download file, not to memory."""

    def __init__(self) -> None:
        super().__init__("server ignores Range")


class GitHubError(PinbumpError):
    """A GitHub API call failed."""


class RefusedTarget(InputError):
    """The SHA named to the GPU gate is not one it may test."""


class GateRunError(PinbumpError):
    """The GPU suite or a timing worker could not be run."""
