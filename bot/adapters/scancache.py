"""Per-file scan results kept across runs, keyed by content: a scan (drift's call-site finder,
or any pure ``scan(path, text) -> list[row]``) runs only on files whose text changed since the
last run, in worker processes when many of them did.

The store is one JSON entry of the cache (kind ``scan``) per scanner and parameters: per path,
the sha256 of the text scanned and the rows found (flat dataclasses; tuples come back as
tuples). Its key holds the scanner's own source, so editing the scanner starts a new store.
A store that cannot be read is ignored (everything is scanned again), never trusted in part.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import inspect
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar

from bot import __version__
from bot.adapters.cache import Cache

T = TypeVar("T")
Scan = Callable[..., list[T]]  # scan(path, text, *args) -> rows
SCHEMA = 1


def store_key(scan: Callable[..., Any], params: Sequence[str]) -> str:
    """What a stored result depends on besides the file: the scanner's code and parameters."""
    try:
        code = inspect.getsource(inspect.getmodule(scan) or scan)
    except (OSError, TypeError):
        code = f"{scan.__module__}.{scan.__qualname__}"
    blob = json.dumps([SCHEMA, __version__, scan.__module__, scan.__qualname__,
                       hashlib.sha256(code.encode()).hexdigest(), sorted(params)])
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Store(Generic[T]):
    """The rows found per path last time, with the hash of the text they came from."""

    def __init__(self, cache: Path | None, key: str, row: type[T]) -> None:
        self.cache = Cache(cache) if cache is not None else None
        self.path = self.cache.path("scan", key) if self.cache is not None else None
        self.row = row
        self.entries: dict[str, tuple[str, list[T]]] = {}
        self.changed = False
        data = self.cache.read(self.path) if self.cache and self.path else None
        if data is not None:
            try:
                doc = json.loads(data)
                self.entries = {p: (h, [self._decode(r) for r in rows])
                                for p, (h, rows) in doc["files"].items()}
            except (ValueError, TypeError, KeyError, AttributeError):
                self.entries = {}  # unreadable or from another shape: scan everything again

    def _decode(self, fields: dict[str, Any]) -> T:
        return self.row(**{k: tuple(v) if isinstance(v, list) else v
                           for k, v in fields.items()})

    def get(self, path: str, sha: str) -> list[T] | None:
        found = self.entries.get(path)
        return found[1] if found is not None and found[0] == sha else None

    def put(self, path: str, sha: str, rows: list[T]) -> None:
        self.entries[path] = (sha, rows)
        self.changed = True

    def keep_only(self, paths: set[str]) -> None:
        for gone in set(self.entries) - paths:
            del self.entries[gone]
            self.changed = True

    def save(self) -> None:
        if self.cache is None or self.path is None or not self.changed:
            return
        doc = {"files": {p: [h, [dataclasses.asdict(r) for r in rows]]  # type: ignore[call-overload]
                         for p, (h, rows) in sorted(self.entries.items())}}
        self.cache.write(self.path, json.dumps(doc, separators=(",", ":")).encode())
        self.changed = False


def _scan_chunk(scan: Scan[T], args: tuple[Any, ...], chunk: list[tuple[str, str]]
                ) -> dict[str, list[T]]:
    return {path: scan(path, text, *args) for path, text in chunk}


def _scan_inline(scan: Scan[T], args: tuple[Any, ...], todo: list[tuple[str, str]],
                 counted: Callable[[int, int], None] | None) -> list[dict[str, list[T]]]:
    """Scan here, one file after another, telling ``counted`` as each is done."""
    parts = []
    for i, item in enumerate(todo, start=1):
        parts.append(_scan_chunk(scan, args, [item]))
        if counted is not None:
            counted(i, len(todo))
    return parts


def _collect(futures: list[Future[dict[str, list[T]]]], total: int,
             counted: Callable[[int, int], None] | None) -> list[dict[str, list[T]]]:
    """The workers' chunks as they finish, telling ``counted`` the files done so far."""
    parts: list[dict[str, list[T]]] = []
    for future in as_completed(futures):
        parts.append(future.result())
        if counted is not None:
            counted(sum(len(p) for p in parts), total)
    return parts


def workers_for(todo: int, min_parallel: int) -> int:
    """Worker processes for ``todo`` files: every core when there is enough work, else 0."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)
    return cores if todo >= min_parallel and cores >= 2 else 0


@contextmanager
def scanning(files: Mapping[str, str], scan: Scan[T], row: type[T], *,
             args: tuple[Any, ...] = (), params: Sequence[str] = (), cache: Path | None,
             min_parallel: int = 48, counted: Callable[[int, int], None] | None = None
             ) -> Iterator[Callable[[], dict[str, list[T]]]]:
    """``scan(path, text, *args)`` over ``files`` (path -> text, already narrowed to those
    worth scanning; ``params`` names ``args`` in the store's key) while the caller
    does other work; the yielded function waits and returns path -> rows for every file,
    telling ``counted(scanned, to_scan)`` as files are done.
    Files unchanged since the last run are not scanned at all; changed ones are scanned in
    worker processes (one per core) when there are at least ``min_parallel`` of them."""
    store: Store[T] = Store(cache, store_key(scan, params), row)
    store.keep_only(set(files))
    found: dict[str, list[T]] = {}
    todo: list[tuple[str, str]] = []
    shas: dict[str, str] = {}
    for path in sorted(files):
        text = files[path]
        shas[path] = sha = digest(text)
        rows = store.get(path, sha)
        if rows is None:
            todo.append((path, text))
        else:
            found[path] = rows

    def finish(parts: list[dict[str, list[T]]]) -> dict[str, list[T]]:
        for part in parts:
            for path, rows in part.items():
                store.put(path, shas[path], rows)
                found[path] = rows
        store.save()
        return dict(found)

    workers = workers_for(len(todo), min_parallel)
    if not workers:
        done: dict[str, dict[str, list[T]]] = {}

        def inline() -> dict[str, list[T]]:
            if "result" not in done:
                done["result"] = finish(_scan_inline(scan, args, todo, counted))
            return done["result"]

        yield inline
        return
    # largest files first, dealt round-robin: chunks of similar cost
    todo.sort(key=lambda item: -len(item[1]))
    chunks = [todo[i::workers * 4] for i in range(workers * 4)]
    # gc.freeze: what a worker inherits from this process (the tree's texts) is not walked
    # by its cycle collector on every pass
    with ProcessPoolExecutor(max_workers=workers, initializer=gc.freeze) as pool:
        futures: list[Future[dict[str, list[T]]]] = [
            pool.submit(_scan_chunk, scan, args, chunk) for chunk in chunks if chunk]
        result: dict[str, dict[str, list[T]]] = {}

        def wait() -> dict[str, list[T]]:
            if "result" not in result:
                result["result"] = finish(_collect(futures, len(todo), counted))
            return result["result"]

        yield wait
