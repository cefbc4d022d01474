"""An apply killed at any point is finished by the next one; two applies never mix a tree
(issue 11, items 8 and 9).

Real processes against a static index on loopback: ``apply_worker.py`` forks each ``pinbump
apply`` (imports paid once) and SIGKILLs it at a chosen file-system step of the writer, or
after a random delay.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.writer import JOURNAL, state_folder, target_lock
from bot.cli import main
from bot.errors import LockTimeout, WriteError
from servers import PypiServer, StaticIndex
from test_apply import OLD, TREE, publish, write_tree

WORKER = Path(__file__).with_name("apply_worker.py")
KILLS = 50
RACES = 8


class Worker:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc

    def run(self, *applies: dict[str, Any]) -> list[int]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"applies": list(applies)}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the worker died"
        return list(json.loads(line)["status"])


@pytest.fixture
def worker() -> Iterator[Worker]:
    proc = subprocess.Popen([sys.executable, str(WORKER)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ,
                                 "PYTHONPATH": str(Path(__file__).parent.parent)})
    try:
        yield Worker(proc)
    finally:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()


def files_of(root: Path) -> dict[str, bytes]:
    """Every file under ``root``, hidden ones included (a stray temp file shows here)."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def publish_static(static: StaticIndex) -> None:
    """The stack of test_apply, plus 0.6.12 of the lockstep pair uploaded a day ago:
    ``--min-release-age 3`` picks 0.6.11, ``--min-release-age 0`` picks 0.6.12. (The static
    pages carry no upload time: the wheels' Last-Modified, their mtime, says it.)"""
    fresh = datetime.now(timezone.utc) - timedelta(days=1)
    wheels = []
    for v, when in (("0.6.8.post1", OLD), ("0.6.11", OLD), ("0.6.12", fresh)):
        requires = ["nvidia-cutlass-dsl>=4.5"] if v != "0.6.8.post1" else []
        wheels += [(static.add("flashinfer-python", v, requires=requires, extras=["cu13"]),
                    when), (static.add("flashinfer-cubin", v), when)]
    wheels += [(static.add("nvidia-cutlass-dsl", v), OLD) for v in ("4.4.2", "4.5.0")]
    wheels.append((static.add("quack-kernels", "0.3.0"), OLD))
    for path, when in wheels:
        os.utime(path, (when.timestamp(), when.timestamp()))
    static.publish()


def test_kill_loop_every_rerun_finishes_the_bump(static: StaticIndex, tmp_path: Path,
                                                 worker: Worker) -> None:
    publish_static(static)
    rng = random.Random(11)
    args = ["--index-url", static.url, "--min-release-age", "3"]
    warm = write_tree(tmp_path / "warm")  # fills the index cache: later runs write no cache
    assert worker.run({"args": ["--repo", str(warm), *args]}) == [0]
    reference = write_tree(tmp_path / "reference")
    count = tmp_path / "steps"
    assert worker.run({"args": ["--repo", str(reference), *args], "count": str(count)}) == [0]
    expected = files_of(reference)
    assert b"0.6.8.post1" not in expected["python/sglang/srt/entrypoints/engine.py"]
    steps = int(count.read_text())
    assert steps > 20  # lock, journal, five files written, journal removed
    killed_while_writing = 0
    for batch in range(0, KILLS, 2):  # two targets at a time: one per core
        runs = []
        for i in (batch, batch + 1):
            repo, log = write_tree(tmp_path / f"repo{i}"), tmp_path / f"log{i}"
            if i % 5 == 4:  # a random moment (mostly while planning)
                kill: dict[str, Any] = {"kill_after_ms": rng.uniform(0, 150)}
            else:  # a random step of the writer
                kill = {"kill_at": rng.randint(1, steps)}
            runs.append((i, repo, log, kill))
        status = worker.run(*({"args": ["--repo", str(repo), *args], "log": str(log), **kill}
                              for _, repo, log, kill in runs))
        for (i, _, log, kill), code in zip(runs, status, strict=True):
            assert code in (-9, 0), (i, code, log.read_text())
            killed_while_writing += code == -9 and "kill_at" in kill
        status = worker.run(*({"args": ["--repo", str(repo), *args], "log": str(log)}
                              for _, repo, log, _ in runs))
        for (i, repo, log, kill), code in zip(runs, status, strict=True):
            assert code == 0, (i, log.read_text())
            assert files_of(repo) == expected, (i, kill, log.read_text())
            assert not (state_folder(repo) / JOURNAL).exists()
    assert killed_while_writing >= KILLS // 2


