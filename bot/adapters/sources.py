"""The real ``Source`` for resolution: the index model's indexes per package, pages fetched in
parallel, each answer (or failure) kept so the resolver can report it per package."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime
from typing import Any, TypeVar

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from bot.adapters.index import SimpleIndex, parse_html_page, parse_requires_dist
from bot.core.config import Policy
from bot.core.environment import Environment
from bot.core.indexmodel import IndexModel, IndexRef
from bot.core.models import DistFile, ProjectPage
from bot.core.resolve import best_wheel
from bot.errors import IndexError_, MetadataError, PinbumpError, redact

_T = TypeVar("_T")


class _Pool:
    """A few daemon worker threads: reads the command no longer waits for (guesses, reads
    ahead) are dropped when it ends instead of holding the process open until they are
    answered, as a ThreadPoolExecutor's workers do (they are joined at exit). What such a
    read was writing to the cache is written atomically or not at all."""

    def __init__(self, workers: int) -> None:
        self._work: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = \
            queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._run, daemon=True,
                                          name="pinbump-read") for _ in range(workers)]
        self._closed = False
        for thread in self._threads:
            thread.start()

    def submit(self, work: Callable[[DistFile], _T], wheel: DistFile) -> Future[_T]:
        future: Future[_T] = Future()
        self._work.put((future, lambda: work(wheel)))
        return future

    def _run(self) -> None:
        while (item := self._work.get()) is not None:
            future, work = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(work())
            except BaseException as exc:  # kept for whoever waits on it
                future.set_exception(exc)

    def shutdown(self) -> None:
        """Cancel what has not started; the workers end once the queue is drained."""
        while True:
            try:
                item = self._work.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in self._threads:
            self._work.put(None)


class IndexSource:
    """Pages are fetched together, each once; metadata is read ahead, so round trips overlap
    instead of queueing:

    - as soon as a pinned companion's page arrives, the metadata of its releases the
      resolver walks first (newest first, down to the current pin, at most ``SPECULATE``)
      is read, while the lead's page and metadata are still on their way;
    - asking for one version's requirements also starts reading what the resolver asks
      next (the lockstep packages at the lead's version, a companion's next older releases).

    What the resolver asks for never queues behind what was read ahead for it: guesses run
    in a pool of their own, and a guess not yet started is moved to the asked pool when
    asked for. ``close`` drops reads nobody asked for."""

    READ_AHEAD = 8  # a companion's older releases read while the newest is checked
    SPECULATE = 16  # a pinned companion's releases read as soon as its page arrives

    def __init__(self, index: SimpleIndex, policy: Policy, env: Environment,
                 model: IndexModel | None = None, *, cutoff: datetime | None = None,
                 currents: Mapping[str, Version | None] | None = None) -> None:
        self.index = index
        self.policy = policy
        self.model = model
        self.env = env
        self.cutoff = cutoff  # --as-of: files uploaded later are not considered
        self.currents = dict(currents or {})  # pinned companion -> its current pin
        self._flat: dict[tuple[str, str], ProjectPage | PinbumpError] = {}
        self._lock = threading.Lock()
        self._started: dict[tuple[str, DistFile], Future[Any]] = {}  # (what, wheel) -> read
        self._guessed: set[Future[Any]] = set()
        self._pools: dict[bool, _Pool] = {}  # speculative? -> its pool
        self._merged: dict[str, tuple[list[ProjectPage], dict[Version, list[DistFile]]]] = {}
        self._closed = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for pool in self._pools.values():
                pool.shutdown()

    def refs(self, package: str) -> tuple[IndexRef, ...]:
        if self.model is not None and self.model.for_package(package):
            return self.model.for_package(package)
        return (IndexRef(self.policy.index_for(package), "default index"),)

    def prefetch(self, packages: Iterable[str]) -> None:
        """Start every page of every index of ``packages`` at once, in the background; each
        page is waited for where it is used, and its errors are raised there."""
        packages = list(packages)
        self.index.prefetch(((r.url, p) for p in packages for r in self.refs(p) if not r.flat),
                            then=self._speculate)
        for package in packages:
            for ref in self.refs(package):
                if ref.flat:
                    threading.Thread(target=self._flat_page, args=(package, ref.url),
                                     daemon=True).start()

    def _fetch(self, package: str, ref: IndexRef) -> ProjectPage:
        if ref.flat:
            page = self._flat_page(package, ref.url)
            if isinstance(page, PinbumpError):
                raise page
            return page
        return self.index.project(ref.url, package)

    def _flat_page(self, package: str, url: str) -> ProjectPage | PinbumpError:
        """A --find-links page: one HTML list of files, this package's picked out by name
        (the page itself is fetched once, whichever packages it serves)."""
        key = (package, url)
        if key not in self._flat:
            try:
                resp = self.index.flat_page(url)
                if resp.status == 404:
                    raise IndexError_(f"{redact(url)}: HTTP 404 for a --find-links page")
                name = canonicalize_name(package)
                page: ProjectPage | PinbumpError = parse_html_page(
                    resp.content.decode("utf-8", "replace"), resp.url, name)
            except PinbumpError as exc:
                page = exc
            with self._lock:
                self._flat.setdefault(key, page)
        return self._flat[key]

    def page_on(self, package: str, ref: IndexRef) -> ProjectPage:
        return self._fetch(package, ref)

    def releases_on(self, package: str, index: IndexRef) -> dict[Version, list[DistFile]]:
        return self.page_on(package, index).versions()

    def requires(self, package: str, version: Version, files: Sequence[DistFile]
                 ) -> list[Requirement]:
        if not files or not any(f.is_wheel for f in files):
            raise MetadataError(f"{package} {version}: no wheel to read metadata from")
        wheel = best_wheel(self.env, files)
        ahead = not self.index.knows("metadata", wheel)  # on disk: so is what comes next
        wanted = self._read(wheel)
        for other in self._next_asked(package, version) if ahead else ():
            self._read(other)
        return parse_requires_dist(wanted.result())

    def _read(self, wheel: DistFile, guess: bool = False) -> Future[bytes]:
        """The read of ``wheel``'s metadata, started once; a guess still queued is moved
        to the asked pool when it is asked for."""
        return self._once(("metadata", wheel), self.index.metadata, wheel, guess)

    def _uploaded(self, wheel: DistFile, guess: bool = False) -> Future[datetime | None]:
        """The upload time of ``wheel`` (a HEAD request where the page gives none), asked
        once per command however often the resolver looks."""
        return self._once(("upload-time", wheel), self.index.upload_time, wheel, guess)

    def _once(self, key: tuple[str, DistFile], work: Callable[[DistFile], _T], wheel: DistFile,
              guess: bool) -> Future[_T]:
        with self._lock:
            held = self._started.get(key)
            if held is not None:
                if guess or held not in self._guessed or not held.cancel():
                    return held
                self._guessed.discard(held)  # asked for before it started: asked now
            if self._closed:  # a page arriving after the plan: nothing more to read
                future: Future[Any] = Future()
                future.cancel()
                return future
            pool = self._pools.get(guess)
            if pool is None:
                pool = self._pools[guess] = _Pool(self.SPECULATE if guess else self.READ_AHEAD)
            self._started[key] = future = pool.submit(work, wheel)
            if guess:
                self._guessed.add(future)
            return future

    def _speculate(self, package: str) -> None:
        """A page arrived: ask for what the resolver will want of it first, before it asks
        (the upload times the page does not give; a pinned companion's metadata)."""
        self._guess_upload_times(package)
        if package not in self.policy.active_group.companions or package not in self.currents:
            return
        current = self.currents[package]
        wheels = self._newest_wheels(package, current, lambda version, _files: bool(
            version.local or (version.is_prerelease and version != current
                              and not self.policy.prereleases_allowed(package))))
        self._guess(wheels, "metadata", self._read)

    def _guess_upload_times(self, package: str) -> None:
        """An index without PEP 700 upload times (FlashInfer's own): the resolver screens
        the newest releases one after another, each with a HEAD request for its wheel's
        Last-Modified; start those of the newest ``SPECULATE`` releases at once."""
        group = self.policy.active_group
        if package not in group.members:
            return
        wheels = self._newest_wheels(package, self.currents.get(package), lambda version, files: (
            any(f.upload_time is not None for f in files) or (
                version.is_prerelease and self.cutoff is None
                and not self.policy.prereleases_allowed(package))))
        self._guess(wheels, "upload-time", self._uploaded)

    def _newest_wheels(self, package: str, current: Version | None,
                       passed_over: Callable[[Version, list[DistFile]], bool]
                       ) -> list[DistFile]:
        """The likely wheels of the newest ``SPECULATE`` releases down to ``current`` (the
        resolver screens them newest first), less those ``passed_over`` names."""
        wheels: list[DistFile] = []
        for version, files in sorted(self._held(package).items(), reverse=True):
            if len(wheels) >= self.SPECULATE or (current is not None and version < current):
                break
            if passed_over(version, files):
                continue
            wheel = self._likely_wheel(files)
            if wheel is not None:
                wheels.append(wheel)
        return wheels

    def _guess(self, wheels: list[DistFile], kind: str,
               start: Callable[[DistFile, bool], Future[Any]]) -> None:
        """Start these guesses, unless the disk cache already knows one of them: then an
        earlier command resolved this package, what the resolver needs is most likely on
        disk (read in no time when asked), and the rest would be asked of the index again
        and again, in every warm run, for nothing."""
        if not any(self.index.knows(kind, w) for w in wheels):
            for wheel in wheels:
                start(wheel, True)

    def _likely_wheel(self, files: Sequence[DistFile]) -> DistFile | None:
        """The wheel ``requires`` would read for these files: the same choice, over the files
        not yanked and uploaded by the cutoff; None when the resolver would not read any."""
        kept = [f for f in files if f.yanked is None and (
            self.cutoff is None or f.upload_time is None or f.upload_time <= self.cutoff)]
        if not any(f.is_wheel and self.env.installable(f) for f in kept):
            return None
        try:
            return best_wheel(self.env, kept)
        except PinbumpError:
            return None

    def _next_asked(self, package: str, version: Version) -> list[DistFile]:
        """Wheels whose metadata the resolver is likely to want next (pages already held
        only: reading ahead never fetches a page nor raises)."""
        group = self.policy.active_group
        if package == group.lead:
            asked = [(p, version) for p in group.lockstep]
        elif package in group.lockstep:  # a shim per CPU platform, each one read; then
            files = self._held(package).get(version) or []  # the set at that version
            same = Version(version.public)
            return [best_wheel(self.env, on) for p in self.env.platforms
                    if (on := self.env.on_platform(files, p))] + self._wheels_of(
                [(p, same) for p in (group.lead, *group.lockstep) if p != package])
        else:
            older = sorted((v for v in self._held(package) if v < version and not
                            v.is_prerelease), reverse=True)
            asked = [(package, v) for v in older[:self.READ_AHEAD]]
        return self._wheels_of(asked)

    def _wheels_of(self, asked: Iterable[tuple[str, Version]]) -> list[DistFile]:
        out = []
        for name, v in asked:
            files = self._held(name).get(v) or []
            if any(f.is_wheel for f in files):
                try:
                    out.append(best_wheel(self.env, files))
                except PinbumpError:
                    continue
        return out

    def _held(self, package: str) -> dict[Version, list[DistFile]]:
        """The package's files by version on the pages of it that have arrived (merged
        again only when another page has arrived)."""
        pages = []
        for ref in self.refs(package):
            page = self._flat.get((package, ref.url)) if ref.flat else \
                self.index.arrived(ref.url, package)
            if isinstance(page, ProjectPage):
                pages.append(page)
        with self._lock:
            held = self._merged.get(package)
            if held is not None and len(held[0]) == len(pages) and all(
                    a is b for a, b in zip(held[0], pages, strict=True)):
                return held[1]
        out: dict[Version, list[DistFile]] = {}
        for page in pages:
            for version, files in page.versions().items():
                out.setdefault(version, []).extend(files)
        with self._lock:
            self._merged[package] = (pages, out)
        return out

    def upload_time(self, file: DistFile) -> datetime | None:
        return self._uploaded(file).result()
