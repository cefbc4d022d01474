"""The one on-disk cache: one folder (``--cache-dir``, ``$PINBUMP_CACHE_DIR`` or
``~/.cache/pinbump``), one key scheme, written only through the atomic writer.

An entry is ``<root>/<kind>/<key[:2]>/<key>``; the key is the sha256 of its parts (URLs with
any user:password or token removed first, so a credential is never part of a key and two
spellings of one URL with different credentials share the entry). Kinds: ``http`` (index
pages, with a ``.json`` of their validators), ``metadata`` and ``upload-time`` (per wheel),
``src`` (a version's sources, a folder), ``api`` (a version's condensed API and griffe's
breakages between two versions), ``scan`` (drift's call sites per file, by content hash).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from bot.adapters.writer import atomic_write


def default_cache_dir() -> Path:
    """$PINBUMP_CACHE_DIR, else $XDG_CACHE_HOME/pinbump, else ~/.cache/pinbump."""
    if os.environ.get("PINBUMP_CACHE_DIR"):
        return Path(os.environ["PINBUMP_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pinbump"


_USERINFO = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/@\s]+@", re.IGNORECASE)


def cache_key(*parts: str | None) -> str:
    """The key of an entry: sha256 over its parts, any user:password@ of a URL removed."""
    text = "\n".join(_USERINFO.sub(r"\g<scheme>", part or "") for part in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Cache:
    root: Path

    def path(self, kind: str, *parts: str | None) -> Path:
        key = cache_key(*parts)
        return self.root / kind / key[:2] / key

    def read(self, path: Path) -> bytes | None:
        """An entry's bytes, or None when it is not there (or cannot be read)."""
        try:
            return path.read_bytes()
        except OSError:
            return None

    def write(self, path: Path, data: bytes) -> None:
        atomic_write(path, data, make_parents=True)
