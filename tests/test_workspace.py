"""One command, one walk of the target's tree, one parse of its config, and each file read at
most once: plan reads only what may hold a pin (the pin files, the config, the files the
requirements include), apply and drift read the rest once, when they first search it. Counted
through the adapters while plan, apply and drift run end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.adapters.tree import Tree, read_tree
from bot.cli import main
from bot.commands.context import load_workspace
from bot.core.discovery import file_kind
from reads import count_reads
from servers import PypiServer
from test_apply import TREE, publish, write_tree
from test_drift import publish as publish_kernel
from test_drift import target_repo

PIN_FILES = {"python/pyproject.toml", "pinbump.toml"}
INCLUDED = {  # a requirements file naming, by -r, a file no name pattern would read
    "requirements/base.txt": "-r ../deps/common.lst\n",
    "deps/common.lst": "flashinfer-cubin==0.6.8.post1\n",
    "python/sglang/unrelated.py": "x = 1  # no pin, no old version\n",
}


def _repo(tmp_path: Path) -> Path:
    repo = write_tree(tmp_path / "repo", {**TREE, **INCLUDED})
    (repo / "pinbump.toml").write_text("min-release-age = 0\n")
    return repo


def _may_hold_a_pin(root: Path) -> set[str]:
    return {p for p in read_tree(root).paths if file_kind(p) or p == "pinbump.toml"}


def test_plan_reads_only_the_pin_files_the_config_and_what_they_include(
        pypi: PypiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """plan never reads a Python module (setup.py aside, a pin file): a large tree is listed,
    not read. The file named by ``-r`` is read, and its pin found."""
    publish(pypi)
    repo = _repo(tmp_path)
    pin_kinds = _may_hold_a_pin(repo)
    reads = count_reads(monkeypatch)
    assert main(["plan", "--repo", str(repo), "--index-url", pypi.url, "--json"]) == 0, \
        capsys.readouterr().err
    assert reads.walks_of(repo) == [str(repo)]
    assert reads.config_parses == 1
    per_file = reads.under(repo)
    assert set(per_file) == pin_kinds | {"deps/common.lst"}
    assert set(per_file.values()) == {1}
    assert not any(p.endswith(".py") for p in per_file)
    assert '"deps/common.lst' in capsys.readouterr().out  # its pin is planned


@pytest.mark.parametrize("command", [["apply", "--dry-run"], ["apply", "--json"]])
def test_apply_walks_once_parses_the_config_once_and_reads_each_file_once(
        command: list[str], pypi: PypiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """apply reads every file once: the pin files when the tree is listed, the rest in its
    one search (for old versions and, for the codemod, the lead's import names). A real
    apply reads an edited file once more, right before writing it, to check that nobody
    changed it meanwhile."""
    publish(pypi)
    repo = _repo(tmp_path)
    listed = set(read_tree(repo).paths)
    reads = count_reads(monkeypatch)
    assert main([*command, "--repo", str(repo), "--index-url", pypi.url]) == 0, \
        capsys.readouterr().err
    out = capsys.readouterr().out
    assert reads.walks_of(repo) == [str(repo)]
    assert reads.config_parses == 1
    per_file = reads.under(repo)
    assert set(per_file) == listed  # every file read: the search found the old versions
    again = {p for p, n in per_file.items() if n > 1}
    assert per_file.most_common(1)[0][1] <= 2
    if "--dry-run" in command:
        assert again == set()
    else:
        edited = {e["file"] for e in json.loads(out)["edits"]}
        assert "deps/common.lst" in edited and again == edited


def test_drift_walks_once_and_parses_the_config_once(
        pypi: PypiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    publish_kernel(pypi)
    repo = target_repo(tmp_path / "repo")
    (repo / "docs").mkdir()
    (repo / "docs" / "notes.md").write_text("Nothing about the package here.\n")
    reads = count_reads(monkeypatch)
    assert main(["drift", "--repo", str(repo), "--index-url", pypi.url, "--cache-dir",
                 str(tmp_path / "cache")]) == 1
    assert reads.walks_of(repo) == [str(repo)]
    assert reads.config_parses == 1  # [tool.pinbump] of the pyproject
    per_file = reads.under(repo)
    assert set(per_file) == {"pyproject.toml", "src/model.py", "docs/notes.md"}
    assert set(per_file.values()) == {1}


def test_one_search_serves_the_later_ones(tmp_path: Path) -> None:
    """The first search covers the workspace's interest (the lead's import names, every
    version its pins hold), so apply's later searches and drift's read nothing more; one
    for a needle outside it reads again the files let go (only those)."""
    repo = write_tree(tmp_path / "repo", {
        **TREE, "python/sglang/other.py": "import flashinfer\n",
        "python/sglang/plain.py": "x = 'nothing'\n", "python/sglang/blob.py": "y = 'zzz'\n"})
    ws = load_workspace(repo)
    tree = ws.source
    assert isinstance(tree, Tree)
    assert {b"flashinfer", b"0.6.8.post1", b"4.4.2"} <= ws.interest
    before = tree.reads
    assert "python/sglang/other.py" not in ws.files  # listed, not read
    olds = ws.holding([b"0.6.8.post1"], lambda p: p.endswith("Dockerfile"))
    searched = tree.reads
    assert searched - before == len(tree.paths) - before  # every file not read yet, once
    assert "python/sglang/other.py" not in olds and "docker/Dockerfile" in olds
    named = ws.holding([b"flashinfer"])
    assert {"python/sglang/other.py", "python/pyproject.toml"} <= set(named)
    assert "python/sglang/plain.py" not in ws.raw  # let go: it holds nothing asked
    assert tree.reads == searched
    let_go = len(tree.paths) - len(ws.raw)
    assert set(ws.holding([b"zzz"])) == {"python/sglang/blob.py"}  # not declared: read again
    assert tree.reads - searched == let_go


def test_an_include_that_is_not_utf8_is_reported(tmp_path: Path) -> None:
    """A file named by -r, or by the config's ``files`` globs, is read when named; one that
    is not UTF-8 reaches discovery as such (it is listed as not read, never dropped
    silently)."""
    repo = write_tree(tmp_path / "repo", {"requirements.txt": "-r extra.lst\n"})
    (repo / "extra.lst").write_bytes(b"flashinfer-python==0.6.8.post1  # caf\xe9\n")
    (repo / "pinbump.toml").write_text('files = ["deploy/*.pins"]\n')
    (repo / "deploy").mkdir()
    (repo / "deploy" / "gpu.pins").write_bytes(b"\xfe\xffquack-kernels>=0.3.0\n")
    ws = load_workspace(repo)
    assert set(ws.source.undecodable) == {"extra.lst", "deploy/gpu.pins"}
    assert "extra.lst" not in ws.raw
    assert {p for p, _ in ws.target.skipped} == {"extra.lst", "deploy/gpu.pins"}
