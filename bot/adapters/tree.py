"""Read a target's text files once: the one tree reader.

Every command reads the target through ``read_tree`` exactly once; discovery, the config,
apply's editors and drift's call-site scan all work on the ``Tree`` it returns.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bot.core.discovery import Target, file_kind, find_pins, skipped_dir
from bot.core.workspace import TextFiles
from bot.errors import InputError

MAX_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class Tree:
    root: Path
    raw: dict[str, bytes]  # relative posix path -> bytes as read (walk order), text files only
    text: Mapping[str, str]  # the same, decoded when looked at (bytes are held once)
    undecodable: dict[str, str] = field(default_factory=dict)  # path -> why it is not text
    # files that may hold a pin and were not read (symlinks, over the size cap, unreadable):
    # never skipped silently, the plan and apply list them
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _why_not_text(data: bytes) -> str | None:
    if data.isascii():  # most source files: no decode needed to know
        return "contains NUL bytes" if b"\0" in data else None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.reason
    return "contains NUL bytes" if b"\0" in data else None


def read_tree(root: Path, counted: Callable[[int], None] | None = None) -> Tree:
    """Every regular file under ``root`` (vendored and hidden folders skipped), read once;
    ``counted`` is told the number of files read so far, every 500 files."""
    if not root.is_dir():
        raise InputError(f"{root}: not a directory (pass the target repository with --repo)")
    raw: dict[str, bytes] = {}
    undecodable: dict[str, str] = {}
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
            data, why = _read_file(Path(dirpath, name))
            if data is None:
                if why and file_kind(rel):
                    skipped.append((rel, why))
                continue
            not_text = _why_not_text(data)
            if not_text is not None:
                undecodable[rel] = not_text
                continue
            raw[rel] = data
    return Tree(root=root, raw=raw, text=TextFiles(raw), undecodable=undecodable,
                skipped=skipped)


def _read_file(path: Path) -> tuple[bytes | None, str]:
    """(bytes, "") of a regular file, else (None, why it was not read; "" for a FIFO or a
    socket, which could hold no pin and whose reading could block)."""
    try:
        info = os.lstat(path)  # one call: link or not, regular or not, size
        if stat.S_ISLNK(info.st_mode):
            return None, "a symbolic link (not followed)"
        if not stat.S_ISREG(info.st_mode):
            return None, ""
        if info.st_size > MAX_BYTES:
            return None, f"over {MAX_BYTES // 2**20} MB ({info.st_size} bytes)"
        data = _read_regular(path, info)
    except OSError as exc:
        return None, f"cannot read ({exc.strerror})"
    return (data, "") if data is not None else (None, "replaced while being read (not "
                                                      "followed)")


def _read_regular(path: Path, seen: os.stat_result) -> bytes | None:
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
                (seen.st_dev, seen.st_ino) or info.st_size > MAX_BYTES:
            return None
        chunks = []
        left = MAX_BYTES + 1  # a file that grew past the cap since: not read whole
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return None if len(data) > MAX_BYTES else data
    finally:
        os.close(fd)


def peek_unread(root: Path, paths: list[str]) -> dict[str, str]:
    """Best-effort text of pin files that were not read as UTF-8 (not UTF-8, over the size
    cap), so their old versions can be listed; symbolic links are never followed."""
    out: dict[str, str] = {}
    for rel in paths:
        path = root / rel
        try:
            if path.is_symlink() or not path.is_file():
                continue
            with path.open("rb") as fh:
                data = fh.read(MAX_BYTES)
        except OSError:
            continue
        out[rel] = data.replace(b"\0", b" ").decode("latin-1")
    return out


def discover(root: Path, names: set[str]) -> Target:
    """Read the tree under ``root`` and find the pins of ``names`` (one walk)."""
    tree = read_tree(root)
    return find_pins(root, tree.text, names, tree.undecodable, skipped=tree.skipped)
