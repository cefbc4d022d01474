"""The two objects every command is given: the ``Workspace`` (the target, loaded once) and the
``Services`` (the adapters, built once at the door). Commands never build either themselves."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

from bot.adapters.cache import default_cache_dir
from bot.adapters.http import HttpClient
from bot.adapters.index import SimpleIndex
from bot.adapters.tree import read_tree
from bot.core.workspace import Workspace, build_workspace


@dataclass(frozen=True)
class PlanOptions:
    """What plan, apply, drift and run are told on the command line."""

    repo: Path
    group: str | None = None
    as_of: str | None = None
    index_url: str | None = None
    min_release_age: float | None = None
    cache_dir: Path | None = None
    no_cache: bool = False
    timeout: float = 20.0
    retries: int = 3
    deadline: float | None = None  # seconds for all of the command's index traffic
    channel: str | None = None  # "stable" (default) or "nightly"
    strict: bool | None = None  # an unreachable index is an error (exit 2)
    refresh: bool = False  # revalidate every stored page, even one still fresh

    @property
    def cache(self) -> Path | None:
        return None if self.no_cache else (self.cache_dir or default_cache_dir())

    @property
    def overrides(self) -> dict[str, object]:
        """The policy keys the flags override (None: not given)."""
        return {"group": self.group, "index_url": self.index_url,
                "min_release_age_days": self.min_release_age, "channel": self.channel,
                "strict": self.strict}


def load_workspace(root: Path, overrides: dict[str, object] | None = None,
                   counted: Callable[[int], None] | None = None) -> Workspace:
    """List the target once (one tree walk), read its pin files and parse what they say
    (the config once); the rest of the tree is read when a command first searches it.
    ``counted`` hears how many files were listed so far (progress on a terminal)."""
    return build_workspace(root, read_tree(root, counted), overrides or {})


Say = Callable[[str], None]  # updates the progress line ("parsed 126/1,882 files")
Progress = Callable[[str], AbstractContextManager[Say]]


def _silent(_text: str) -> None:
    pass


def _quiet(_message: str) -> AbstractContextManager[Say]:
    return nullcontext(_silent)


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class Services:
    """The adapters a command uses, built once: the index (one HTTP client), a scratch-or-real
    cache folder, the clock and the output. Git and GitHub join them for run and gate."""

    http: HttpClient
    index: SimpleIndex
    cache: Path | None  # the on-disk cache; None: no cache
    scratch: Path  # a folder for this command's downloads when there is no cache
    clock: Callable[[], datetime] = _utcnow
    out: IO[str] = field(default_factory=lambda: sys.stderr)
    progress: Progress = _quiet

    def say(self, line: str) -> None:
        print(f"pinbump: {line}", file=self.out)

    @property
    def store(self) -> Path:
        """Where downloaded API sources go: the cache, else this command's scratch folder."""
        return self.cache or self.scratch


@contextmanager
def open_services(opts: PlanOptions, *, out: IO[str] | None = None,
                  progress: Progress | None = None,
                  clock: Callable[[], datetime] | None = None) -> Iterator[Services]:
    """Open the index client (closed on the way out) and the rest of the services."""
    with ExitStack() as stack:
        http = stack.enter_context(HttpClient(opts.cache, timeout=opts.timeout,
                                              retries=opts.retries, deadline=opts.deadline,
                                              refresh=opts.refresh))
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pinbump-")))
        yield Services(http=http, index=SimpleIndex(http, opts.cache), cache=opts.cache,
                       scratch=scratch, clock=clock or _utcnow, out=out or sys.stderr,
                       progress=progress or _quiet)
