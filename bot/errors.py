"""One exception family; every message names what was tried, what was found and how to fix it."""

from __future__ import annotations

import re

_CREDENTIALS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/?#\s]+@", re.IGNORECASE)


def redact(text: str) -> str:
    """Remove user:password (or a token) from any URL inside ``text``: a last line of defence
    for messages; index URLs lose their credentials where they are read (bot.core.urls)."""
    return _CREDENTIALS.sub(r"\g<scheme>***@", text)


class PinbumpError(Exception):
    """Base class. ``exit_code`` is what the CLI returns; 2 means bad input or environment."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


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


class ResolutionError(PinbumpError):
    """No complete and consistent set exists; the message names the conflicting requirements."""
