"""The one door to HTTP: timeouts, bounded retries with backoff, and an on-disk page cache
(used without a request while the index says it is fresh, else revalidated with ETags)."""

from __future__ import annotations

import hashlib
import json
import math
import socket
import ssl
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, BinaryIO

import httpcore
import httpx

from bot import __version__
from bot.adapters.cache import Cache
from bot.core.urls import Credentials, origin, split_credentials
from bot.errors import IndexError_, redact

RETRY_STATUSES = {429, 500, 502, 503, 504}


@dataclass(frozen=True)
class Response:
    url: str  # after redirects
    status: int
    headers: Mapping[str, str]
    content: bytes
    reason: str = ""


@dataclass
class Stats:
    requests: int = 0
    not_modified: int = 0
    bytes_received: int = 0
    fresh: int = 0  # pages used from the disk cache without a request (Cache-Control)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_fresh(self) -> None:
        """A page served from the disk cache, still fresh: no request made."""
        with self.lock:
            self.fresh += 1

    def add(self, nbytes: int, not_modified: bool = False) -> None:
        with self.lock:
            self.requests += 1
            self.bytes_received += nbytes
            self.not_modified += int(not_modified)


MiB = 1 << 20
CHUNK = 64 * 1024
PAGE_LIMIT = 64 * MiB  # a project page, a .metadata file, a HEAD answer
WHEEL_LIMIT = 2048 * MiB  # a whole wheel, when the server ignores Range