def test_concurrent_applies_never_mix_a_tree(static: StaticIndex, tmp_path: Path,
                                             worker: Worker) -> None:
    publish_static(static)
    older = ["--index-url", static.url, "--min-release-age", "3"]
    newer = ["--index-url", static.url, "--min-release-age", "0"]
    references = {}
    for name, args in (("older", older), ("newer", newer)):
        root = write_tree(tmp_path / name)
        assert worker.run({"args": ["--repo", str(root), *args]}) == [0]
        references[name] = files_of(root)
    assert b'"0.6.11"' in references["older"]["python/sglang/srt/entrypoints/engine.py"]
    assert b'"0.6.12"' in references["newer"]["python/sglang/srt/entrypoints/engine.py"]
    for i in range(RACES):
        repo = write_tree(tmp_path / f"race{i}")
        logs = [tmp_path / f"race{i}-a", tmp_path / f"race{i}-b"]
        status = worker.run(
            {"args": ["--repo", str(repo), *older], "pause_ms": 4, "log": str(logs[0])},
            {"args": ["--repo", str(repo), *newer], "pause_ms": 4, "log": str(logs[1])})
        assert status == [0, 0], [p.read_text() for p in logs]
        # whichever ran first, the newer target ends up everywhere: never a mix
        assert files_of(repo) == references["newer"], (i, [p.read_text() for p in logs])


