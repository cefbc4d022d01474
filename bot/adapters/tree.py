"""The one tree reader: every file of the target listed once, and each read at most once.

``read_tree`` walks the target (one ``lstat`` per file) and reads at once only what
discovery needs: the files that may hold a pin (``file_kind``) and ``pinbump.toml``. The
files the requirements' ``-r``/``-c`` lines and the config's ``files`` globs name are read
when named (``Tree.read``). The rest is read when a command first searches it
(``Tree.search``: apply's old versions, drift's import names), once: the files holding a
needle are kept, as bytes, the others are let go. ``pinbump plan`` reads no ``.py`` file.

Every read goes through ``read_file``: links are never followed, only regular files are
read (a FIFO is never waited on), nothing over the size cap, and a file replaced between its
``lstat`` and its ``open`` is not read.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bot.core.discovery import Target, file_kind, find_pins, read_includes, skipped_dir
from bot.core.workspace import CONFIG_FILE, TextFiles
from bot.errors import InputError

MAX_BYTES = 2 * 1024 * 1024
# A search of at least this many unread files, or bytes, runs in worker processes (one per
# core), each reading a shard: measured on this 2-core VM (bench/RESULTS.md, third pass).
PARALLEL_FILES = 4_000
PARALLEL_BYTES = 64 * 1024 * 1024

Counted = Callable[[int], None]


def _why_not_text(data: bytes) -> str | None:
    if data.isascii():  # most source files: no decode needed to know
        return "contains NUL bytes" if b"\0" in data else None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.reason
    return "contains NUL bytes" if b"\0" in data else None


def read_file(path: str | Path, cap: int = MAX_BYTES) -> tuple[bytes | None, str]:
    """(bytes, "") of a regular file of at most ``cap`` bytes, else (None, why it was not
    read; "" for a FIFO or a socket, which could hold no pin and whose reading could block).
    A link is never followed, and a file swapped after the ``lstat`` is not read."""
    try:
        info = os.lstat(path)  # one call: link or not, regular or not, size
        refused = _refused(info, cap)
        if refused is not None:
            return None, refused
        data = _read_regular(path, info, cap)
    except OSError as exc:
        return None, f"cannot read ({exc.strerror})"
    return (data, "") if data is not None else (None, "replaced while being read (not "
                                                      "followed)")


def _refused(info: os.stat_result, cap: int) -> str | None:
    """Why a file of this ``lstat`` is not read ("" for a FIFO or a socket, which could hold
    no pin and whose reading could block), or None: a regular file of at most ``cap``."""
    if stat.S_ISLNK(info.st_mode):
        return "a symbolic link (not followed)"
    if not stat.S_ISREG(info.st_mode):
        return ""
    if info.st_size > cap:
        return f"over {_size(cap)} ({info.st_size} bytes)"
    return None


def _size(cap: int) -> str:
    return f"{cap // 2**20} MB" if cap >= 2**20 else f"{cap} bytes"


def _read_regular(path: str | Path, seen: os.stat_result, cap: int = MAX_BYTES
                  ) -> bytes | None:
    """The bytes of ``path`` if it is still the regular file ``seen`` (lstat) when opened:
    a file swapped for a link or a FIFO after the lstat is never followed or waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # it is a link now
            return None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != \
                (seen.st_dev, seen.st_ino) or info.st_size > cap:
            return None
        chunks = []
        left = cap + 1  # a file that grew past the cap since: not read whole
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return None if len(data) > cap else data
    finally:
        os.close(fd)


# What one read of a listed file came to: ("held", bytes), ("dropped", None: text holding
# no needle), ("undecodable", why it is not text), ("not read", why; "" for a FIFO).
Look = tuple[str, bytes | str | None]


def _look(path: str, needles: tuple[bytes, ...] | None) -> Look:
    """Read ``path`` once; keep its bytes when they hold a needle (always, with None)."""
    data, why = read_file(path)
    if data is None:
        return "not read", why
    not_text = _why_not_text(data)
    if not_text is not None:
        return "undecodable", not_text
    if needles is None or any(n in data for n in needles):
        return "held", data
    return "dropped", None


def _search_shard(root: str, shard: list[str], needles: tuple[bytes, ...]
                  ) -> list[tuple[str, Look]]:
    """A worker's part of a search: what each file of ``shard`` came to (only the bytes of
    the files held travel back)."""
    return [(rel, _look(os.path.join(root, rel), needles)) for rel in shard]


