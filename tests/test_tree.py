"""The one tree reader: regular files only, text held once as bytes."""

from __future__ import annotations

import os
from pathlib import Path

from bot.adapters.tree import read_tree


def test_only_regular_text_files_are_read(tmp_path: Path) -> None:
    """A FIFO (reading it would block), a link and a binary file are passed over; text is
    held once, as bytes, and decoded when looked at."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("import flashinfer\n")
    (tmp_path / "src" / "b.bin").write_bytes(b"\0\1\2")
    os.mkfifo(tmp_path / "src" / "pipe")
    (tmp_path / "src" / "link.py").symlink_to(tmp_path / "src" / "a.py")
    (tmp_path / "requirements.txt").symlink_to(tmp_path / "src" / "a.py")
    tree = read_tree(tmp_path)
    assert list(tree.raw) == ["src/a.py"]
    assert tree.text["src/a.py"] == "import flashinfer\n"
    assert tree.undecodable == {"src/b.bin": "contains NUL bytes"}
    assert tree.skipped == [("requirements.txt", "a symbolic link (not followed)")]
