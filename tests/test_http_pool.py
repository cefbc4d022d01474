"""A wait for a free connection in the pool never counts against the host: it neither
shortens the time a request has to connect nor finds a merely busy host unreachable."""

from __future__ import annotations

import socket
import threading
import time

from bot.adapters.http import HttpClient

MAX_CONNECTIONS = 24  # HttpClient's pool size: that many answers held fill it
TIMEOUT = 2.0
POOL_WAIT = 1.4  # leaves the old deadline 0.6 s to connect: less than one SYN retry (1 s)


class _BusyServer:
    """Loopback HTTP/1.1 that holds the first MAX_CONNECTIONS answers until ``release``,
    then, busy, takes no new connection (its accept queue full: the kernel drops the SYN and
    the client sends it again 1 s later) until ``resume``. Every answer closes its
    connection, so a request that waited in the pool must connect anew."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held = threading.Semaphore(0)
        self.release = threading.Event()
        self.resume = threading.Event()
        self.paths: list[str] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        for _ in range(MAX_CONNECTIONS):
            conn, _ = self.sock.accept()
            threading.Thread(target=self._answer, args=(conn, True), daemon=True).start()
        self.resume.wait(30)
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn, False), daemon=True).start()

    def _answer(self, conn: socket.socket, hold: bool) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                piece = conn.recv(4096)
                if not piece:
                    return  # the filler of the accept queue
                data += piece
            self.paths.append(data.split(b" ")[1].decode())
            if hold:
                self.held.release()
                self.release.wait(30)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")


def test_pool_wait_does_not_find_a_busy_host_unreachable() -> None:
    server = _BusyServer()
    client = HttpClient(timeout=TIMEOUT, retries=0)  # one try: it alone decides "unreachable"
    filler = socket.socket()
    try:
        holders = [threading.Thread(target=client.request, args=("GET", f"{server.url}/{i}"),
                                    daemon=True) for i in range(MAX_CONNECTIONS)]
        for thread in holders:
            thread.start()
        for _ in range(MAX_CONNECTIONS):
            assert server.held.acquire(timeout=10)
        server.sock.listen(0)  # busy: its accept queue takes one connection, the filler's
        filler.connect(server.sock.getsockname())

        late: dict[str, object] = {}

        def ask() -> None:
            try:
                late["status"] = client.request("GET", f"{server.url}/late").status
            except Exception as exc:  # reported by the assertion below
                late["error"] = exc

        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        pool = client._client._transport._pool  # type: ignore[attr-defined]
        for _ in range(1000):  # the 25th request waits for a free connection
            if len(pool._requests) > MAX_CONNECTIONS:
                break
            time.sleep(0.005)
        assert len(pool._requests) == MAX_CONNECTIONS + 1
        time.sleep(POOL_WAIT)
        server.release.set()  # the held answers end and their connections close
        time.sleep(0.3)  # the waiting request connects: its SYN is dropped
        server.sock.listen(64)
        server.resume.set()  # the SYN sent again (1 s after the first) is taken
        asker.join(10)
        try:  # the host is not found unreachable for the rest of the command
            after: object = client.request("GET", f"{server.url}/after").status
        except Exception as exc:  # reported by the assertion below
            after = exc
        assert (late, after) == ({"status": 200}, 200)
        assert server.paths.count("/late") == 1
        for thread in holders:
            thread.join(10)
    finally:
        server.release.set()
        server.resume.set()
        filler.close()
        client.close()
        server.sock.close()