def _fewest(needles: Iterable[bytes]) -> tuple[bytes, ...]:
    """The needles without those holding a shorter one (a file holding ``flashinfer_python``
    holds ``flashinfer``): each byte search is a pass over the file."""
    ordered = sorted(set(needles), key=len)
    out: list[bytes] = []
    for n in ordered:
        if n and not any(m in n for m in out):
            out.append(n)
    return tuple(out)


@dataclass
class Tree:
    """The target's files: every file listed (regular, under the cap), the text ones read so
    far held as bytes (``raw``, decoded when looked at through ``text``)."""

    root: Path
    listed: dict[str, int]  # relative posix path -> size, walk order
    raw: dict[str, bytes] = field(default_factory=dict)  # text files read and held
    undecodable: dict[str, str] = field(default_factory=dict)  # path -> why it is not text
    # files that may hold a pin and were not read (symlinks, over the size cap, unreadable):
    # never skipped silently, the plan and apply list them
    skipped: list[tuple[str, str]] = field(default_factory=list)
    not_read: dict[str, str] = field(default_factory=dict)  # listed, then not read: why
    # files never listed, with why (links, over the cap, odd names): listed as not read
    # when a -r/-c line or the config names them, whatever their kind
    unlisted: dict[str, str] = field(default_factory=dict)
    reads: int = 0  # files read so far (each listed file once, unless a search re-reads)
    _unread: dict[str, None] = field(default_factory=dict)  # never read (ordered set)
    _dropped: set[str] = field(default_factory=set)  # read, text, held nothing asked
    _covered: frozenset[bytes] | None = None  # what every file let go was searched for

    def __post_init__(self) -> None:
        self._unread = dict.fromkeys(self.listed)

    @property
    def text(self) -> Mapping[str, str]:
        return TextFiles(self.raw)

    @property
    def paths(self) -> Collection[str]:
        return self.listed.keys()

    def _take(self, rel: str, look: Look, named: bool = False) -> None:
        self.reads += 1
        self._unread.pop(rel, None)
        self._dropped.discard(rel)
        kind, value = look
        if kind == "held":
            assert isinstance(value, bytes)
            self.raw[rel] = value
        elif kind == "dropped":
            self._dropped.add(rel)
        elif kind == "undecodable":
            assert isinstance(value, str)
            self.undecodable[rel] = value
        else:
            assert isinstance(value, str)
            self.not_read[rel] = value
            if value and (named or file_kind(rel)):
                self.skipped.append((rel, value))

    def _waiting(self, paths: Iterable[str]) -> list[str]:
        return [p for p in paths if p in self._unread or p in self._dropped]

    def read(self, paths: Iterable[str]) -> None:
        """Hold the text files among ``paths`` that are listed and not held yet; one that
        could not be read is listed as not read, with why, whatever its kind."""
        paths = list(paths)
        for rel in paths:
            why = self.unlisted.pop(rel, None)
            if why and file_kind(rel) is None:  # a pin file's reason is listed already
                self.skipped.append((printable(rel), why))
        base = os.fspath(self.root)
        for rel in self._waiting(paths):
            self._take(rel, _look(os.path.join(base, rel), None), named=True)

    def search(self, needles: frozenset[bytes], counted: Counted | None = None) -> None:
        """Hold every text file whose bytes hold one of ``needles``. The first search reads
        every file not read yet, once, holds those that hold a needle and lets the others
        go; a later one for needles that one covered reads nothing. A later one for other
        needles reads the files let go again: callers declare what they will ask for
        (``Workspace.interest``) so that it stays rare."""
        if self._covered is not None and needles <= self._covered:
            return
        covered = needles | (self._covered or frozenset())
        todo = [*self._unread, *sorted(self._dropped)]
        fewest = _fewest(covered)
        size = sum(self.listed[p] for p in todo)
        if len(todo) >= PARALLEL_FILES or size >= PARALLEL_BYTES:
            self._search_in_workers(todo, fewest, counted)
        else:
            base = os.fspath(self.root)
            for i, rel in enumerate(todo, start=1):
                self._take(rel, _look(os.path.join(base, rel), fewest))
                if counted is not None and i % 500 == 0:
                    counted(i)
        self._covered = covered

    def _search_in_workers(self, todo: list[str], needles: tuple[bytes, ...],
                           counted: Counted | None) -> None:
        """The search in worker processes, one per core, forked from this small process
        (the tree is not held yet): each reads a shard of paths, largest files dealt first
        round-robin so that shards cost alike. A shard whose worker fails or is killed is
        read in this process instead."""
        from concurrent.futures import ProcessPoolExecutor, as_completed

        from bot.adapters.scancache import workers_for

        base = os.fspath(self.root)
        workers = workers_for(len(todo), 1)
        if not workers:
            for rel in todo:
                self._take(rel, _look(os.path.join(base, rel), needles))
            return
        by_size = sorted(todo, key=lambda p: -self.listed[p])
        shards = [by_size[i::workers * 4] for i in range(workers * 4)]
        done = 0
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(_search_shard, base, shard, needles): shard
                       for shard in shards if shard}
            for future in as_completed(futures):
                try:
                    looks = future.result()
                except Exception:  # a worker killed or failing: its shard is read here
                    # instead (nothing of it was taken), never a traceback
                    looks = _search_shard(base, futures[future], needles)
                for rel, look in looks:
                    self._take(rel, look)
                done += len(looks)
                if counted is not None:
                    counted(done)


