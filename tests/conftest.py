from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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
def _no_github_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """GitHub calls are retried at once: the backoff between retries (0.5 s doubled each time,
    15 s over five retries) paces production, it is no behaviour a test checks; the bounded
    retries, Retry-After and the rate-limit reset are still honoured."""
    import bot.adapters.github

    monkeypatch.setattr(bot.adapters.github, "RETRY_BACKOFF", 0.0)


@pytest.fixture(autouse=True)
def _no_flashinfer_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Offline tests never reach https://flashinfer.ai: its indexes are off unless a test
    serves an emulation of them (then it sets PINBUMP_FLASHINFER_WHL to that server)."""
    monkeypatch.setenv("PINBUMP_FLASHINFER_WHL", "")


def _loopback(address: Any) -> bool:
    """Whether a socket address (or a host name) stays on this machine."""
    host = address[0] if isinstance(address, tuple) else address
    if not isinstance(host, str):
        return True  # AF_UNIX paths and the like
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False  # a name other than localhost: it would go out to a resolver


@pytest.fixture(autouse=True)
def _offline(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test not marked ``network`` that reaches past loopback fails at once (servers the
    tests start run on 127.0.0.1). Subprocesses are not watched; pip and git never go out."""
    if request.node.get_closest_marker("network"):
        return
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex
    getaddrinfo = socket.getaddrinfo

    def refuse(what: object) -> None:
        raise AssertionError(f"test {request.node.nodeid} reached the network ({what!r}); "
                             "mark it @pytest.mark.network or use a loopback server")

    def guarded_connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
            refuse(address)
        return connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
            refuse(address)
        return connect_ex(self, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, bytes):
            host = host.decode()
        if host is not None and not _loopback(host):
            refuse(host)
        return getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
