"""The one tree reader: regular files only, text held once as bytes."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

import bot.adapters.tree as tree_module
from bot.adapters.tree import MAX_BYTES, Tree, read_tree


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
    assert sorted(tree.paths) == ["src/a.py", "src/b.bin"]  # listed, not read: no pin file
    assert tree.raw == {} and tree.reads == 0
    tree.search(frozenset({b"flashinfer"}))
    assert list(tree.raw) == ["src/a.py"]
    assert tree.text["src/a.py"] == "import flashinfer\n"
    assert tree.undecodable == {"src/b.bin": "contains NUL bytes"}
    assert tree.skipped == [("requirements.txt", "a symbolic link (not followed)")]


def _hostile(root: Path) -> None:
    """Files a search meets: text with and without the needle, binary, not UTF-8, a pin file
    and a module over the size cap, and three files changed after the listing (below)."""
    (root / "src").mkdir(parents=True)
    for i in range(40):
        (root / "src" / f"m{i}.py").write_text("import flashinfer\n" if i % 3 == 0 else
                                               f"x = {i}\n" * (i + 1))
    (root / "src" / "c.bin").write_bytes(b"\0flashinfer")
    (root / "src" / "d.py").write_bytes(b"import flashinfer  # caf\xe9\n")
    (root / "src" / "big.py").write_bytes(b"# flashinfer\n" + b"x" * MAX_BYTES)
    (root / "requirements.txt").write_bytes(b"flashinfer-python==1\n" + b"#" * MAX_BYTES)
    for name in ("e.py", "f.py", "g.py"):
        (root / "src" / name).write_text("import flashinfer\n")


def _change_after_listing(root: Path, outside: Path) -> None:
    """e.py becomes a link to a file outside, f.py a FIFO with no writer, g.py grows past
    the cap: none is read, and nothing blocks."""
    outside.write_text("import flashinfer  # outside the target\n")
    (root / "src" / "e.py").unlink()
    (root / "src" / "e.py").symlink_to(outside)
    (root / "src" / "f.py").unlink()
    os.mkfifo(root / "src" / "f.py")
    (root / "src" / "g.py").write_bytes(b"import flashinfer\n" + b"#" * MAX_BYTES)


def _searched(tree: Tree, parallel: bool, monkeypatch: pytest.MonkeyPatch) -> Tree:
    monkeypatch.setattr(tree_module, "PARALLEL_FILES", 1 if parallel else 10**9)
    monkeypatch.setattr(tree_module, "PARALLEL_BYTES", 1 if parallel else 10**12)
    done: list[int] = []
    searcher = threading.Thread(target=lambda: (
        tree.search(frozenset({b"flashinfer", b"flashinfer_python"})),
        done.append(1)), daemon=True)
    searcher.start()
    searcher.join(30)
    if not done:
        with open(tree.root / "src" / "f.py", "wb"):  # unblock the reader before failing
            pass
        pytest.fail("the search blocked on a FIFO")
    return tree


def test_a_search_in_worker_processes_finds_what_one_in_this_process_finds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same held files (bytes), the same reasons for the others, each file read once;
    a file changed into a link, a FIFO or something over the cap after the listing is not
    read, in this process or in a worker."""
    root = tmp_path / "repo"
    _hostile(root)
    here, workers = read_tree(root), read_tree(root)
    assert "src/big.py" not in here.paths  # over the cap: never listed, never read
    assert here.skipped == [("requirements.txt", f"over 2 MB ({MAX_BYTES + 21} bytes)")]
    _change_after_listing(root, tmp_path / "secret.py")
    _searched(here, False, monkeypatch)
    _searched(workers, True, monkeypatch)
    for tree in (here, workers):
        assert set(tree.raw) == {f"src/m{i}.py" for i in range(0, 40, 3)}
        assert tree.raw["src/m0.py"] == b"import flashinfer\n"
        assert tree.undecodable == {"src/c.bin": "contains NUL bytes",
                                    "src/d.py": "invalid continuation byte"}
        assert tree.not_read == {
            "src/e.py": "a symbolic link (not followed)", "src/f.py": "",
            "src/g.py": f"over 2 MB ({MAX_BYTES + 18} bytes)"}
        assert tree.reads == len(tree.paths)
    assert here.raw == workers.raw and here.skipped == workers.skipped


def _dies_on_shard_with_m0(root: str, shard: list[str], needles: tuple[bytes, ...]
                           ) -> list[tuple[str, object]]:
    """A worker killed while reading its shard (the OOM killer, a signal)."""
    if "src/m0.py" in shard and os.getpid() != _TEST_PROCESS:
        os._exit(9)
    return _real_search_shard(root, shard, needles)


_real_search_shard = tree_module._search_shard
_TEST_PROCESS = os.getpid()  # the workers are forked from it


