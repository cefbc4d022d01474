"""Progress on stderr: on a terminal, what a slow step has done so far ("parsed 3/7 files",
"read 1,000 files"); on anything else (a pipe, a file, CI's log) not one byte besides the
result."""

from __future__ import annotations

import json
import os
import pty
import select
import sys
import time
from pathlib import Path

import pytest

import bot.adapters.tree
from bot.adapters.scancache import scanning
from bot.adapters.tree import read_tree
from bot.cli import main, progress
from bot.core.drift import CallSite, scan_source
from drift_fixture import TARGET
from servers import PypiServer
from test_drift import publish, target_repo


@pytest.mark.parametrize("parallel", [False, True])  # read here; in worker processes
def test_the_tree_counts_the_files_it_listed_then_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parallel: bool) -> None:
    for i in range(1234):
        (tmp_path / f"m{i}.py").write_text("x = 1\n")
    counts: list[int] = []
    tree = read_tree(tmp_path, counts.append)
    assert counts == [500, 1000] and len(tree.paths) == 1234 and not tree.raw
    monkeypatch.setattr(bot.adapters.tree, "PARALLEL_FILES", 1 if parallel else 10**9)
    read: list[int] = []
    tree.search(frozenset({b"x = 1"}), read.append)
    assert len(tree.raw) == 1234
    if parallel:  # a count as each worker's shard comes back
        assert read == sorted(read) and read[-1] == 1234
    else:
        assert read == [500, 1000]


@pytest.mark.parametrize("min_parallel", [1_000, 1])  # in this process; in worker processes
def test_scanning_counts_the_files_parsed(tmp_path: Path, min_parallel: int) -> None:
    files = {f"f{i}.py": TARGET for i in range(7)}
    counts: list[tuple[int, int]] = []
    with scanning(files, scan_source, CallSite, args=({"kernelpkg"},), cache=None,
                  min_parallel=min_parallel, counted=lambda d, t: counts.append((d, t))) \
            as scanned:
        found = scanned()
    assert len(found) == 7 and all(found.values())
    assert counts[-1] == (7, 7) and [d for d, _ in counts] == sorted(d for d, _ in counts)
    if min_parallel > 7:
        assert counts == [(i, 7) for i in range(1, 8)]


def test_on_a_terminal_the_count_is_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w", closefd=True) as tty:
        monkeypatch.setattr(sys, "stderr", tty)
        with progress("finding the calls of kernelpkg") as say:
            say("parsed 3/7 files")
            time.sleep(0.4)  # rich redraws the status line about 12 times a second
        tty.flush()
    seen = b""
    while select.select([leader], [], [], 0.2)[0]:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert b"finding the calls of kernelpkg: parsed 3/7 files" in seen


def test_off_a_terminal_nothing_but_the_result(
        pypi: PypiServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Plan and drift with stdout and stderr captured (not terminals): stderr stays empty
    and stdout holds only the JSON result."""
    publish(pypi)
    repo = target_repo(tmp_path / "repo")
    url = pypi.url
    for argv in (["plan", "--repo", str(repo), "--index-url", url, "--json"],
                 ["drift", "--repo", str(repo), "--index-url", url, "--json",
                  "--from", "1.0", "--to", "2.0"]):
        main(argv)
        out, err = capfd.readouterr()
        assert err == ""
        json.loads(out)
