"""Index URLs: checked once where they come in, and their credentials kept apart.

``user:password@`` is taken out of an index URL the moment the policy is read: from then on
every URL pinbump holds, prints, writes or keys its cache by is free of secrets, and the
credentials travel beside it (``Credentials``) to the one HTTP door, which sends them to
their origin only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit, urlunsplit


@dataclass(frozen=True)
class Credentials:
    """user:password for every request to ``origin`` (scheme://host:port)."""

    origin: str
    username: str
    password: str = field(repr=False)


def origin(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower(), 0)
    return f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}:{port}"


def split_credentials(url: str) -> tuple[str, Credentials | None]:
    """``url`` without its userinfo, and the credentials it held (None when none)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    clean = urlunsplit(parts._replace(netloc=hostport))
    return clean, Credentials(origin(clean), unquote(user), unquote(password))


def index_url(url: str) -> tuple[str, Credentials | None]:
    """Check that ``url`` is an http(s) URL with a host, and split off its credentials.
    Raises ValueError saying what is wrong, in words that hold no secret."""
    try:
        clean, creds = split_credentials(url.strip())
        parts = urlsplit(clean)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as exc:
        raise ValueError(f"{url!r} is not a valid URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{clean!r} is not an http(s) URL with a host")
    if any(c.isspace() or ord(c) < 32 for c in clean):
        raise ValueError(f"{clean!r} holds whitespace or control characters")
    return clean, creds
