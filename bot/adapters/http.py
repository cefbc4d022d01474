"""The one door to HTTP: timeouts, bounded retries with backoff, and an on-disk ETag cache."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path

import httpx

from bot import __version__
from bot.core.urls import Credentials, origin, split_credentials
from bot.errors import IndexError_, redact

RETRY_STATUSES = {429, 500, 502, 503, 504}


@dataclass(frozen=True)
class Response:
    url: str  # after redirects
    status: int
    headers: Mapping[str, str]
    content: bytes
    from_cache: bool = False


@dataclass
class Stats:
    requests: int = 0
    not_modified: int = 0
    bytes_received: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, nbytes: int, not_modified: bool = False) -> None:
        with self.lock:
            self.requests += 1
            self.bytes_received += nbytes
            self.not_modified += int(not_modified)


def default_cache_dir() -> Path:
    """$PINBUMP_CACHE_DIR, else $XDG_CACHE_HOME/pinbump, else ~/.cache/pinbump."""
    if os.environ.get("PINBUMP_CACHE_DIR"):
        return Path(os.environ["PINBUMP_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pinbump"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


class HttpClient:
    """GET/HEAD/range requests with retries; pages revalidated with If-None-Match from disk."""

    def __init__(self, cache_dir: Path | None = None, *, timeout: float = 20.0,
                 retries: int = 3, backoff: float = 0.25, max_retry_after: float = 10.0,
                 credentials: Iterable[Credentials] = ()) -> None:
        self.cache_dir = cache_dir
        self._auth: dict[str, httpx.BasicAuth] = {}
        self.authorize(credentials)
        self.retries = retries
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self.stats = Stats()
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            follow_redirects=True,
            headers={"User-Agent": f"pinbump/{__version__}"},
            limits=httpx.Limits(max_connections=16, max_keepalive_connections=16),
            trust_env=True,
        )

    def authorize(self, credentials: Iterable[Credentials]) -> None:
        """Send these credentials with every request to their origin (and only there)."""
        for creds in credentials:
            self._auth[creds.origin] = httpx.BasicAuth(creds.username, creds.password)

    def _public(self, url: str) -> str:
        """``url`` without user:password; credentials found in it are kept for its origin.
        Every URL is passed through here first: none with a secret goes further."""
        clean, creds = split_credentials(url)
        if creds is not None:
            self.authorize([creds])
        return clean

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the door -------------------------------------------------------------------------
    def request(self, method: str, url: str, headers: Mapping[str, str] | None = None,
                ok: tuple[int, ...] = (200,)) -> Response:
        """Send one request, retrying transport errors, 429 and 5xx a bounded number of times.

        Statuses in ``ok`` and 304/404/416 come back to the caller; anything else raises.
        """
        url = self._public(url)
        auth = self._auth.get(origin(url))
        last = ""
        last_headers: Mapping[str, str] = {}
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self._delay(attempt, last_headers))
                last_headers = {}
            try:
                resp = self._client.request(method, url, headers=dict(headers or {}),
                                            auth=auth or httpx.USE_CLIENT_DEFAULT)
            except httpx.TimeoutException:
                last = "timed out"
                continue
            except httpx.TransportError as exc:
                last = f"cannot connect ({type(exc).__name__}: {exc})"
                continue
            self.stats.add(len(resp.content), resp.status_code == 304)
            if resp.status_code in RETRY_STATUSES:
                last, last_headers = f"HTTP {resp.status_code}", resp.headers
                continue
            if resp.status_code in ok or resp.status_code in (304, 404, 416):
                return Response(str(resp.url), resp.status_code, resp.headers, resp.content)
            raise IndexError_(f"{redact(url)}: HTTP {resp.status_code} "
                              f"{resp.reason_phrase}".rstrip())
        tries = self.retries + 1
        raise IndexError_(f"{redact(url)}: {last} after {tries} attempt{'s' * (tries > 1)}; "
                          "check the index URL and your network, or retry later")

    def _delay(self, attempt: int, headers: Mapping[str, str]) -> float:
        retry_after = headers.get("retry-after") if headers else None
        if retry_after:
            try:
                return min(float(retry_after), self.max_retry_after)
            except ValueError:
                try:
                    wait = parsedate_to_datetime(retry_after).timestamp() - time.time()
                    return max(0.0, min(wait, self.max_retry_after))
                except (TypeError, ValueError):
                    pass
        return float(self.backoff * (2 ** (attempt - 1)))

    # -- cached pages ---------------------------------------------------------------------
    def get_cached(self, url: str, accept: str) -> Response:
        """GET a page, revalidating a stored copy with its ETag / Last-Modified."""
        url = self._public(url)  # the cache is keyed by the URL without credentials
        entry = self._cache_path(url, accept)
        meta: dict[str, str] | None = None
        headers = {"Accept": accept}
        if entry is not None and entry.with_suffix(".json").is_file():
            try:
                meta = json.loads(entry.with_suffix(".json").read_text())
            except (OSError, ValueError):
                meta = None
            if meta and meta.get("etag"):
                headers["If-None-Match"] = meta["etag"]
            if meta and meta.get("last-modified"):
                headers["If-Modified-Since"] = meta["last-modified"]
        resp = self.request("GET", url, headers)
        if resp.status == 304 and meta is not None and entry is not None:
            try:
                body = entry.with_suffix(".body").read_bytes()
            except OSError:
                return self.request("GET", url, {"Accept": accept})
            stored = {"content-type": meta.get("content-type", "")}
            return Response(meta.get("url", url), 200, stored, body, from_cache=True)
        if resp.status == 200 and entry is not None and (
                resp.headers.get("etag") or resp.headers.get("last-modified")):
            atomic_write_bytes(entry.with_suffix(".body"), resp.content)
            atomic_write_bytes(entry.with_suffix(".json"), json.dumps({
                "url": resp.url,
                "etag": resp.headers.get("etag", ""),
                "last-modified": resp.headers.get("last-modified", ""),
                "content-type": resp.headers.get("content-type", ""),
            }).encode())
        return resp

    def _cache_path(self, url: str, accept: str) -> Path | None:
        if self.cache_dir is None:
            return None
        key = hashlib.sha256(f"{url}\n{accept}".encode()).hexdigest()
        return self.cache_dir / "http" / key[:2] / key