def read_tree(root: Path, counted: Counted | None = None) -> Tree:
    """List every file under ``root`` (vendored and hidden folders skipped) and read the
    ones discovery needs (``file_kind``, the config); ``counted`` is told the number of
    files listed so far, every 500 files."""
    if not root.is_dir():
        raise InputError(f"{root}: not a directory (pass the target repository with --repo)")
    listed: dict[str, int] = {}
    unlisted: dict[str, str] = {}
    skipped: list[tuple[str, str]] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not skipped_dir(d))
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        prefix = "" if rel_dir == "." else rel_dir + "/"
        for name in dirnames:  # os.walk does not enter them: say so, they may hold pins
            if os.path.islink(os.path.join(dirpath, name)):
                skipped.append((prefix + name + "/", "a symbolic link to a folder (not "
                                                     "followed)"))
        for name in sorted(filenames):
            seen += 1
            if counted is not None and seen % 500 == 0:
                counted(seen)
            rel = prefix + name
            size, why = (None, ODD_NAME) if _odd(rel) else \
                _listing(os.path.join(dirpath, name))
            if size is not None:
                listed[rel] = size
            elif why:
                unlisted[rel] = why
                if file_kind(rel):
                    skipped.append((printable(rel), why))
    tree = Tree(root=root, listed=listed, skipped=skipped, unlisted=unlisted)
    tree.read([CONFIG_FILE, *(rel for rel in listed if file_kind(rel) is not None)])
    return tree


# A name holding a line break or a control character (or one that reorders text) is not
# read: nothing it holds could be said in one line of plan or apply output. Listed escaped.
ODD_NAME = "a name with control characters (not read)"
_ODD = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _odd(rel: str) -> bool:
    return _ODD.search(rel) is not None


def printable(rel: str) -> str:
    """``rel`` with its control characters escaped (``\\n``), as the output shows it."""
    return _ODD.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), rel)


def _listing(path: str) -> tuple[int | None, str]:
    """(size, "") of a regular file under the cap, else (None, why it will not be read)."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        return None, f"cannot read ({exc.strerror})"
    refused = _refused(info, MAX_BYTES)
    return (info.st_size, "") if refused is None else (None, refused)


def peek_unread(root: Path, paths: list[str]) -> dict[str, str]:
    """Best-effort text of pin files that were not read as UTF-8 (not UTF-8, over the size
    cap), so their old versions can be listed; symbolic links are never followed."""
    out: dict[str, str] = {}
    for rel in paths:
        try:  # opened as it is checked: a file swapped for a FIFO or a link is not read
            fd = os.open(root / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            with os.fdopen(fd, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    continue
                data = fh.read(MAX_BYTES)
        except OSError:
            continue
        out[rel] = data.replace(b"\0", b" ").decode("latin-1")
    return out


def discover(root: Path, names: set[str]) -> Target:
    """Read the tree under ``root`` and find the pins of ``names`` (one walk)."""
    tree = read_tree(root)
    read_includes(lambda: tree.text, names, tree.read)
    return find_pins(root, tree.text, names, tree.undecodable, skipped=tree.skipped)
