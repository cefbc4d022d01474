"""Count what a command reads of the target: tree walks, file reads and config parses.

Reads in worker processes are not counted (a search of a large tree runs in them): the
trees counted here are far below ``bot.adapters.tree.PARALLEL_FILES``."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import bot.adapters.tree
import bot.core.config


@dataclass
class Reads:
    walks: list[str] = field(default_factory=list)
    files: Counter[str] = field(default_factory=Counter)
    config_parses: int = 0

    def walks_of(self, root: Path) -> list[str]:
        """Walks of ``root`` or of a folder inside it (others: the API sources' loader)."""
        base = str(root.resolve())
        return [w for w in self.walks
                if str(Path(w).resolve()) == base or str(Path(w).resolve()).startswith(
                    base + os.sep)]

    def under(self, root: Path) -> Counter[str]:
        """Reads of files under ``root``, by relative path."""
        base = str(root.resolve())
        return Counter({os.path.relpath(p, base): n for p, n in self.files.items()
                        if p.startswith(base + os.sep)})


def count_reads(monkeypatch: pytest.MonkeyPatch) -> Reads:
    reads = Reads()
    walk, read_bytes, read_text = os.walk, Path.read_bytes, Path.read_text
    parse_config = bot.core.config.parse_config

    def counting_walk(top: Any, *args: Any, **kwargs: Any) -> Any:
        reads.walks.append(str(top))
        return walk(top, *args, **kwargs)

    def counted(real: Callable[..., Any]) -> Callable[..., Any]:
        def read(self: Path, *args: Any, **kwargs: Any) -> Any:
            reads.files[str(self.resolve())] += 1
            return real(self, *args, **kwargs)
        return read

    read_regular = bot.adapters.tree._read_regular

    def counting_regular(path: str | Path, seen: os.stat_result,
                         cap: int = bot.adapters.tree.MAX_BYTES) -> bytes | None:
        reads.files[os.path.realpath(path)] += 1  # the tree reader's own read of a file
        return read_regular(path, seen, cap)

    def counting_parse(*args: Any, **kwargs: Any) -> Any:
        reads.config_parses += 1
        return parse_config(*args, **kwargs)

    monkeypatch.setattr(os, "walk", counting_walk)
    monkeypatch.setattr(Path, "read_bytes", counted(read_bytes))
    monkeypatch.setattr(Path, "read_text", counted(read_text))
    monkeypatch.setattr(bot.core.config, "parse_config", counting_parse)
    monkeypatch.setattr(bot.adapters.tree, "_read_regular", counting_regular)
    return reads
