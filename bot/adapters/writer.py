"""The one atomic writer. ``atomic_write`` replaces one file (a temporary file beside it,
flushed and fsynced, then renamed over it); ``write_all`` writes a set of edited files all or
nothing: checked first, each written atomically, rolled back if any write fails. Line endings
and file modes are kept. Every file pinbump writes (the target's files, the cache, the
installed workflows, the GPU gate's reports) goes through here."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from bot.errors import WriteError


def atomic_write(path: Path, data: bytes, mode: int | None = None, *,
                 make_parents: bool = False) -> None:
    """Replace ``path`` with ``data`` atomically: readers see the old file or the new one,
    never a part. ``mode``: the permission bits to give it (default: owner read/write only,
    as for the cache)."""
    if make_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.pinbump-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, stat.S_IMODE(mode))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_all(root: Path, new: Mapping[str, bytes], originals: Mapping[str, bytes],
              order: Sequence[str] | None = None) -> None:
    """Replace each file in ``new``, provided it still holds ``originals[path]``."""
    paths = list(order or sorted(new))
    modes: dict[str, int] = {}
    for rel in paths:
        path = root / rel
        try:
            current = path.read_bytes()
            st = path.stat()
        except OSError as exc:
            raise WriteError(f"{rel}: cannot read before writing ({exc.strerror}); nothing "
                             "was written") from None
        if current != originals[rel]:
            raise WriteError(f"{rel}: changed on disk since it was read; nothing was written. "
                             "Run again on the current tree")
        if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or \
                not os.access(path, os.W_OK):
            raise WriteError(f"{rel}: file is read-only; nothing was written. Make it "
                             "writable or leave it out of the bump")
        modes[rel] = st.st_mode
    done: list[str] = []
    for rel in paths:
        try:
            atomic_write(root / rel, new[rel], modes[rel])
        except OSError as exc:
            for back in reversed(done):
                atomic_write(root / back, originals[back], modes[back])
            raise WriteError(f"{rel}: cannot write ({exc.strerror}); every file was left as "
                             "it was") from None
        done.append(rel)


def write_file(path: Path, data: bytes) -> None:
    """Create or replace one output file (a report) atomically."""
    try:
        mode = path.stat().st_mode if path.exists() else 0o644
        atomic_write(path, data, mode)
    except OSError as exc:
        raise WriteError(f"{path}: cannot write ({exc.strerror}); nothing was written") \
            from None


def append_file(path: Path, data: bytes) -> None:
    """Append to a file another tool owns (GitHub Actions' job summary)."""
    try:
        with path.open("ab") as fh:
            fh.write(data)
    except OSError as exc:
        raise WriteError(f"{path}: cannot append ({exc.strerror})") from None
