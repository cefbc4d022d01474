"""The one atomic writer. ``atomic_write`` replaces one file (a temporary file beside it,
flushed and fsynced, then renamed over it); ``write_all`` writes a set of edited files all or
nothing: checked first, each written atomically, rolled back if any write fails. Line endings
and file modes are kept. Every file pinbump writes (the target's files, the cache, the
installed workflows, the GPU gate's reports) goes through here.

A command that edits a target holds ``TargetState``: an exclusive lock on the target (so two
applies never interleave their writes) and a journal of what it is writing, kept outside the
tree (in the target's ``.git`` folder, else in a private temporary folder keyed by the target's
real path). A run killed mid-write leaves its journal behind; the next run under the lock reads
it (``pending``), finishes the job and removes the temporary files the killed run named.
Temporary files are ``.NAME.pinbump-TOKEN`` beside each file, TOKEN being the run's own.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import secrets
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bot.adapters.tree import MAX_BYTES, read_file
from bot.errors import LockTimeout, WriteError

TEMP_MARK = ".pinbump-"
JOURNAL = "apply-journal.json"
LOCK = "apply.lock"


def _temp_path(path: Path, token: str) -> Path:
    return path.parent / f".{path.name}{TEMP_MARK}{token}"


def atomic_write(path: Path, data: bytes, mode: int | None = None, *,
                 make_parents: bool = False, token: str | None = None) -> None:
    """Replace ``path`` with ``data`` atomically: readers see the old file or the new one,
    never a part. ``mode``: the permission bits to give it (default: owner read/write only,
    as for the cache). ``token`` names the temporary file (a journalled write's own)."""
    if make_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_path(path, token or secrets.token_hex(8))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        if mode is not None:
            os.chmod(tmp, stat.S_IMODE(mode))
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def state_folder(root: Path) -> Path:
    """Where a target's lock and journal live: never inside its tree. ``.git/pinbump`` when
    the target is a git checkout; for a ``.git`` file (a linked worktree) the git dir it
    names, only when that is a genuine worktree git dir of this very tree (see
    ``_linked_git_dir``); else ``$TMPDIR/pinbump-UID/<sha256 of the real path>``."""
    dot_git = root / ".git"
    git_dir: Path | None = None
    if dot_git.is_dir() and not dot_git.is_symlink():
        git_dir = dot_git
    elif dot_git.is_file() and not dot_git.is_symlink():
        git_dir = _linked_git_dir(root, dot_git)
    if git_dir is not None:
        return git_dir / "pinbump"
    key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:32]
    return Path(tempfile.gettempdir()) / f"pinbump-{os.getuid()}" / key


def _small_text(path: Path) -> str:
    """The first line of a small file git writes (``.git``, ``gitdir``); "" when unreadable,
    a link, not a regular file, or larger than git would write."""
    data, _ = read_file(path, 64 * 1024)
    try:
        lines = (data or b"").decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return ""
    return lines[0].strip() if lines else ""


def _linked_git_dir(root: Path, dot_git: Path) -> Path | None:
    """The git dir a ``.git`` file names (``gitdir: PATH``), only when it is this tree's
    genuine linked-worktree git dir: a real directory of the user's, outside the tree, that
    git made for a worktree (``commondir`` and ``HEAD`` in it) and whose ``gitdir`` file
    points back at this tree's ``.git``. A ``.git`` file is the tree's own text: planted,
    it could otherwise send the lock and the journal anywhere the user may write. Anything
    else (a submodule's or ``--separate-git-dir``'s git dir included) gets None: the private
    folder keyed by the tree's real path is used instead."""
    line = _small_text(dot_git)
    if not line.startswith("gitdir:"):
        return None
    named = line.removeprefix("gitdir:").strip()
    if not named or "\0" in named:
        return None
    try:
        real_root = root.resolve(strict=True)
        candidate = (root / named).resolve(strict=True)
        st = os.lstat(candidate)
    except (OSError, RuntimeError):
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() \
            or candidate.is_relative_to(real_root):
        return None
    if not (candidate / "commondir").is_file() or not (candidate / "HEAD").is_file():
        return None
    back = _small_text(candidate / "gitdir")
    try:
        points_back = bool(back) and (candidate / back).resolve() == real_root / ".git"
    except (OSError, RuntimeError):
        return None
    return candidate if points_back else None


def _private_dir(path: Path) -> None:
    """Create ``path`` (0700); refuse one that is a link or belongs to someone else."""
    for folder in (path.parent, path):
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            raise WriteError(f"{folder}: cannot create pinbump's state folder "
                             f"({exc.strerror})") from None
        st = os.lstat(folder)
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or \
                st.st_uid != os.getuid():
            raise WriteError(f"{folder}: pinbump's state folder is a link or belongs to "
                             "another user; remove it and run again")