def _unknown_host(exc: BaseException) -> bool:
    """The name does not exist (not a temporary resolver failure, which is retried)."""
    permanent = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, socket.gaierror) and seen.errno in permanent:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class _UnknownHost(Exception):
    """The host name does not resolve (internal: becomes an IndexError_ naming the URL)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _failed_here(exc: httpx.RequestError, url: str) -> bool:
    """Whether ``exc`` came from ``url``'s own host, not from one a redirect led to (only
    that host is found unreachable by it)."""
    try:
        failed = str(exc.request.url)
    except RuntimeError:  # no request attached: it can only be the one sent
        return True
    return origin(failed) == origin(url)


# -- deadlines: every read and write of a request stops at its deadline ----------------------
# .at: time.monotonic() by which this thread's request ends; .span: (its length, the command's
# end or None) until its first connect, read or write starts it.
_deadline = threading.local()


def _remaining(timeout: float | None) -> float:
    at: float | None = getattr(_deadline, "at", None)
    if at is None:
        span: tuple[float, float | None] | None = getattr(_deadline, "span", None)
        if span is None:
            return timeout if timeout is not None else float("inf")
        # The request's first network operation: it has its connection now, so any wait for
        # a free one in the pool (bounded by httpx's own pool timeout, a PoolTimeout) is over
        # and never shortens the time it has to connect (a ConnectTimeout, which can find
        # its host unreachable for the rest of the command).
        length, ends = span
        at = time.monotonic() + length
        _deadline.at = at = at if ends is None else min(at, ends)
    left = at - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every operation waits at most until the request's deadline:
    a server that drips a byte a second cannot hold a request past it."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _remaining(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _remaining(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname,
                                                     _remaining(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_tcp(host, port, _remaining(timeout),
                                                       local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None
                            ) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_unix_socket(path, _remaining(timeout),
                                                               socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _with_deadlines(client: httpx.Client) -> None:
    """Put the deadline backend under every connection pool of ``client`` (the direct one
    and any proxy's). httpx has no public hook for this: fail loudly if that changes."""
    transports = [client._transport, *client._mounts.values()]
    for transport in transports:
        if transport is None:  # a NO_PROXY pattern: served by client._transport
            continue
        pool = getattr(transport, "_pool", None)
        if pool is None or not hasattr(pool, "_network_backend"):
            raise RuntimeError("httpx changed: cannot enforce request deadlines")
        pool._network_backend = _DeadlineBackend(pool._network_backend)


def _ssl_context_soon() -> Future[ssl.SSLContext]:
    """httpx's own SSL context (certifi's CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR), built
    in a thread of its own: loading the bundle takes ~45 ms with the GIL released, so it is
    done while the command reads the target instead of before its first request."""
    future: Future[ssl.SSLContext] = Future()

    def build() -> None:
        try:
            future.set_result(httpx.create_ssl_context(trust_env=True))
        except BaseException as exc:  # raised where the first request waits for it
            future.set_exception(exc)

    threading.Thread(target=build, daemon=True, name="pinbump-ssl").start()
    return future


class Download:
    """Where a whole file goes instead of memory: a temporary file, its sha256 taken as it
    is written, at most ``limit`` bytes (a wheel sent whole when Range is ignored)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.file: BinaryIO = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self.reset()

    def reset(self) -> None:
        """Empty it: each attempt of a request starts over."""
        self.file.seek(0)
        self.file.truncate()
        self.size = 0
        self._sha256 = hashlib.sha256()

    def write(self, piece: bytes) -> None:
        self.size += len(piece)
        self._sha256.update(piece)
        self.file.write(piece)

    def sha256(self) -> str:
        return self._sha256.hexdigest()

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> Download:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_body(resp: httpx.Response, url: str, max_bytes: int,
               sink: Download | None = None) -> bytes:
    """The body, inflated here in steps of at most CHUNK bytes (gzip or deflate) so that no
    more than ``max_bytes`` of it is ever held, however well it compresses; with ``sink``
    it goes there instead, piece by piece, and nothing is held."""
    coding = resp.headers.get("content-encoding", "").strip().lower()
    if coding in ("", "identity"):
        inflate = None
    elif coding in ("gzip", "x-gzip", "deflate"):
        inflate = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header
    else:
        raise IndexError_(f"{redact(url)}: unsupported Content-Encoding {coding[:40]!r}")
    body = bytearray()

    def add(piece: bytes) -> None:
        if sink is not None:
            sink.write(piece)
        else:
            body.extend(piece)
        if (sink.size if sink is not None else len(body)) > max_bytes:
            limit = f"{max_bytes // MiB} MiB" if max_bytes >= MiB else f"{max_bytes} bytes"
            raise IndexError_(f"{redact(url)}: the answer is over {limit} (what was asked "
                              "for); refusing to read more")

    try:
        for raw in resp.iter_raw(CHUNK):
            if inflate is None:
                add(raw)
                continue
            while raw:
                add(inflate.decompress(raw, CHUNK))
                raw = inflate.unconsumed_tail
        if inflate is not None:
            add(inflate.flush())
    except zlib.error as exc:
        raise IndexError_(f"{redact(url)}: corrupt {coding} body ({exc})") from None
    return bytes(body)


class HttpClient:
    """GET/HEAD/range requests with retries; pages revalidated with If-None-Match from disk.

    ``timeout`` is a deadline for each request, connecting and reading included (a server
    that drips bytes cannot stretch it), counted from when it has a connection (a wait for a
    free one in the pool is bounded apart, by the same time); ``deadline`` bounds everything
    the client does, retries and their waits included, from the moment it is built.
    """

    def __init__(self, cache_dir: Path | None = None, *, timeout: float = 20.0,
                 retries: int = 3, backoff: float = 0.25, max_retry_after: float = 10.0,
                 credentials: Iterable[Credentials] = (), deadline: float | None = None,
                 refresh: bool = False, now: Callable[[], float] = time.time) -> None:
        self.cache_dir = cache_dir
        self.cache = Cache(cache_dir) if cache_dir is not None else None
        self._auth: dict[str, httpx.BasicAuth] = {}
        self.authorize(credentials)
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self.deadline = deadline
        self.refresh = refresh  # revalidate every stored page, however fresh
        self._now = now  # the wall clock that freshness is judged by
        self._ends = None if deadline is None else time.monotonic() + deadline
        self.stats = Stats()
        self._down: dict[str, str] = {}  # origin -> why no connection could be made to it
        self._ssl = _ssl_context_soon()
        self._made: httpx.Client | None = None
        self._closed = False  # reads still under way in daemon threads end with an error
        self._making = threading.Lock()

    @property
    def _client(self) -> httpx.Client:
        """The httpx client, built at the first request (its SSL context was started when
        this client was: it is ready by then, or soon)."""
        made = self._made
        if made is None:
            with self._making:
                if self._closed:  # close() has run: build nothing it would not close
                    raise RuntimeError("the HTTP client is closed")
                if self._made is None:
                    self._made = httpx.Client(
                        timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
                        follow_redirects=True,
                        headers={"User-Agent": f"pinbump/{__version__}",
                                 "Accept-Encoding": "gzip, deflate"},  # _read_body's codings
                        limits=httpx.Limits(max_connections=24, max_keepalive_connections=24),
                        trust_env=True, verify=self._ssl.result(),
                    )
                    _with_deadlines(self._made)
                made = self._made
        return made

    def authorize(self, credentials: Iterable[Credentials]) -> None:
        """Send these credentials with every request to their origin (and only there)."""
        for creds in credentials:
            self._auth[creds.origin] = httpx.BasicAuth(creds.username, creds.password)

    def _public(self, url: str) -> str:
        """``url`` without user:password; credentials found in it are kept for its origin
        unless that origin has some already (a URL from an index page is untrusted text: it
        never replaces the credentials configured for a host). Every URL is passed through
        here first: none with a secret goes further."""
        clean, creds = split_credentials(url)
        if creds is not None and creds.origin not in self._auth:
            self.authorize([creds])
        return clean

    def close(self) -> None:
        self._closed = True
        with self._making:
            if self._made is not None:
                self._made.close()

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the door -------------------------------------------------------------------------
    def request(self, method: str, url: str, headers: Mapping[str, str] | None = None,
                ok: tuple[int, ...] = (200,), max_bytes: int = PAGE_LIMIT,
                sink: Download | None = None) -> Response:
        """Send one request, retrying transport errors, 429 and 5xx a bounded number of times.

        Statuses in ``ok`` and 304/404/416 come back to the caller; anything else raises.
        A body over ``max_bytes`` (after content decoding) is refused, never held whole.
        The body of a 200 answer goes to ``sink`` when given (up to its own limit; the
        response's content is then empty).
        """
        url = self._public(url)
        host = origin(url)
        down = self._down.get(host)
        if down is not None:  # this command already found the host unreachable
            raise IndexError_(f"{redact(url)}: {down}")
        auth = self._auth.get(host)
        last = ""
        last_headers: Mapping[str, str] = {}
        tries = 0
        unreachable = True  # every try so far failed to connect at all
        for attempt in range(self.retries + 1):
            if not self._may_try(attempt, last_headers):
                break
            last_headers = {}
            tries += 1
            try:
                resp, last, unconnected = self._attempt(method, url, headers, auth,
                                                        max_bytes, sink)
            except _UnknownHost as exc:
                self._down.setdefault(host, exc.why)
                raise IndexError_(f"{redact(url)}: {exc.why}") from None
            if resp is None:
                unreachable = unreachable and unconnected
                continue
            unreachable = False
            self.stats.add(len(resp.content) or (sink.size if sink is not None else 0),
                           resp.status == 304)
            if resp.status in RETRY_STATUSES:
                last, last_headers = f"HTTP {resp.status}", resp.headers
                continue
            if resp.status in ok or resp.status in (304, 404, 416):
                return resp
            raise IndexError_(f"{redact(url)}: HTTP {resp.status} {resp.reason}".rstrip())
        error = self._gave_up(url, last, tries)
        if unreachable and tries == self.retries + 1:  # every try spent, none connected
            self._down.setdefault(host, f"{last}: no connection to {redact(host)} in {tries} "
                                  f"attempt{'s' * (tries != 1)} earlier in this command; "
                                  "check the index URL and your network, or retry later")
        raise error

    def _may_try(self, attempt: int, last_headers: Mapping[str, str]) -> bool:
        """Wait before a retry (Retry-After, else backoff); False when the command's deadline
        would pass first."""
        if attempt:
            wait = self._delay(attempt, last_headers)
            if self._ends is not None and time.monotonic() + wait >= self._ends:
                return False
            time.sleep(wait)
        return self._ends is None or time.monotonic() < self._ends

    def _attempt(self, method: str, url: str, headers: Mapping[str, str] | None,
                 auth: httpx.BasicAuth | None, max_bytes: int, sink: Download | None
                 ) -> tuple[Response | None, str, bool]:
        """One try: its response, or None and why it is worth another (a time-out, a
        connection that failed), and whether it made no connection at all to ``url``'s own
        host (not one a redirect led to). An answer no retry can mend raises."""
        try:
            return self._send(method, url, headers, auth, max_bytes, sink), "", False
        except httpx.TimeoutException as exc:
            here = _failed_here(exc, url)  # not a host a redirect led to
            return None, "timed out", here and isinstance(exc, httpx.ConnectTimeout)
        except httpx.TransportError as exc:
            last = f"cannot connect ({type(exc).__name__}: {exc})"
            here = _failed_here(exc, url)
            if _unknown_host(exc):  # asking again will not make the name resolve
                why = f"{last}; the host name does not resolve: check the index URL and " \
                    "your network"
                if not here:  # a redirect's host: the one asked is not given up on
                    raise IndexError_(f"{redact(url)}: {why}") from None
                raise _UnknownHost(why) from None
            return None, last, here and isinstance(exc, httpx.ConnectError)
        except httpx.InvalidURL as exc:
            raise IndexError_(f"{redact(url)}: not a valid URL ({exc})") from None
        except RuntimeError:  # the client was closed: a read nobody waits for any more
            if self._closed:
                raise IndexError_(f"{redact(url)}: not asked (the command has ended)") \
                    from None
            raise
        except (httpx.DecodingError, httpx.TooManyRedirects) as exc:
            raise IndexError_(f"{redact(url)}: unusable answer ({exc})") from None

    def _gave_up(self, url: str, last: str, tries: int) -> IndexError_:
        """The error after the last try: the command's deadline, or the retries spent."""
        attempts = f"after {tries} attempt{'s' * (tries != 1)}"
        if tries < self.retries + 1 or (self._ends is not None
                                        and time.monotonic() >= self._ends):
            return IndexError_(f"{redact(url)}: {last or 'not tried'} {attempts}; stopped at "
                               f"the --deadline of {self.deadline:g} s for the whole command")
        per_request = f" (a deadline of {self.timeout:g} s per request)" \
            if last == "timed out" else ""
        return IndexError_(f"{redact(url)}: {last} {attempts}{per_request}; check the index "
                           "URL and your network, or retry later")

    def _send(self, method: str, url: str, headers: Mapping[str, str] | None,
              auth: httpx.BasicAuth | None, max_bytes: int, sink: Download | None = None
              ) -> Response:
        """One attempt, ended by ``timeout`` from when it has a connection (or by the
        command's deadline, when sooner)."""
        _deadline.at, _deadline.span = None, (self.timeout, self._ends)  # see _remaining
        try:
            with self._client.stream(method, url, headers=dict(headers or {}),
                                     auth=auth or httpx.USE_CLIENT_DEFAULT) as resp:
                if sink is not None and resp.status_code == 200:
                    sink.reset()
                    body = _read_body(resp, url, sink.limit, sink)
                else:
                    body = _read_body(resp, url, max_bytes)
                return Response(str(resp.url), resp.status_code, resp.headers, body,
                                reason=resp.reason_phrase)
        finally:
            _deadline.at = _deadline.span = None

    def _delay(self, attempt: int, headers: Mapping[str, str]) -> float:
        """Retry-After when it is a sane number of seconds or a date, else backoff."""
        retry_after = headers.get("retry-after") if headers else None
        if retry_after:
            try:
                seconds = float(retry_after)
            except ValueError:
                try:
                    seconds = parsedate_to_datetime(retry_after).timestamp() - time.time()
                except (TypeError, ValueError, IndexError, OverflowError):
                    seconds = math.nan
            if math.isfinite(seconds):
                return max(0.0, min(seconds, self.max_retry_after))
        return float(self.backoff * (2 ** (attempt - 1)))

    # -- cached pages ---------------------------------------------------------------------
    def get_cached(self, url: str, accept: str) -> Response:
        """GET a page through the disk cache: a copy still fresh by the index's own
        ``Cache-Control: max-age`` (and ``Age``) is used without a request, as pip and uv do
        (``refresh`` turns that off); otherwise a stored copy is revalidated with its ETag /
        Last-Modified."""
        url = self._public(url)  # the cache is keyed by the URL without credentials
        entry = None if self.cache is None else self.cache.path("http", url, accept)
        meta = _read_meta(entry)
        if meta is not None and not self.refresh and _fresh(meta, self._now()):
            body = self.cache.read(entry.with_suffix(".body")) \
                if self.cache is not None and entry is not None else None
            if body is not None:
                self.stats.add_fresh()
                return Response(meta.get("url", url), 200,
                                {"content-type": meta.get("content-type", "")}, body)
        headers = {"Accept": accept}
        if meta and meta.get("etag"):
            headers["If-None-Match"] = meta["etag"]
        if meta and meta.get("last-modified"):
            headers["If-Modified-Since"] = meta["last-modified"]
        resp = self.request("GET", url, headers)
        if resp.status == 304 and meta is not None and entry is not None:
            body = self.cache.read(entry.with_suffix(".body")) if self.cache else None
            if body is None:
                return self.request("GET", url, {"Accept": accept})
            if self.cache is not None:  # a 304 renews the stored freshness (RFC 9111 4.3.4)
                renewed = {**meta, **_freshness(resp.headers, self._now())}
                self.cache.write(entry.with_suffix(".json"), json.dumps(renewed).encode())
            stored = {"content-type": meta.get("content-type", "")}
            return Response(meta.get("url", url), 200, stored, body)
        if resp.status == 200 and entry is not None and self.cache is not None:
            fresh = _freshness(resp.headers, self._now())
            if "no-store" in _directives(resp.headers) or not (
                    resp.headers.get("etag") or resp.headers.get("last-modified")
                    or "max-age" in fresh):
                return resp  # nothing that would let the copy be used again
            self.cache.write(entry.with_suffix(".body"), resp.content)
            self.cache.write(entry.with_suffix(".json"), json.dumps({
                "url": resp.url,
                "etag": resp.headers.get("etag", ""),
                "last-modified": resp.headers.get("last-modified", ""),
                "content-type": resp.headers.get("content-type", ""),
                **fresh,
            }).encode())
        return resp


# -- HTTP freshness (RFC 9111, as a private cache) ------------------------------------------
def _directives(headers: Mapping[str, str]) -> dict[str, str]:
    """Cache-Control's directives, lower-cased, each with its value ("" when it has none)."""
    out: dict[str, str] = {}
    for part in headers.get("cache-control", "").split(","):
        name, _, value = part.strip().partition("=")
        name, value = name.strip().lower(), value.strip().strip('"')
        if name and out.setdefault(name, value) != value:
            out[name] = ""  # the same directive twice, disagreeing: no value (RFC 9111 4.2.1)
    return out


# The longest an index's page is used without asking it again, whatever its max-age says:
# PyPI itself sends max-age=600 for its simple pages; an index (hostile or misconfigured)
# sending max-age=315360000 must not hide new releases and yanks from pinbump for years.
MAX_FRESH_SECONDS = 600.0


def _seconds(value: str | None) -> int | None:
    """A delta-seconds value (ASCII digits only), else None."""
    ok = value and value.isascii() and value.isdigit() and len(value) <= 12
    return int(value) if ok and value else None


def _freshness(headers: Mapping[str, str], now: float) -> dict[str, float]:
    """What to store to judge freshness later: when the answer came and its max-age, less
    the ``Age`` it already had; nothing when the index gives no lifetime or says
    ``no-cache`` (every use must then be revalidated)."""
    directives = _directives(headers)
    max_age = _seconds(directives.get("max-age"))
    if max_age is None or "no-cache" in directives or "no-store" in directives:
        return {}
    age = _seconds(headers.get("age")) or 0
    return {"stored-at": now, "max-age": float(min(MAX_FRESH_SECONDS, max(0, max_age - age)))}


def _fresh(meta: Mapping[str, Any], now: float) -> bool:
    """Whether a stored page is still within the lifetime its index gave it. A clock that
    went backwards since it was stored makes it stale, never fresh for longer."""
    stored_at, max_age = meta.get("stored-at"), meta.get("max-age")
    if not isinstance(stored_at, (int, float)) or not isinstance(max_age, (int, float)):
        return False
    return 0 <= now - stored_at < min(max_age, MAX_FRESH_SECONDS)  # capped again when read


def _read_meta(entry: Path | None) -> dict[str, Any] | None:
    """A stored page's validators and freshness, or None (absent, unreadable, not JSON)."""
    if entry is None:
        return None
    try:
        meta = json.loads(entry.with_suffix(".json").read_bytes())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None
