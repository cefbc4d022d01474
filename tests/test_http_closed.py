"""After HttpClient.close(), every request fails with pinbump's error and builds nothing."""

from __future__ import annotations

import http.server
from typing import ClassVar

import pytest

from bot.adapters.http import HttpClient
from bot.errors import IndexError_
from servers import QuietServer, serve


class _Counting(http.server.BaseHTTPRequestHandler):
    asked: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.asked.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("used_before", [False, True])
def test_no_request_after_close(used_before: bool) -> None:
    server = QuietServer(("127.0.0.1", 0), _Counting)
    serve(server)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    _Counting.asked = []
    client = HttpClient(retries=0)
    try:
        if used_before:
            assert client.request("GET", f"{url}/before").status == 200
        client.close()
        with pytest.raises(IndexError_, match=r"/late: not asked \(the command has ended\)$"):
            client.request("GET", f"{url}/late")  # e.g. a background guess starting late
        assert (client._made is None) is not used_before  # no new httpx client was built
        assert _Counting.asked == ["/before"] * used_before
    finally:
        client.close()
        server.shutdown()
        server.server_close()
