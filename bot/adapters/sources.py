"""The real ``Source`` for resolution: the index model's indexes per package, pages fetched in
parallel, each answer (or failure) kept so the resolver can report it per package."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime

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


class IndexSource:
    """Pages are fetched together; metadata is read ahead: asking for one version's
    requirements also starts reading what the resolver asks next (the lockstep packages at
    the lead's version, a companion's next older releases), so round trips overlap instead
    of queueing. ``close`` drops reads nobody asked for."""

    READ_AHEAD = 8  # a companion's older releases read while the newest is checked

    def __init__(self, index: SimpleIndex, policy: Policy, env: Environment,
                 model: IndexModel | None = None) -> None:
        self.index = index
        self.policy = policy
        self.model = model
        self.env = env
        self._pages: dict[tuple[str, str], ProjectPage | PinbumpError] = {}
        self._lock = threading.Lock()
        self._metadata: dict[DistFile, Future[bytes]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def refs(self, package: str) -> tuple[IndexRef, ...]:
        if self.model is not None and self.model.for_package(package):
            return self.model.for_package(package)
        return (IndexRef(self.policy.index_for(package), "default index"),)

    def prefetch(self, packages: Iterable[str]) -> None:
        """Fetch every page of every index of ``packages`` at once; errors are kept and raised
        when the page is used."""
        todo = [(p, r) for p in packages for r in self.refs(p)
                if (p, r.url) not in self._pages]
        if not todo:
            return
        with ThreadPoolExecutor(max_workers=min(16, len(todo))) as pool:
            results = list(pool.map(lambda item: self._fetch(*item), todo))
        with self._lock:
            for (package, ref), result in zip(todo, results, strict=True):
                self._pages[(package, ref.url)] = result

    def _fetch(self, package: str, ref: IndexRef) -> ProjectPage | PinbumpError:
        try:
            if ref.flat:
                return self._flat(package, ref.url)
            return self.index.project(ref.url, package)
        except PinbumpError as exc:
            return exc

    def _flat(self, package: str, url: str) -> ProjectPage:
        """A --find-links page: one HTML list of files, this package's picked out by name."""
        resp = self.index.http.get_cached(url, "text/html")
        if resp.status == 404:
            raise IndexError_(f"{redact(url)}: HTTP 404 for a --find-links page")
        name = canonicalize_name(package)
        return parse_html_page(resp.content.decode("utf-8", "replace"), resp.url, name)

    def page_on(self, package: str, ref: IndexRef) -> ProjectPage:
        key = (package, ref.url)
        if key not in self._pages:
            result = self._fetch(package, ref)
            with self._lock:
                self._pages[key] = result
        result = self._pages[key]
        if isinstance(result, PinbumpError):
            raise result
        return result

    def releases_on(self, package: str, index: IndexRef) -> dict[Version, list[DistFile]]:
        return self.page_on(package, index).versions()

    def requires(self, package: str, version: Version, files: Sequence[DistFile]
                 ) -> list[Requirement]:
        if not files or not any(f.is_wheel for f in files):
            raise MetadataError(f"{package} {version}: no wheel to read metadata from")
        wanted = self._read(best_wheel(self.env, files))
        for wheel in self._next_asked(package, version):
            self._read(wheel)
        return parse_requires_dist(wanted.result())

    def _read(self, wheel: DistFile) -> Future[bytes]:
        with self._lock:
            if wheel not in self._metadata:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(max_workers=self.READ_AHEAD)
                self._metadata[wheel] = self._pool.submit(self.index.metadata, wheel)
            return self._metadata[wheel]

    def _next_asked(self, package: str, version: Version) -> list[DistFile]:
        """Wheels whose metadata the resolver is likely to want next (pages already held
        only: reading ahead never fetches a page nor raises)."""
        group = self.policy.active_group
        if package == group.lead:
            asked = [(p, version) for p in group.lockstep]
        elif package in group.lockstep:
            return []
        else:
            older = sorted((v for v in self._held(package) if v < version and not
                            v.is_prerelease), reverse=True)
            asked = [(package, v) for v in older[:self.READ_AHEAD]]
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
        out: dict[Version, list[DistFile]] = {}
        for (name, _), page in list(self._pages.items()):
            if name == package and isinstance(page, ProjectPage):
                for version, files in page.versions().items():
                    out.setdefault(version, []).extend(files)
        return out

    def upload_time(self, file: DistFile) -> datetime | None:
        return self.index.upload_time(file)
