"""The plan's network critical path, read from a loopback index's request log (never from
timings): pages start together, a pinned companion's metadata is read while the lead's page
is still on its way, no page or byte range is asked for twice in one command, and a host
found unreachable is not tried again in the same command."""

from __future__ import annotations

import socket
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.adapters.http import HttpClient
from bot.commands.context import PlanOptions
from bot.errors import IndexError_
from planning import planned
from servers import HostileIndex, hostile_index
from targets import write_target
from wheels import build_wheel

LEAD_PAGE = "/simple/flashinfer-python/"
Log = list[tuple[str, str, dict[str, str]]]


@pytest.fixture
def index(tmp_path: Path) -> Iterator[HostileIndex]:
    """The SGLang-shaped stack on a PEP 691 index without PEP 658 files: metadata comes
    from range reads of the wheels, each one a line of the log."""
    wheels = tmp_path / "wheels"
    with hostile_index(tmp_path / "index") as srv:
        for name, versions in {
            "flashinfer-python": {"0.6.8.post1": [], "0.6.11": ["nvidia-cutlass-dsl>=4.5"]},
            "flashinfer-cubin": {"0.6.8.post1": [], "0.6.11": []},
            "nvidia-cutlass-dsl": {"4.4.2": [], "4.5.0": [], "4.6.0": []},
            "quack-kernels": {"0.3.0": [], "0.3.1": ["nvidia-cutlass-dsl>=4.5"],
                              "0.3.2": ["nvidia-cutlass-dsl>=4.6"]},
        }.items():
            srv.publish(name, [build_wheel(wheels, name, v, requires=r)
                               for v, r in versions.items()])
        yield srv


def companion_read(log: Log) -> bool:
    """A companion's wheel has been asked for (its metadata is being read)."""
    return any(path.startswith(("/files/nvidia_cutlass_dsl-", "/files/quack_kernels-"))
               for _, path, _ in log)


def test_companion_metadata_is_read_while_the_lead_page_is_held(index: HostileIndex,
                                                                 tmp_path: Path) -> None:
    """The lead's page is answered only once a companion's wheel has been asked for: a
    client that fetched pages, then resolved, then read metadata would never get it (the
    hold ends after 10 s, and ``released`` says so)."""
    index.holds[LEAD_PAGE] = companion_read
    repo = write_target(tmp_path / "repo")
    opts = PlanOptions(repo=repo, index_url=index.url, no_cache=True)
    with planned(opts) as done:
        assert done.plan.lead_target == "0.6.11"
    assert index.released == {LEAD_PAGE: True}
    chosen = {c.package: c.target for c in done.plan.changes}
    assert chosen["nvidia-cutlass-dsl"] == "4.6.0"


def test_no_page_and_no_range_is_fetched_twice_in_one_command(index: HostileIndex,
                                                               tmp_path: Path) -> None:
    repo = write_target(tmp_path / "repo")
    opts = PlanOptions(repo=repo, index_url=index.url, no_cache=True)
    with planned(opts) as done:
        assert done.plan.lead_target == "0.6.11"
        # drift and apply ask for the lead's page again after the plan: served from memory
        index_url = opts.index_url
        assert index_url is not None
        done.services.index.project(index_url, "flashinfer-python")
    asked = Counter((method, path, headers.get("Range", ""))
                    for method, path, headers in index.requests)
    assert asked and max(asked.values()) == 1, [k for k, n in asked.items() if n > 1]
    pages = {path for _, path, _ in asked if path.startswith("/simple/")}
    assert {"/simple/flashinfer-python/", "/simple/flashinfer-cubin/",
            "/simple/nvidia-cutlass-dsl/", "/simple/quack-kernels/"} <= pages


def test_guesses_never_change_the_plan_nor_fail_it(index: HostileIndex,
                                                   tmp_path: Path) -> None:
    """A companion release whose wheel is gone (HTTP 404) is read ahead and fails there; the
    resolver never needs it (the newest release fits), so the plan is the same."""
    repo = write_target(tmp_path / "repo")
    opts = PlanOptions(repo=repo, index_url=index.url, no_cache=True)
    with planned(opts) as before:
        pass
    gone = next(p for p in index.routes if p.startswith("/files/quack_kernels-0.3.0-"))
    del index.routes[gone]
    with planned(opts) as after:
        pass
    assert after.plan.changes == before.plan.changes
    assert after.plan.unchanged == before.plan.unchanged