class TargetState:
    """The lock and the journal of one target (see the module's docstring)."""

    def __init__(self, root: Path, folder: Path) -> None:
        self.root = root
        self.folder = folder
        self.journal = folder / JOURNAL

    def pending(self) -> dict[str, Any] | None:
        """The intent of an apply that was killed before it finished, if one was."""
        try:
            data = json.loads(self.journal.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise WriteError(f"{self.journal}: unreadable journal of an interrupted apply "
                             f"({exc}); remove it and run again") from None
        if not isinstance(data, dict) or not isinstance(data.get("files"), list) or \
                not isinstance(data.get("token"), str) or \
                not re.fullmatch(r"[0-9a-f]{16}", data["token"]):  # begin()'s, never a path
            raise WriteError(f"{self.journal}: not a pinbump journal; remove it and run again")
        return data

    def begin(self, files: Sequence[str], intent: Mapping[str, Any]) -> str:
        """Record what is about to be written (after clearing what a killed run left)."""
        self.clean()
        token = secrets.token_hex(8)
        data = json.dumps({"token": token, "files": list(files), "intent": dict(intent)})
        tmp = self.folder / f"{JOURNAL}{TEMP_MARK}{token}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.journal)
        _fsync_dir(self.folder)
        return token

    def clean(self) -> list[str]:
        """Remove the temporary files a killed run named in its journal (only those), then
        the journal; returns the paths removed."""
        data = self.pending()
        removed: list[str] = []
        if data is not None:
            real_root = self.root.resolve()
            for rel in data["files"]:
                if not isinstance(rel, str) or rel.startswith("/") or ".." in rel.split("/"):
                    continue
                tmp = _temp_path(self.root / rel, data["token"])
                if not tmp.parent.resolve().is_relative_to(real_root):
                    continue  # through a link out of the tree: not a file pinbump wrote
                if os.path.lexists(tmp):
                    os.unlink(tmp)
                    removed.append(tmp.relative_to(self.root).as_posix())
        for leftover in self.folder.glob(f"{JOURNAL}{TEMP_MARK}*"):
            leftover.unlink()
        if self.journal.exists():
            self.journal.unlink()
            _fsync_dir(self.folder)
        return removed


def peek_state(root: Path) -> TargetState | None:
    """The target's state, to read a pending journal without taking the lock or creating
    anything (a dry run); None when there is none."""
    folder = state_folder(root)
    if not (folder / JOURNAL).is_file():
        return None
    return TargetState(root, folder)


@contextmanager
def target_lock(root: Path, *, timeout: float = 120.0,
                waiting: Callable[[str], None] | None = None) -> Iterator[TargetState]:
    """Hold the target's exclusive lock (fcntl.flock) for the whole compute-validate-write
    span; wait up to ``timeout`` seconds for another pinbump command to finish."""
    folder = state_folder(root)
    _private_dir(folder)
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        deadline = time.monotonic() + timeout
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise WriteError(f"{folder / LOCK}: cannot lock ({exc.strerror})") \
                        from None
            if time.monotonic() >= deadline:
                raise LockTimeout(f"{root}: another pinbump command has held the target's "
                                  f"lock ({folder / LOCK}) for {timeout:g} s; nothing was "
                                  "written. Run again when it has finished")
            if not told and waiting is not None:
                waiting(f"waiting for another pinbump command on {root} to finish")
                told = True
            time.sleep(0.02)
        yield TargetState(root, folder)
    finally:
        os.close(fd)  # releases the lock


def write_all(root: Path, new: Mapping[str, bytes], originals: Mapping[str, bytes],
              order: Sequence[str] | None = None, *, state: TargetState | None = None,
              intent: Mapping[str, Any] | None = None) -> None:
    """Replace each file in ``new``, provided it still holds ``originals[path]``. With
    ``state`` (the target's lock held), ``intent`` is journalled first so that a run killed
    half-way is finished by the next one."""
    paths = list(order or sorted(new))
    modes: dict[str, int] = {}
    for rel in paths:
        path = root / rel
        # the tree reader's own read: a file swapped for a FIFO is not waited on, one
        # swapped for a link (to a copy of its bytes) is not followed: both have changed
        current, why = read_file(path, max(MAX_BYTES, len(originals[rel])))
        try:
            if why.startswith("cannot read"):  # "cannot read (why)"
                raise OSError(why.removeprefix("cannot read (").removesuffix(")"))
            st = os.lstat(path)
        except OSError as exc:
            raise WriteError(f"{rel}: cannot read before writing ({exc.strerror or exc}); "
                             "nothing was written") from None
        if current != originals[rel]:
            raise WriteError(f"{rel}: changed on disk since it was read; nothing was written. "
                             "Run again on the current tree")
        if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or \
                not os.access(path, os.W_OK):
            raise WriteError(f"{rel}: file is read-only; nothing was written. Make it "
                             "writable or leave it out of the bump")
        modes[rel] = st.st_mode
    token = state.begin(paths, intent or {}) if state is not None else secrets.token_hex(8)
    done: list[str] = []
    for rel in paths:
        try:
            atomic_write(root / rel, new[rel], modes[rel], token=token)
        except OSError as exc:
            for back in reversed(done):
                atomic_write(root / back, originals[back], modes[back], token=token)
            if state is not None:
                state.clean()
            raise WriteError(f"{rel}: cannot write ({exc.strerror}); every file was left as "
                             "it was") from None
        done.append(rel)
    for folder in sorted({(root / rel).parent for rel in paths}):
        _fsync_dir(folder)
    if state is not None:
        state.clean()


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
