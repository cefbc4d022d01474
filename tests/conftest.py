from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from servers import PypiServer, StaticIndex, pypiserver, static_index


@pytest.fixture(scope="session")
def _pypiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PypiServer]:
    with pypiserver(tmp_path_factory.mktemp("pypiserver")) as server:
        yield server


@pytest.fixture
def pypi(_pypiserver: PypiServer) -> Iterator[PypiServer]:
    """The session's pypiserver, emptied for this test."""
    _pypiserver.clear()
    yield _pypiserver
    _pypiserver.clear()


@pytest.fixture
def static(tmp_path: Path) -> Iterator[StaticIndex]:
    with static_index(tmp_path / "static") as index:
        yield index


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never read or write the user's cache from a test."""
    monkeypatch.setenv("PINBUMP_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(autouse=True)
def _no_flashinfer_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Offline tests never reach https://flashinfer.ai: its indexes are off unless a test
    serves an emulation of them (then it sets PINBUMP_FLASHINFER_WHL to that server)."""
    monkeypatch.setenv("PINBUMP_FLASHINFER_WHL", "")
