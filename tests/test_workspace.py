"""One command, one walk of the target's tree and one parse of its config: counted through
the adapters while plan, apply and drift run end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main
from reads import count_reads
from servers import PypiServer
from test_apply import publish, write_tree
from test_drift import publish as publish_kernel
from test_drift import target_repo

PIN_FILES = {"python/pyproject.toml", "pinbump.toml"}


@pytest.mark.parametrize("command", [["plan"], ["apply", "--dry-run"], ["apply", "--json"]])
def test_plan_and_apply_walk_once_and_parse_the_config_once(
        command: list[str], pypi: PypiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    repo = write_tree(tmp_path / "repo")
    (repo / "pinbump.toml").write_text("min-release-age = 0\n")
    reads = count_reads(monkeypatch)
    assert main([*command, "--repo", str(repo), "--index-url", pypi.url]) == 0, \
        capsys.readouterr().err
    assert reads.walks_of(repo) == [str(repo)]
    assert reads.config_parses == 1
    per_file = reads.under(repo)
    assert set(per_file) >= PIN_FILES
    # every file is read once; a real apply reads an edited file once more, right before
    # writing it, to check that nobody changed it meanwhile
    again = {p for p, n in per_file.items() if n > 1}
    assert per_file.most_common(1)[0][1] <= 2
    if "--json" not in command:
        assert again == set()


def test_drift_walks_once_and_parses_the_config_once(
        pypi: PypiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    publish_kernel(pypi)
    repo = target_repo(tmp_path / "repo")
    reads = count_reads(monkeypatch)
    assert main(["drift", "--repo", str(repo), "--index-url", pypi.url, "--cache-dir",
                 str(tmp_path / "cache")]) == 1
    assert reads.walks_of(repo) == [str(repo)]
    assert reads.config_parses == 1  # [tool.pinbump] of the pyproject
    assert set(reads.under(repo).values()) == {1}
