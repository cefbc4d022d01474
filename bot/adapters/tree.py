"""Read a target's text files once (the adapter behind apply's pure editors)."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from bot.core.discovery import SKIP_DIRS

MAX_BYTES = 2 * 1024 * 1024
DOCKERFILE_GLOBS = ("Dockerfile", "*.Dockerfile", "Dockerfile.*", "*.dockerfile")


@dataclass
class Tree:
    root: Path
    raw: dict[str, bytes]  # relative posix path -> bytes as read
    text: dict[str, str]  # the same, decoded (files that are not UTF-8 text are left out)


def read_tree(root: Path) -> Tree:
    raw: dict[str, bytes] = {}
    text: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            try:
                if path.is_symlink() or path.stat().st_size > MAX_BYTES:
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            if b"\0" in data:
                continue
            try:
                decoded = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            rel = path.relative_to(root).as_posix()
            raw[rel], text[rel] = data, decoded
    return Tree(root=root, raw=raw, text=text)


def is_dockerfile(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(name, g) for g in DOCKERFILE_GLOBS)