def test_a_worker_killed_during_a_search_loses_no_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search worker that dies mid-search (killed) does not end the command with a
    traceback, and loses nothing: what it had to read is read here, each file once."""
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    for i in range(30):
        (root / "src" / f"m{i}.py").write_text("import flashinfer\n" if i % 2 == 0 else
                                               f"x = {i}\n")
    import bot.adapters.scancache

    monkeypatch.setattr(bot.adapters.scancache, "workers_for", lambda todo, least: 2)
    monkeypatch.setattr(tree_module, "_search_shard", _dies_on_shard_with_m0)
    monkeypatch.setattr(tree_module, "PARALLEL_FILES", 1)
    tree = read_tree(root)
    tree.search(frozenset({b"flashinfer"}))
    assert set(tree.raw) == {f"src/m{i}.py" for i in range(0, 30, 2)}
    assert tree.reads == len(tree.paths) == 30
    assert not tree.not_read and not tree.undecodable


def test_peeking_at_an_unread_pin_file_neither_waits_on_a_fifo_nor_follows_a_link(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """apply's best-effort look at pin files it could not read: one swapped for a FIFO (or a
    link) right after it was looked at is passed over, never waited on or followed."""
    from bot.adapters.tree import peek_unread

    os.mkfifo(tmp_path / "requirements.txt")
    (tmp_path / "secret.txt").write_text("flashinfer-python==0.6.8\n")
    (tmp_path / "constraints.txt").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "requirements-big.txt").write_bytes(b"flashinfer-python==0.6.8\0\n")
    monkeypatch.setattr(Path, "is_file", lambda self: True)  # checked before the swap
    monkeypatch.setattr(Path, "is_symlink", lambda self: False)
    done: list[dict[str, str]] = []
    peeker = threading.Thread(target=lambda: done.append(peek_unread(
        tmp_path, ["requirements.txt", "constraints.txt", "requirements-big.txt"])),
        daemon=True)
    peeker.start()
    peeker.join(10)
    if not done:
        with open(tmp_path / "requirements.txt", "wb"):  # unblock the reader before failing
            pass
        pytest.fail("peek_unread blocked on a FIFO")
    assert done == [{"requirements-big.txt": "flashinfer-python==0.6.8 \n"}]


NAMES = {"flashinfer-python", "flashinfer-cubin"}


def test_a_linked_include_is_listed_as_a_link_once_not_as_missing(tmp_path: Path) -> None:
    """A -r file that is a link is listed as not read with the reader's reason, once: not
    also as "not found" (a pin file's name or any other), and nothing behind it is read."""
    from bot.adapters.tree import discover

    (tmp_path / "elsewhere.txt").write_text("flashinfer-python==0.6.8\n")
    (tmp_path / "requirements.txt").write_text("-r base.lst\n-r requirements-extra.txt\n"
                                               "-r gone.txt\n")
    (tmp_path / "base.lst").symlink_to(tmp_path / "elsewhere.txt")
    (tmp_path / "requirements-extra.txt").symlink_to(tmp_path / "elsewhere.txt")
    target = discover(tmp_path, NAMES)
    assert target.pins == ()
    link = "a symbolic link (not followed)"
    assert list(target.skipped) == [("base.lst", link), ("gone.txt",
                                                         "named by -r/-c but not found"),
                                    ("requirements-extra.txt", link)]


def test_a_name_with_a_line_break_is_not_read_and_is_listed_escaped(tmp_path: Path) -> None:
    """A hostile tree's file named ``requirements-a\\nb.txt`` could put a line of its own
    into plan's output: it is not read, and it is listed with the break escaped; a name that
    reorders text (U+202E) likewise. A non-ASCII name is an ordinary name."""
    from bot.adapters.tree import ODD_NAME, discover

    (tmp_path / "requirements-a\nb.txt").write_text("flashinfer-python==0.6.8\n")
    (tmp_path / "requirements-\u202etxt.txt").write_text("flashinfer-python==0.6.8\n")
    (tmp_path / "requirements-é.txt").write_text("flashinfer-cubin==0.6.8\n")
    target = discover(tmp_path, NAMES)
    assert [(p.package, p.file) for p in target.pins] == [("flashinfer-cubin",
                                                           "requirements-é.txt")]
    assert list(target.skipped) == [("requirements-\\u202etxt.txt", ODD_NAME),
                                    ("requirements-a\\nb.txt", ODD_NAME)]


def test_a_config_that_is_a_link_is_listed_as_not_read(tmp_path: Path) -> None:
    """pinbump.toml as a link is not followed, and not ignored silently either."""
    from bot.adapters.tree import discover

    (tmp_path / "policy.toml").write_text("min-release-age = 0\n")
    (tmp_path / "pinbump.toml").symlink_to(tmp_path / "policy.toml")
    tree = read_tree(tmp_path)
    assert "pinbump.toml" not in tree.raw
    assert tree.skipped == [("pinbump.toml", "a symbolic link (not followed)")]
    assert discover(tmp_path, NAMES).skipped == (("pinbump.toml",
                                                  "a symbolic link (not followed)"),)
