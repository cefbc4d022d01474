"""Text from the target repository (index URLs it declares, file names, symlinks) and the
index used as an attacker would: never more than one line of error, never an option, a path
out of the repository, a read through a link, or an escape sequence on the terminal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli import main
from servers import HostileIndex, hostile_index
from wheels import build_wheel


@pytest.fixture
def index(tmp_path: Path) -> Iterator[HostileIndex]:
    with hostile_index(tmp_path / "index") as srv:
        wheels = tmp_path / "wheels"
        srv.publish("kernelpkg", [build_wheel(wheels, "kernelpkg", "1.0"),
                                  build_wheel(wheels, "kernelpkg", "2.0")])
        yield srv


def target(root: Path, extra: str = "") -> Path:
    (root / "src").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "t"\nrequires-python = ">=3.10"\n'
        'dependencies = ["kernelpkg==1.0"]\n\n'
        '[tool.pinbump]\ngroup = "k"\nmin-release-age = 0\n'
        '[tool.pinbump.groups.k]\nlead = "kernelpkg"\n' + extra)
    return root


def test_a_declared_index_url_with_a_newline_stays_one_line(
        index: HostileIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A uv index URL holding a newline and a GitHub workflow command: the error is one line
    and the command never starts a line of the log."""
    repo = target(tmp_path / "repo", '[[tool.uv.index]]\nname = "x"\n'
                  'url = "https://127.0.0.1:9/s\\n::error::pwned"\n'
                  '[tool.uv.sources]\nkernelpkg = { index = "x" }\n')
    code = main(["plan", "--repo", str(repo), "--index-url", index.url, "--cache-dir",
                 str(tmp_path / "cache"), "--retries", "0"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("pinbump: error: ") and err.count("\n") == 1, err
    assert "\\n::error::pwned" in err


def test_a_file_swapped_after_it_was_looked_at_is_not_followed_or_waited_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between the tree reader's lstat and its open, requirements.txt becomes a link to a file
    outside the target and Dockerfile a FIFO with no writer: neither is read (the link is not
    followed, the FIFO does not block), both are listed as not read."""
    import os
    import threading

    from bot.adapters import tree

    repo = target(tmp_path / "repo")
    outside = tmp_path / "secret.txt"
    outside.write_text("kernelpkg==0.1  # a file outside the target\n")
    (repo / "requirements.txt").symlink_to(outside)
    os.mkfifo(repo / "Dockerfile")
    regular = os.lstat(repo / "pyproject.toml")
    real_lstat = os.lstat

    def lstat(path: object) -> os.stat_result:  # what it looked like a moment before
        name = os.path.basename(os.fspath(path))  # type: ignore[call-overload]
        return regular if name in ("requirements.txt", "Dockerfile") else real_lstat(path)

    monkeypatch.setattr(tree.os, "lstat", lstat)
    result: list[tree.Tree] = []
    reader = threading.Thread(target=lambda: result.append(tree.read_tree(repo)), daemon=True)
    reader.start()
    reader.join(10)
    if not result:
        with open(repo / "Dockerfile", "wb"):  # unblock the reader before failing
            pass
        pytest.fail("the tree reader blocked on a FIFO")
    read = result[0]
    assert "requirements.txt" not in read.raw and "Dockerfile" not in read.raw
    assert {p for p, _ in read.skipped} == {"requirements.txt", "Dockerfile"}


def test_no_escape_sequence_from_the_index_or_the_repo_reaches_the_terminal(
        index: HostileIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A yank reason that sets the window title and clears the screen, and a pin file whose
    name holds an escape sequence: plan shows both as text, with no ESC byte."""
    wheels = tmp_path / "wheels"
    doc = index.publish("kernelpkg", [build_wheel(wheels, "kernelpkg", v)
                                      for v in ("1.0", "2.0", "3.0")])
    files = doc["files"]
    assert isinstance(files, list)
    files[2]["yanked"] = "bad \x1b]0;PWNED\x1b\\ \x1b[2J\x9b2J cleared"
    index.page("kernelpkg", doc)
    repo = target(tmp_path / "repo")
    (repo / "requirements-\x1b[31mred.txt").write_text("kernelpkg==1.0\n")
    code = main(["plan", "--repo", str(repo), "--index-url", index.url, "--cache-dir",
                 str(tmp_path / "cache")])
    out = capsys.readouterr().out
    assert code == 0
    assert "\x1b" not in out and "\x9b" not in out
    assert "PWNED" in out and "red.txt" in out


def test_apply_never_writes_through_a_link_out_of_the_target(
        index: HostileIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pin file that is a link to a file outside, and a folder that is a link to a folder
    outside: apply bumps the target's own pin, leaves both outside files as they were, and
    lists the linked file and folder as not read."""
    outside = tmp_path / "outside"
    (outside / "docker").mkdir(parents=True)
    (outside / "requirements.txt").write_text("kernelpkg==1.0\n")
    (outside / "docker" / "requirements.txt").write_text("kernelpkg==1.0\n")
    before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    repo = target(tmp_path / "repo")
    (repo / "requirements.txt").symlink_to(outside / "requirements.txt")
    (repo / "docker").symlink_to(outside / "docker", target_is_directory=True)

    code = main(["apply", "--repo", str(repo), "--index-url", index.url, "--cache-dir",
                 str(tmp_path / "cache")])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert 'dependencies = ["kernelpkg==2.0"]' in (repo / "pyproject.toml").read_text()
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == before
    assert (repo / "requirements.txt").is_symlink() and (repo / "docker").is_symlink()
    assert "requirements.txt" in captured.out + captured.err
    assert "docker/: not read (a symbolic link to a folder" in captured.out + captured.err
