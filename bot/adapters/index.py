"""The package index adapter: PEP 503 HTML and PEP 691 JSON pages, PEP 592 yanks, PEP 700
upload times, and core metadata through PEP 658/714, range requests, or a verified download."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from datetime import datetime, timezone
from email.parser import BytesParser
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urldefrag, urljoin, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)

from bot.adapters.cache import Cache
from bot.adapters.http import WHEEL_LIMIT, Download, HttpClient, Response
from bot.adapters.lazywheel import (
    METADATA_LIMITS,
    TAIL,
    Limits,
    Sink,
    is_metadata,
    metadata_member,
    read_members,
    read_members_lazily,
    read_metadata_lazily,
)
from bot.core.models import DistFile, ProjectPage
from bot.errors import IndexError_, MetadataError, UnknownPackage, WheelError, WholeFile, redact

_T = TypeVar("_T")
ACCEPT = ("application/vnd.pypi.simple.v1+json, "
          "application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01")


# -- pure parsing ---------------------------------------------------------------------------
def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


_FILENAME = re.compile(r"[A-Za-z0-9_.+!-]+")
MAX_VERSION = 64  # characters of a version in a file name: PEP 440 sets none, 64 is plenty


def make_file(name: str, filename: str, url: str, **extra: Any) -> DistFile | None:
    """A DistFile for a wheel or sdist of project ``name``; other files give None. A file
    name is a plain name (it names cache entries): no separator, no character beyond those
    of distribution file names. A file of the project whose version has over MAX_VERSION
    characters is an error: thousands of digits are no release anybody made, and such a
    version would become a branch name and a cache key."""
    if not _FILENAME.fullmatch(filename):
        return None
    parts = filename.removesuffix(".whl").removesuffix(".tar.gz").removesuffix(".zip") \
        .split("-")
    if len(parts) >= 2 and len(parts[1]) > MAX_VERSION and canonicalize_name(parts[0]) == name:
        raise IndexError_(f"{name}: the index lists {filename[:40]}… whose version has "
                          f"{len(parts[1])} characters; no release has over {MAX_VERSION}")
    if len(filename) > 255:  # no file system holds such a name
        return None
    if extra.get("requires_python") is not None and \
            not _usable_specifier(extra["requires_python"]):
        extra["requires_python"] = None  # as pip does: an unusable Requires-Python is ignored
    try:
        if filename.endswith(".whl"):
            wname, version, _, tags = parse_wheel_filename(filename)
            if canonicalize_name(wname) != name:
                return None
            return DistFile(filename=filename, url=url, version=version, is_wheel=True,
                            tags=frozenset(str(t) for t in tags), **extra)
        sname, version = parse_sdist_filename(filename)
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    if canonicalize_name(sname) != name:
        return None
    return DistFile(filename=filename, url=url, version=version, is_wheel=False,
                    tags=frozenset(), **extra)


def _usable_specifier(text: str) -> bool:
    """A specifier whose every version can be compared (and is not absurdly long)."""
    if len(text) > 256:
        return False
    try:
        spec = SpecifierSet(text)
    except InvalidSpecifier:
        return False
    return all(len(s.version) <= MAX_VERSION for s in spec)


class _Malformed(Exception):
    """One field of a PEP 691 page is not what the standard says (internal)."""


def _get(entry: dict[str, Any], key: str, kinds: tuple[type, ...], default: Any = None,
         *, required: bool = False) -> Any:
    if key not in entry or entry[key] is None:
        if required:
            raise _Malformed(f"'{key}' is missing")
        return default
    value = entry[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        wanted = " or ".join(k.__name__ for k in kinds)
        raise _Malformed(f"'{key}' is {type(value).__name__}, not {wanted}")
    return value


def _hash_table(entry: dict[str, Any], key: str) -> tuple[tuple[str, str], ...]:
    table = _get(entry, key, (dict,), {})
    if not all(isinstance(v, str) for v in table.values()):
        raise _Malformed(f"'{key}' holds a value that is not a string")
    return tuple(sorted(table.items()))


def _http_url(page_url: str, href: str) -> tuple[str, str]:
    """(URL without fragment, fragment) of ``href`` on ``page_url``; http(s) only."""
    try:
        url, fragment = urldefrag(urljoin(page_url, href))
        scheme = urlsplit(url).scheme
        urlsplit(url).port  # noqa: B018 - ValueError on a port that is not a number
    except ValueError as exc:
        raise _Malformed(f"URL {href[:200]!r} is not valid ({exc})") from None
    if scheme not in ("http", "https"):
        raise _Malformed(f"URL {href[:200]!r} is not http(s)")
    return url, fragment


def _json_file(name: str, page_url: str, entry: Any) -> DistFile | None:
    if not isinstance(entry, dict):
        raise _Malformed(f"is {type(entry).__name__}, not an object")
    filename = _get(entry, "filename", (str,), required=True)
    url, fragment = _http_url(page_url, _get(entry, "url", (str,), required=True))
    yanked = _get(entry, "yanked", (bool, str), False)
    key = "core-metadata" if "core-metadata" in entry else "dist-info-metadata"
    meta = _get(entry, key, (bool, dict), False)
    size = _get(entry, "size", (int,))
    if size is not None and size < 0:
        raise _Malformed("'size' is negative")
    return make_file(
        name, filename, url,
        hashes=_hash_table(entry, "hashes") or _fragment_hash(fragment),
        requires_python=_get(entry, "requires-python", (str,)) or None,
        yanked=(yanked if isinstance(yanked, str) else "") if yanked else None,
        upload_time=_parse_time(_get(entry, "upload-time", (str,))),
        core_metadata=((_hash_table(entry, key) if isinstance(meta, dict) else ()) or True)
        if meta else False,
        size=size,
    )


def parse_json_page(data: bytes, page_url: str, name: str) -> ProjectPage:
    """PEP 691 JSON (with PEP 700 upload-time and PEP 714 core-metadata), every field checked
    for its type: a page that breaks the standard is an error naming the field."""
    where = f"{redact(page_url)}: malformed PEP 691 JSON"
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:  # not JSON, or nested past any real page
        raise IndexError_(f"{where} ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not isinstance(doc, dict):
        raise IndexError_(f"{where}: the page is {type(doc).__name__}, not an object")
    entries = doc.get("files")
    if not isinstance(entries, list):
        raise IndexError_(f"{where}: 'files' is {type(entries).__name__}, not a list")
    files = []
    for i, entry in enumerate(entries):
        try:
            f = _json_file(name, page_url, entry)
        except _Malformed as exc:
            raise IndexError_(f"{where}: files[{i}] {exc}") from None
        if f:
            files.append(f)
    return ProjectPage(name=name, url=page_url, files=tuple(files))


def _fragment_hash(fragment: str) -> tuple[tuple[str, str], ...]:
    if "=" in fragment:
        algo, _, value = fragment.partition("=")
        return ((algo, value),)
    return ()


@functools.cache
def _anchors() -> type[Any]:
    """The anchor collector, built when the first HTML page is read (html.parser is not
    loaded by a command whose indexes all speak PEP 691 JSON)."""
    from html.parser import HTMLParser

    class _Anchors(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.base: str | None = None
            self.anchors: list[tuple[dict[str, str | None], str]] = []
            self._current: dict[str, str | None] | None = None
            self._text: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "base" and self.base is None:
                self.base = dict(attrs).get("href")
            elif tag == "a":
                self._current, self._text = dict(attrs), []

        def handle_data(self, data: str) -> None:
            if self._current is not None:
                self._text.append(data)

        def handle_endtag(self, tag: str) -> None:
            if tag == "a" and self._current is not None:
                self.anchors.append((self._current, "".join(self._text).strip()))
                self._current = None

    return _Anchors


def parse_html_page(html: str, page_url: str, name: str) -> ProjectPage:
    """PEP 503 HTML with PEP 592 data-yanked and PEP 658/714 data-(dist-info|core)-metadata."""
    parser = _anchors()()
    parser.feed(html)
    try:
        base = _http_url(page_url, parser.base)[0] if parser.base else page_url
    except _Malformed as exc:
        raise IndexError_(f"{redact(page_url)}: malformed PEP 503 page: <base> {exc}") from None
    files = []
    for attrs, text in parser.anchors:
        href = attrs.get("href")
        if not href:
            continue
        try:
            url, fragment = _http_url(base, href)
        except _Malformed:
            continue  # a link that is not an http(s) URL is no file of the project
        filename = url.rsplit("/", 1)[-1] or text
        meta = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata"))
        core: bool | tuple[tuple[str, str], ...] = False
        if meta is not None:
            core = _fragment_hash(meta) if meta not in ("", "true") else True
        f = make_file(
            name, filename, url,
            hashes=_fragment_hash(fragment),
            requires_python=attrs.get("data-requires-python") or None,
            yanked=attrs["data-yanked"] or "" if "data-yanked" in attrs else None,
            core_metadata=core,
        )
        if f:
            files.append(f)
    return ProjectPage(name=name, url=page_url, files=tuple(files))


def parse_requires_dist(metadata: bytes) -> list[Requirement]:
    """The Requires-Dist of core metadata; a line that does not parse is passed over, one
    whose versions cannot be compared (thousands of digits) is an error. Only the headers
    are parsed: the description after them can be megabytes and says nothing we use."""
    end = min((i for i in (metadata.find(b"\n\n"), metadata.find(b"\r\n\r\n")) if i >= 0),
              default=len(metadata))
    message = BytesParser().parsebytes(metadata[:end + 1], headersonly=True)
    out = []
    for value in message.get_all("Requires-Dist") or []:
        text = str(value)  # a header with bytes beyond ASCII comes as a Header object
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if any(len(spec.version) > MAX_VERSION for spec in req.specifier):
            raise MetadataError(f"Requires-Dist {text[:80]!r}…: a version of over "
                                f"{MAX_VERSION} characters")
        out.append(req)
    return out


# -- the adapter ----------------------------------------------------------------------------
class SimpleIndex:
    """Reads project pages and core metadata from any PEP 503/691 index.

    Every page is fetched at most once per command, however many threads ask for it: the
    first asker fetches it, the others wait for that answer (or its error). ``prefetch``
    starts pages in the background, so they travel while the command does other work."""

    def __init__(self, http: HttpClient, cache_dir: Path | None = None) -> None:
        self.http = http
        self.cache_dir = cache_dir
        self.cache = Cache(cache_dir) if cache_dir is not None else None
        self.metadata_sources: dict[str, str] = {}  # file url -> "pep658" | "range" | "download"
        self._pages: dict[str, Future[ProjectPage]] = {}  # url -> page: one fetch per command
        self._flat: dict[str, Future[Response]] = {}  # --find-links page url -> its answer
        self._lock = threading.Lock()
        self._tails: dict[str, tuple[int, bytes, str]] = {}  # wheel url -> its last 64 KiB

    @staticmethod
    def page_url(index_url: str, name: str) -> str:
        return f"{index_url.rstrip('/')}/{canonicalize_name(name)}/"

    def project(self, index_url: str, name: str) -> ProjectPage:
        """The project page, fetched once per command (drift asks again after its plan)."""
        name = canonicalize_name(name)
        url = self.page_url(index_url, name)
        return _once(self._lock, self._pages, url,
                     lambda: self._fetch_project(url, index_url, name)).result()

    def arrived(self, index_url: str, name: str) -> ProjectPage | None:
        """The project page if it has arrived (never waits, never fetches, never raises)."""
        future = self._pages.get(self.page_url(index_url, name))
        if future is None or not future.done() or future.exception() is not None:
            return None
        return future.result()

    def flat_page(self, url: str) -> Response:
        """A --find-links page (one HTML list of every file), fetched once per command
        however many packages it serves."""
        return _once(self._lock, self._flat, url,
                     lambda: self.http.get_cached(url, "text/html")).result()

    def prefetch(self, pages: Iterable[tuple[str, str]],
                 then: Callable[[str], None] | None = None) -> None:
        """Start fetching the pages of ``(index_url, name)`` in the background (daemon
        threads: a command that ends first does not wait for them); ``then(name)`` runs in
        that thread once a page has arrived. Errors are kept for whoever asks."""
        for index_url, name in pages:
            url = self.page_url(index_url, name)
            future, mine = _claim(self._lock, self._pages, url)
            if not mine:
                continue
            args = (future, url, index_url, name, then)
            try:
                threading.Thread(target=self._background, daemon=True, args=args).start()
            except RuntimeError:  # no thread to be had: fetched here, so that nobody
                self._background(*args)  # waits on a page that nobody is fetching

    def _background(self, future: Future[ProjectPage], url: str, index_url: str, name: str,
                    then: Callable[[str], None] | None) -> None:
        _settle(future, lambda: self._fetch_project(url, index_url, canonicalize_name(name)))
        if then is not None and future.exception() is None:
            then(canonicalize_name(name))

    def _fetch_project(self, url: str, index_url: str, name: str) -> ProjectPage:
        resp = self.http.get_cached(url, ACCEPT)
        if resp.status == 404:
            raise UnknownPackage(f"{name}: not found on {redact(index_url)} (HTTP 404 for "
                                 f"{redact(url)}); check the name or set its index in "
                                 "[tool.pinbump.index]")
        ctype = resp.headers.get("content-type", "").split(";")[0].strip()
        if ctype == "application/vnd.pypi.simple.v1+json":
            return parse_json_page(resp.content, resp.url, name)
        if ctype in ("text/html", "application/vnd.pypi.simple.v1+html", ""):
            return parse_html_page(resp.content.decode("utf-8", "replace"), resp.url, name)
        raise IndexError_(f"{redact(url)}: unexpected content type {ctype!r} for a project page")

    def upload_time(self, file: DistFile) -> datetime | None:
        """PEP 700 upload-time, else the Last-Modified of the file itself (a HEAD request)."""
        if file.upload_time is not None:
            return file.upload_time
        cached = self._cache_file("upload-time", file)
        stored = self.cache.read(cached) if self.cache and cached else None
        if stored is not None:
            return _parse_time(stored.decode("utf-8", "replace").strip())
        resp = self.http.request("HEAD", file.url)
        value = resp.headers.get("last-modified") if resp.status == 200 else None
        if not value:
            return None
        try:
            when = parsedate_to_datetime(value).astimezone(timezone.utc)
        except (TypeError, ValueError):
            return None
        if self.cache is not None and cached is not None:
            self.cache.write(cached, when.isoformat().encode())
        return when

    def metadata(self, file: DistFile) -> bytes:
        """Core metadata of a wheel: PEP 658 file, else range requests, else a full download."""
        cached = self._cache_file("metadata", file)
        stored = self.cache.read(cached) if self.cache and cached else None
        if stored is not None:
            return stored
        data = self._fetch_metadata(file)
        if self.cache is not None and cached is not None:
            self.cache.write(cached, data)
        return data

    def _fetch_metadata(self, file: DistFile) -> bytes:
        if file.core_metadata:
            resp = self.http.request("GET", file.url + ".metadata",
                                     max_bytes=METADATA_LIMITS.member)
            if resp.status == 200:
                expected = dict(file.core_metadata) if isinstance(file.core_metadata, tuple) \
                    else {}
                verify_sha256(resp.content, expected.get("sha256"), file.url + ".metadata")
                self.metadata_sources[file.url] = "pep658"
                return resp.content

        members, how = self.wheel_members(file, is_metadata, METADATA_LIMITS)
        self.metadata_sources[file.url] = how
        return members[metadata_member(list(members))]

    def wheel_members(self, file: DistFile, wanted: Callable[[str], bool], limits: Limits,
                      sink: Sink | None = None) -> tuple[dict[str, bytes], str]:
        """Members of the wheel ``file`` whose names satisfy ``wanted``, within ``limits``:
        through range requests when the server honours them ("range"), else from the whole
        wheel, its sha256 checked ("download"). Every member name is checked first. With
        ``sink``, each member is handed to it as it is inflated instead of being held (the
        members returned are none; a member may be handed twice when a server that
        honoured ranges stops honouring them)."""

        with Download(WHEEL_LIMIT) as whole:

            def fetch(range_header: str) -> tuple[int, bytes, str]:
                held = self._tails.get(file.url) if range_header == f"bytes=-{TAIL}" else None
                if held is not None:  # the metadata read fetched it: drift's sources reuse it
                    return held
                r = self.http.request("GET", file.url, {"Range": range_header}, ok=(200, 206),
                                      max_bytes=range_size(range_header), sink=whole)
                answer = r.status, r.content, r.headers.get("content-range", "")
                if r.status == 206 and range_header == f"bytes=-{TAIL}":
                    self._tails[file.url] = answer
                return answer

            try:
                if wanted is is_metadata:  # METADATA alone: from the directory's tail
                    return read_metadata_lazily(fetch, file.url, limits, file.filename), \
                        "range"
                return read_members_lazily(fetch, file.url, wanted, limits, file.filename,
                                           sink=sink), "range"
            except WholeFile:  # the server sent it all: it is in ``whole``
                pass
            except WheelError:
                raise  # what the wheel holds is the problem: another way of reading it is no cure
            except MetadataError:  # the server's range answers were unusable: download instead
                resp = self.http.request("GET", file.url, sink=whole)
                if resp.status != 200:
                    raise MetadataError(f"{redact(file.url)}: HTTP {resp.status}; wheel "
                                        "missing") from None
            if file.sha256 and whole.sha256() != file.sha256.lower():
                raise MetadataError(sha256_mismatch(file.url, file.sha256))
            return read_members(whole.file, wanted, limits, file.filename, sink), "download"

    def knows(self, kind: str, file: DistFile) -> bool:
        """Whether the disk cache holds ``kind`` ("metadata", "upload-time") of ``file``."""
        cached = self._cache_file(kind, file)
        return cached is not None and cached.is_file()

    def _cache_file(self, kind: str, file: DistFile) -> Path | None:
        return None if self.cache is None else self.cache.path(kind, file.url, file.sha256)


def _once(lock: threading.Lock, held: dict[str, Future[_T]], key: str,
          fetch: Callable[[], _T]) -> Future[_T]:
    """The one future for ``key``: the first caller settles it with ``fetch`` (in its own
    thread), later callers get the same future (and wait on it)."""
    future, mine = _claim(lock, held, key)
    if mine:
        _settle(future, fetch)
    return future


def _claim(lock: threading.Lock, held: dict[str, Future[_T]], key: str
           ) -> tuple[Future[_T], bool]:
    """The one future for ``key``, and whether this caller made it (and must settle it)."""
    with lock:
        future = held.get(key)
        if future is not None:
            return future, False
        held[key] = future = Future()
        return future, True


def _settle(future: Future[_T], fetch: Callable[[], _T]) -> None:
    """Run ``fetch`` and put its result (or the error it raised) in ``future``."""
    try:
        future.set_result(fetch())
    except BaseException as exc:  # kept for every waiter; re-raised by .result()
        future.set_exception(exc)


def verify_sha256(body: bytes, sha256: str | None, url: str) -> None:
    if sha256 and hashlib.sha256(body).hexdigest() != sha256.lower():
        raise MetadataError(sha256_mismatch(url, sha256))


def sha256_mismatch(url: str, sha256: str) -> str:
    return (f"{redact(url)}: sha256 mismatch (index says {sha256[:12]}…); the file or the "
            "index page is corrupt")


def range_size(range_header: str) -> int:
    """How many bytes a ``bytes=-N`` or ``bytes=A-B`` request asks for: a 206 answer longer
    than that is refused (a whole file comes as 200, to disk)."""
    first, _, last = range_header.removeprefix("bytes=").partition("-")
    return int(last) if not first else int(last) - int(first) + 1
