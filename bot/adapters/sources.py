"""The real ``Source`` for resolution: the policy's index per package, pages fetched in parallel."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
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
    def __init__(self, index: SimpleIndex, policy: Policy, env: Environment) -> None:
        self.index = index
        self.policy = policy
        self.env = env
        self._pages: dict[str, ProjectPage | PinbumpError] = {}
        self._lock = threading.Lock()

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
        return parse_requires_dist(self.index.metadata(best_wheel(self.env, files)))

    def upload_time(self, file: DistFile) -> datetime | None:
        return self.index.upload_time(file)
