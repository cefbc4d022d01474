"""The suite is offline unless a test is marked ``network``: reaching past loopback fails."""

from __future__ import annotations

import socket

import httpx
import pytest


@pytest.mark.parametrize("address", [("192.0.2.1", 443), ("2001:db8::1", 443, 0, 0)])
def test_an_unmarked_test_cannot_connect_out(address: tuple[object, ...]) -> None:
    family = socket.AF_INET6 if ":" in str(address[0]) else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock, \
            pytest.raises(AssertionError, match="reached the network"):
        sock.connect(address)


def test_an_unmarked_test_cannot_resolve_a_name() -> None:
    with pytest.raises(AssertionError, match="reached the network"):
        httpx.get("https://pypi.org/simple/", timeout=1)


def test_loopback_is_allowed() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5):
            pass