def test_rerun_reports_a_partly_bumped_tree(pypi: PypiServer, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Without a journal (a bump half made by hand), the pins still behind are completed and
    the tree's state is said; a journal finishes assertions and docs too."""

    publish(pypi)
    files = dict(TREE)
    files["python/pyproject.toml"] = files["python/pyproject.toml"].replace(
        "0.6.8.post1", "0.6.11").replace("4.4.2", "4.5.0")
    repo = write_tree(tmp_path / "repo", files)
    assert main(["apply", "--repo", str(repo), "--index-url", pypi.url]) == 0
    out = capsys.readouterr().out
    note = next(line for line in out.splitlines() if "partly bumped" in line)
    assert note.startswith("  note: the tree was partly bumped: flashinfer-python is at 0.6.11 "
                           "in some files but older in ")
    assert "python/pyproject_other.toml:6, python/pyproject_other.toml:9" in note
    assert b"0.6.8.post1" not in (repo / "python/sglang/srt/entrypoints/engine.py").read_bytes()


def test_lock_and_journal_live_outside_the_tree(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert not state_folder(plain).is_relative_to(plain)
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    assert state_folder(checkout) == checkout / ".git" / "pinbump"
    fake = tmp_path / "fake"  # a .git file naming another checkout's .git: not followed
    fake.mkdir()
    (fake / ".git").write_text(f"gitdir: {checkout / '.git'}\n")
    assert state_folder(fake).parent.name == f"pinbump-{os.getuid()}"
    assert not state_folder(fake).is_relative_to(checkout)
    with target_lock(checkout) as state:
        assert state.pending() is None
        with pytest.raises(LockTimeout, match="another pinbump command has held the target's "
                                              "lock"), target_lock(checkout, timeout=0.1):
            pass
    assert sorted(p.name for p in checkout.iterdir()) == [".git"]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=dev", "-c", "user.email=dev@example.invalid",
                           *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.mark.parametrize("named", ["plain folder", "other worktree", "relative", "inside"])
def test_a_planted_dot_git_file_redirects_nothing(pypi: PypiServer, tmp_path: Path,
                                                  named: str) -> None:
    """A target's ``.git`` is its own text: a file naming a folder of the user's elsewhere (a
    plain one, or another worktree's git dir, which points at another tree) or one inside the
    tree (shaped like a worktree's git dir that points back) gets neither the lock nor the
    journal; apply still works, from the private folder keyed by the tree's real path."""
    publish(pypi)
    repo = write_tree(tmp_path / "repo")
    elsewhere = repo / "vendor" / "gitdir" if named == "inside" else tmp_path / "elsewhere"
    elsewhere.mkdir(parents=True)
    if named != "plain folder":
        back = repo / ".git" if named == "inside" else tmp_path / "other" / ".git"
        for name, text in (("HEAD", "ref: refs/heads/main\n"), ("commondir", "..\n"),
                           ("gitdir", f"{back}\n")):
            (elsewhere / name).write_text(text)
    target = os.path.relpath(elsewhere, repo) if named == "relative" else str(elsewhere)
    (repo / ".git").write_text(f"gitdir: {target}\n")
    before = sorted(p.name for p in elsewhere.iterdir())
    folder = state_folder(repo)
    assert not folder.is_relative_to(elsewhere) and not folder.is_relative_to(repo)
    assert main(["apply", "--repo", str(repo), "--index-url", pypi.url]) == 0
    assert b"0.6.11" in (repo / "python/pyproject.toml").read_bytes()
    assert sorted(p.name for p in elsewhere.iterdir()) == before  # nothing written there
    assert (folder / "apply.lock").exists()


def test_a_genuine_git_worktree_keeps_its_state_in_its_git_dir(pypi: PypiServer,
                                                               tmp_path: Path) -> None:
    """``git worktree add``: the ``.git`` file names the worktree's own git dir, which points
    back at it; the lock and journal live there (per worktree), outside both trees."""
    publish(pypi)
    main_tree = write_tree(tmp_path / "main")
    _git(main_tree, "init", "--quiet", "-b", "main")
    _git(main_tree, "add", "-A")
    _git(main_tree, "commit", "--quiet", "-m", "init")
    wt = tmp_path / "wt"
    _git(main_tree, "worktree", "add", "--quiet", str(wt), "-b", "bump")
    git_dir = Path(_git(wt, "rev-parse", "--absolute-git-dir")).resolve()
    assert git_dir.is_relative_to((main_tree / ".git").resolve()) and git_dir.name == "wt"
    assert state_folder(wt) == git_dir / "pinbump"
    assert main(["apply", "--repo", str(wt), "--index-url", pypi.url]) == 0
    assert b"0.6.11" in (wt / "python/pyproject.toml").read_bytes()
    assert (git_dir / "pinbump" / "apply.lock").exists()
    assert not (main_tree / ".git" / "pinbump").exists()
    changed = _git(wt, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert changed and not any(line.startswith("??") for line in changed)  # nothing new


def test_a_foreign_state_folder_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / ".git" / "pinbump").symlink_to(elsewhere)
    with pytest.raises(WriteError, match="is a link or belongs to another user"), \
            target_lock(repo):
        pass
    assert list(elsewhere.iterdir()) == []


def test_a_journal_is_finished_and_a_dry_run_previews_it(pypi: PypiServer, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    """Every pin already moved, the assertion and the docstring not yet (a run killed after
    its third file): the plan alone sees nothing to do; the journal says what was meant."""
    from bot.cli import main
    from bot.core.edits import Bump, bumps_to_intent

    publish(pypi)
    files = dict(TREE)
    for rel in ("python/pyproject.toml", "python/pyproject_other.toml", "docker/Dockerfile"):
        files[rel] = files[rel].replace("0.6.8.post1", "0.6.11").replace("4.4.2", "4.5.0")
    repo = write_tree(tmp_path / "repo", files)
    meant = [Bump(p, frozenset({"0.6.8.post1"}), "0.6.11")
             for p in ("flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache")]
    with target_lock(repo) as state:
        token = state.begin(["python/sglang/srt/entrypoints/engine.py"], bumps_to_intent(meant))
    stray = repo / "python/sglang/srt/entrypoints" / f".engine.py.pinbump-{token}"
    stray.write_text("half written")
    foreign = repo / "python/sglang/srt/entrypoints" / ".engine.py.pinbump-someone-else"
    foreign.write_text("not ours")
    before = files_of(repo)

    assert main(["apply", "--repo", str(repo), "--index-url", pypi.url, "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert '+            "0.6.11",' in out and 'e.g., "0.6.11"' in out
    assert "note: finishing an apply that was interrupted" in err
    assert files_of(repo) == before and (state_folder(repo) / JOURNAL).exists()

    assert main(["apply", "--repo", str(repo), "--index-url", pypi.url]) == 0
    assert "finishing an apply that was interrupted" in capsys.readouterr().out
    assert b"0.6.8.post1" not in (repo / "python/sglang/srt/entrypoints/engine.py").read_bytes()
    assert b"0.6.8.post1" not in (repo / "python/sglang/srt/utils/common.py").read_bytes()
    assert not stray.exists() and foreign.exists()  # only the killed run's own temp file
    assert not (state_folder(repo) / JOURNAL).exists()
    assert main(["apply", "--repo", str(repo), "--index-url", pypi.url]) == 0
    assert capsys.readouterr().out.startswith("pinbump apply: no change")


# -- red team: a journal the tree shipped, FIFOs where git's files are -----------------------
def test_a_planted_journal_deletes_nothing_outside_its_temporary_files(tmp_path: Path) -> None:
    """A tree that comes with its own ``.git/`` (an archive) may carry a journal: its token is
    not a path (``x/../../victim`` through a folder the tree ships) and a file it names behind
    a link out of the tree is not followed; such a journal is refused, nothing is removed."""
    repo = tmp_path / "repo"
    (repo / ".git" / "pinbump").mkdir(parents=True)
    (repo / ".a.pinbump-x").mkdir()  # makes .../.a.pinbump-x/../../victim resolve
    victim = tmp_path / "victim"
    victim.write_text("the user's file")
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "link").symlink_to(outside)
    token = "0123456789abcdef"
    kept = outside / f".b{'.pinbump-'}{token}"
    kept.write_text("not pinbump's")
    journal = repo / ".git" / "pinbump" / JOURNAL
    for planted in ({"token": "x/../../victim", "files": ["a"], "intent": {}},
                    {"token": token, "files": ["link/b"], "intent": {}}):
        journal.write_text(json.dumps(planted))
        with target_lock(repo) as state:
            try:
                state.clean()
            except WriteError as exc:
                assert "not a pinbump journal" in str(exc)
    assert victim.read_text() == "the user's file"
    assert kept.read_text() == "not pinbump's"


@pytest.mark.parametrize("where", ["dot git", "gitdir target", "back file"])
def test_a_fifo_in_place_of_gits_files_blocks_nothing(tmp_path: Path, where: str) -> None:
    """A FIFO as ``.git``, as the git dir a ``.git`` file names, or as that dir's ``gitdir``
    file: never opened for reading (it would block), the private folder is used."""
    repo = tmp_path / "repo"
    repo.mkdir()
    gitdir = tmp_path / "gitdir"
    if where == "dot git":
        os.mkfifo(repo / ".git")
    elif where == "gitdir target":
        os.mkfifo(gitdir)
        (repo / ".git").write_text(f"gitdir: {gitdir}\n")
    else:
        gitdir.mkdir()
        for name in ("HEAD", "commondir"):
            (gitdir / name).write_text("x\n")
        os.mkfifo(gitdir / "gitdir")
        (repo / ".git").write_text(f"gitdir: {gitdir}\n")
    folder = state_folder(repo)
    assert folder.parent.name == f"pinbump-{os.getuid()}"
    with target_lock(repo) as state:
        assert state.pending() is None
