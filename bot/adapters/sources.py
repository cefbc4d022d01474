"""The real ``Source`` for resolution: the policy's index per package, pages fetched in parallel."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime

from packaging.requirements import Requirement
from packaging.version import Version

from bot.adapters.index import SimpleIndex, parse_requires_dist
from bot.core.config import Policy
from bot.core.environment import Environment
from bot.core.models import DistFile, ProjectPage
from bot.core.resolve import best_wheel
from bot.errors import MetadataError, PinbumpError


class IndexSource:
    """Pages are fetched together; metadata is read ahead: asking for one version's
    requirements also starts reading what the resolver asks next (the lockstep packages at
    the lead's version, a companion's next older releases), so round trips overlap instead
    of queueing. ``close`` drops reads nobody asked for."""

    READ_AHEAD = 8  # a companion's older releases read while the newest is checked

    def __init__(self, index: SimpleIndex, policy: Policy, env: Environment) -> None:
        self.index = index
        self.policy = policy
        self.env = env
        self._pages: dict[str, ProjectPage | PinbumpError] = {}
        self._lock = threading.Lock()
        self._metadata: dict[DistFile, Future[bytes]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def prefetch(self, packages: Iterable[str]) -> None:
        """Fetch every project page at once; errors are kept and raised when the page is used."""
        todo = [p for p in packages if p not in self._pages]
        with ThreadPoolExecutor(max_workers=max(1, len(todo))) as pool:
            for package, result in zip(todo, pool.map(self._fetch_page, todo), strict=True):
                with self._lock:
                    self._pages[package] = result

    def _fetch_page(self, package: str) -> ProjectPage | PinbumpError:
        try:
            return self.index.project(self.policy.index_for(package), package)
        except PinbumpError as exc:
            return exc

    def page(self, package: str) -> ProjectPage:
        if package not in self._pages:
            self.prefetch([package])
        result = self._pages[package]
        if isinstance(result, PinbumpError):
            raise result
        return result

    def releases(self, package: str) -> dict[Version, list[DistFile]]:
        return self.page(package).versions()

    def requires(self, package: str, version: Version) -> list[Requirement]:
        files = self.releases(package).get(version)
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
        page = self._pages.get(package)
        return page.versions() if isinstance(page, ProjectPage) else {}

    def upload_time(self, file: DistFile) -> datetime | None:
        return self.index.upload_time(file)