def closed_port() -> int:
    """A loopback port nothing listens on: connecting to it is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("how", ["refused", "no such name"])
def test_an_unreachable_host_is_tried_once_per_command(how: str,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """Refused (every retry spent) or not resolving (no retry): the next URL on that host
    fails at once, with the same reason, and another host is still tried."""
    base, spent = f"http://127.0.0.1:{closed_port()}", 3
    if how == "no such name":
        base, spent = "http://flashinfer.example", 1
        real_resolve = socket.getaddrinfo

        def resolve(host: str, *args: object, **kwargs: object) -> object:
            if host == "flashinfer.example":
                raise socket.gaierror(socket.EAI_NONAME, "resolver says no")
            return real_resolve(host, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(socket, "getaddrinfo", resolve)
    tries: list[str] = []
    real = HttpClient._send
    http = HttpClient(retries=2, backoff=0.0)

    def counted(self: HttpClient, method: str, url: str, *args: object) -> object:
        if self is http:  # not a read another test's client left running in the background
            tries.append(url)
        return real(self, method, url, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(HttpClient, "_send", counted)
    with http:
        with pytest.raises(IndexError_, match="cannot connect") as first:
            http.request("GET", f"{base}/whl/flashinfer-cubin/")
        assert len(tries) == spent
        with pytest.raises(IndexError_, match="cannot connect") as second:
            http.request("GET", f"{base}/whl/cu129/flashinfer-jit-cache/")
        assert len(tries) == spent  # not tried again
        assert str(second.value).startswith(f"{base}/whl/cu129/flashinfer-jit-cache/: ")
        reason = str(first.value).split(": ", 1)[1].split(" after ")[0].split(";")[0]
        assert reason in str(second.value)
        with pytest.raises(IndexError_):  # another host: tried
            http.request("GET", f"http://127.0.0.1:{closed_port()}/other/")
        assert len(tries) == spent + 3


def test_a_slow_answer_does_not_mark_its_host_unreachable(tmp_path: Path) -> None:
    """Only a host that could not be connected to at all is given up on: one whose answer
    timed out (it did connect) is asked again for the next URL."""
    with hostile_index(tmp_path / "index") as srv:
        from servers import Route

        srv.routes["/slow/"] = Route(b"x" * 10, drip=1.0)
        srv.routes["/fast/"] = Route(b"ok")
        with HttpClient(timeout=0.3, retries=0) as http:
            with pytest.raises(IndexError_, match="timed out"):
                http.request("GET", f"{srv.base}/slow/")
            assert http.request("GET", f"{srv.base}/fast/").content == b"ok"


# -- an index without upload times (FlashInfer's own): HEAD requests, at once ----------------
@pytest.fixture
def undated(tmp_path: Path) -> Iterator[HostileIndex]:
    """The stack on an index whose pages give no upload times (PEP 700): each wheel's
    Last-Modified is its upload time, one HEAD request per wheel."""
    wheels = tmp_path / "wheels"
    with hostile_index(tmp_path / "index") as srv:
        for name, versions in {
            "flashinfer-python": ("0.6.8.post1", "0.6.11", "0.6.12"),
            "flashinfer-cubin": ("0.6.8.post1", "0.6.11"),
            "nvidia-cutlass-dsl": ("4.4.2",), "quack-kernels": ("0.3.0",),
        }.items():
            doc = srv.publish(name, [build_wheel(wheels, name, v) for v in versions])
            for entry in doc["files"]:  # type: ignore[attr-defined]
                del entry["upload-time"]
                route = srv.routes[f"/files/{entry['filename']}"]
                route.headers = {"Last-Modified": "Wed, 01 Jan 2025 00:00:00 GMT"}
            srv.page(name, doc)
        yield srv


def test_upload_times_are_asked_for_together_and_once(undated: HostileIndex,
                                                     tmp_path: Path) -> None:
    """The newest lead release is answered only once the next one's upload time has been
    asked for too: a resolver asking one release after another would wait 10 s for it."""
    newest = "/files/flashinfer_python-0.6.12-py3-none-any.whl"
    undated.holds[newest] = lambda log: any(
        m == "HEAD" and p == "/files/flashinfer_python-0.6.11-py3-none-any.whl"
        for m, p, _ in log)
    repo = write_target(tmp_path / "repo")
    opts = PlanOptions(repo=repo, index_url=undated.url, no_cache=True)
    with planned(opts) as done:
        # 0.6.12 has no cubin: rejected; 0.6.11 is the set
        assert done.plan.lead_target == "0.6.11"
    assert undated.released == {newest: True}
    asked = Counter((method, path, headers.get("Range", ""))
                    for method, path, headers in undated.requests)
    assert max(asked.values()) == 1, [k for k, n in asked.items() if n > 1]
    assert ("HEAD", newest, "") in asked


@pytest.mark.parametrize(("fixture", "gone"), [
    ("index", "/files/quack_kernels-0.3.0-"),  # its metadata is guessed, never needed
    ("undated", "/files/flashinfer_python-0.6.8.post1-"),  # its upload time: the same
])
def test_a_warm_plan_guesses_nothing_of_the_index(fixture: str, gone: str, tmp_path: Path,
                                                 request: pytest.FixtureRequest) -> None:
    """Guesses are for a cold cache: after one plan, the next asks the index for its pages
    only (what the resolver needs of the wheels is on disk), not again for what the first
    plan guessed and did not get (a wheel gone: HTTP 404, so nothing was stored)."""
    index: HostileIndex = request.getfixturevalue(fixture)
    del index.routes[next(p for p in index.routes if p.startswith(gone))]
    repo = write_target(tmp_path / "repo")
    opts = PlanOptions(repo=repo, index_url=index.url, cache_dir=tmp_path / "cache")
    running = set(threading.enumerate())
    with planned(opts) as cold:
        pass
    for leftover in set(threading.enumerate()) - running:  # a guess still under way after
        leftover.join(10)  # the cold plan is the cold plan's, not the warm one's request
    assert any(path.startswith(gone) for _, path, _ in index.requests)  # it was guessed
    before = len(index.requests)
    with planned(opts) as warm:
        pass
    assert warm.plan.changes == cold.plan.changes
    assert [path for _, path, _ in index.requests[before:] if not path.startswith("/simple/")
            ] == []


def test_reads_nobody_waits_for_do_not_hold_the_command_open(index: HostileIndex,
                                                             tmp_path: Path) -> None:
    """When the plan is made, guesses still queued are cancelled and those under way run
    in daemon threads: the process ends without waiting for their answers (a
    ThreadPoolExecutor's workers are joined at exit)."""

    readers: list[threading.Thread] = []

    def reading(log: Log) -> bool:  # while the plan is under way: its readers are up
        if not companion_read(log):
            return False
        readers.extend(t for t in threading.enumerate() if t.name == "pinbump-read")
        return True

    index.holds[LEAD_PAGE] = reading
    repo = write_target(tmp_path / "repo")
    opts = PlanOptions(repo=repo, index_url=index.url, no_cache=True)
    with planned(opts):
        pass
    assert readers and all(t.daemon for t in readers)


def test_a_redirect_to_an_unreachable_host_does_not_mark_the_first_host(tmp_path: Path
                                                                        ) -> None:
    """An index answering one URL with a redirect to a host that cannot be connected to (a
    file store that is down) is itself reachable: its other URLs are still asked for."""
    with hostile_index(tmp_path / "index") as srv:
        from servers import Route

        gone = f"http://127.0.0.1:{closed_port()}/files/x.whl"
        srv.routes["/moved/"] = Route(b"", status=302, headers={"Location": gone})
        srv.routes["/fast/"] = Route(b"ok")
        with HttpClient(retries=1, backoff=0.0) as http:
            with pytest.raises(IndexError_, match="cannot connect"):
                http.request("GET", f"{srv.base}/moved/")
            assert http.request("GET", f"{srv.base}/fast/").content == b"ok"


def test_a_url_from_a_page_cannot_replace_the_credentials_given_for_its_host(
        tmp_path: Path) -> None:
    """A file URL of an index page naming the index's host with other user:password (text
    from the index: untrusted) does not replace the credentials configured for that host:
    the next request there still carries the configured ones."""
    import base64

    from bot.core.urls import Credentials, origin

    with hostile_index(tmp_path / "index") as srv:
        from servers import Route

        srv.routes["/a/"] = Route(b"a")
        srv.routes["/b/"] = Route(b"b")
        host = srv.base.split("://", 1)[1]
        with HttpClient(retries=0, credentials=[Credentials(origin(srv.base), "me",
                                                            "s3cret")]) as http:
            http.request("GET", f"http://mallory:evil@{host}/a/")
            http.request("GET", f"{srv.base}/b/")
    sent = {path: headers.get("Authorization") for _, path, headers in srv.requests}
    mine = "Basic " + base64.b64encode(b"me:s3cret").decode()
    assert sent == {"/a/": mine, "/b/": mine}


def test_a_read_still_under_way_when_the_command_ends_raises_nothing_in_its_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A --find-links page still arriving when the plan is made and the client closed: its
    background thread ends quietly (it printed a RuntimeError traceback: the client was
    closed under it)."""
    import time

    from bot.adapters.index import SimpleIndex
    from bot.adapters.sources import IndexSource
    from bot.core.config import load_policy
    from bot.core.environment import Environment
    from bot.core.indexmodel import IndexModel, IndexRef
    from servers import Route

    raised: list[BaseException | None] = []
    mine: set[threading.Thread] = set()  # not a read another test left running
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(
        args.exc_value) if args.thread in mine else None)
    with hostile_index(tmp_path / "index") as srv:
        srv.routes["/flat/"] = Route(b"<a href='x.whl'>x</a>" * 20, content_type="text/html",
                                     drip=0.02)
        policy = load_policy(None, [], {})
        env = Environment.for_target(None, policy.python, policy.platforms)
        model = IndexModel({policy.active_group.lead: (IndexRef(f"{srv.base}/flat/", "test",
                                                                flat=True),)})
        http = HttpClient(retries=1, backoff=0.0)
        source = IndexSource(SimpleIndex(http), policy, env, model)
        before = set(threading.enumerate())
        source.prefetch([policy.active_group.lead])
        mine.update(t for t in set(threading.enumerate()) - before if "_flat_page" in t.name)
        assert mine
        while not srv.requests:  # the page is on its way (bounded by the test's timeout)
            time.sleep(0.01)
        source.close()
        http.close()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not raised and any(
                t.is_alive() for t in mine):
            time.sleep(0.02)
    assert raised == []


def test_a_page_whose_thread_cannot_start_is_fetched_by_the_one_who_asked(
        index: HostileIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """No thread to be had (a process at its thread limit): ``prefetch`` fetches the page
    itself instead of leaving a page registered that nobody fetches (whoever asked for it
    next waited forever)."""
    import types
    from concurrent.futures import ThreadPoolExecutor

    import bot.adapters.index
    from bot.adapters.index import SimpleIndex

    class NoThread(threading.Thread):
        def start(self) -> None:
            raise RuntimeError("can't start new thread")

    with HttpClient(retries=1, backoff=0.0) as http:
        pages = SimpleIndex(http)
        monkeypatch.setattr(bot.adapters.index, "threading", types.SimpleNamespace(
            Thread=NoThread))  # the index's threads only: the loopback server's still start
        pages.prefetch([(index.url, "flashinfer-python")])
        monkeypatch.undo()
        with ThreadPoolExecutor(1) as pool:  # bounded: the old code never answered
            page = pool.submit(pages.project, index.url, "flashinfer-python").result(10)
    assert page.name == "flashinfer-python"
    assert [p for _, p, _ in index.requests].count(LEAD_PAGE) == 1
