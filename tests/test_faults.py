"""A failing or hanging index: bounded retries, then one clear line and exit 2."""

from __future__ import annotations

import json
import socket
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from bot.adapters.http import HttpClient
from bot.cli import main
from bot.errors import IndexError_
from servers import PypiServer, fault_server
from targets import write_target

OLD = datetime.now(timezone.utc) - timedelta(days=60)


def small_stack(pypi: PypiServer) -> None:
    for v in ("0.6.8.post1", "0.6.11"):
        pypi.add("flashinfer-python", v, uploaded=OLD)
        pypi.add("flashinfer-cubin", v, uploaded=OLD)
    pypi.add("nvidia-cutlass-dsl", "4.4.2", uploaded=OLD)
    pypi.add("quack-kernels", "0.3.0", uploaded=OLD)


def test_index_answering_500_fails_after_bounded_retries(
        pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = write_target(tmp_path / "repo")
    with fault_server(pypi.base, "fail", status=500) as srv:
        start = time.monotonic()
        code = main(["plan", "--repo", str(repo), "--index-url", srv.url, "--retries", "2",
                     "--no-cache"])
        elapsed = time.monotonic() - start
        seen = srv.seen
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"pinbump: error: {srv.url}/")
    assert "HTTP 500 after 3 attempts" in err and err.count("\n") == 1
    assert seen <= 3 * 5  # five pages at most, three attempts each
    assert elapsed < 10


def test_index_hanging_times_out(pypi: PypiServer, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    repo = write_target(tmp_path / "repo")
    with fault_server(pypi.base, "hang", hang_seconds=3) as srv:
        start = time.monotonic()
        code = main(["plan", "--repo", str(repo), "--index-url", srv.url, "--retries", "1",
                     "--timeout", "0.3", "--no-cache"])
        elapsed = time.monotonic() - start
    err = capsys.readouterr().err
    assert code == 2
    assert "timed out after 2 attempts" in err
    assert elapsed < 3


def test_502_then_success(pypi: PypiServer, tmp_path: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    small_stack(pypi)
    repo = write_target(tmp_path / "repo")
    with fault_server(pypi.base, "fail-first", status=502, failures=3) as srv:
        code = main(["plan", "--repo", str(repo), "--index-url", srv.url, "--json",
                     "--no-cache"])
    out = capsys.readouterr().out
    assert code == 0
    assert json.loads(out)["lead"]["target"] == "0.6.11"


def test_unreachable_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = write_target(tmp_path / "repo")
    code = main(["plan", "--repo", str(repo), "--index-url", "http://127.0.0.1:9/simple",
                 "--retries", "0", "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2
    assert "cannot connect" in err and "after 1 attempt;" in err


def test_retry_after_is_honoured(pypi: PypiServer) -> None:
    small_stack(pypi)
    with fault_server(pypi.base, "fail-first", status=503, failures=1, retry_after=0.5) as srv, \
            HttpClient(None, retries=1, backoff=0.0) as http:
        start = time.monotonic()
        resp = http.request("GET", f"{srv.url}/flashinfer-python/")
        assert time.monotonic() - start >= 0.5
    assert resp.status == 200


def test_credentials_in_index_url_are_redacted(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    repo = write_target(tmp_path / "repo")
    code = main(["plan", "--repo", str(repo), "--index-url",
                 "http://user:s3cr3t-token@127.0.0.1:9/simple", "--retries", "0", "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2
    assert "s3cr3t-token" not in err and "user" not in err
    assert "http://127.0.0.1:9/simple" in err



@pytest.mark.parametrize(("code", "tries"), [("EAI_NONAME", 1), ("EAI_AGAIN", 3)])
def test_a_host_name_that_does_not_resolve_is_not_asked_again(
        code: str, tries: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index host whose name does not exist fails at once (a plan does not wait out the
    backoff for an index it cannot reach); a temporary resolver failure is retried."""
    calls: list[str] = []

    def resolve(host: str, *args: object, **kwargs: object) -> list[object]:
        calls.append(host)
        raise socket.gaierror(getattr(socket, code), "resolver says no")

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    with HttpClient(None, retries=2, backoff=0.0) as http, \
            pytest.raises(IndexError_) as err:
        http.request("GET", "https://index.example/simple/flashinfer-python/")
    assert len(calls) == tries
    assert ("does not resolve" in str(err.value)) == (tries == 1)
