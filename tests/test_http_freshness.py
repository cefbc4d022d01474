"""HTTP freshness of the disk cache: a page the index says is fresh (``Cache-Control:
max-age``, less its ``Age``) is used without a request, as pip and uv do; a stale one, one
marked ``no-cache``, or any page under ``--refresh`` is asked for again; ``no-store`` is
never written. Real loopback server (tests/servers.py: HostileIndex), a clock the test moves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.adapters.http import HttpClient
from bot.adapters.index import ACCEPT
from bot.cli import main
from servers import HostileIndex, Route, hostile_index
from wheels import build_wheel

PAGE = "/simple/kernelpkg/"


@pytest.fixture
def index(tmp_path: Path) -> Iterator[HostileIndex]:
    with hostile_index(tmp_path / "index") as srv:
        yield srv


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def serve(index: HostileIndex, body: bytes, **headers: str) -> None:
    index.routes[PAGE] = Route(body, "application/vnd.pypi.simple.v1+json",
                               headers={k.replace("_", "-"): v for k, v in headers.items()})


def page_requests(index: HostileIndex) -> list[dict[str, str]]:
    return [h for _, path, h in index.requests if path == PAGE]


def get(index: HostileIndex, cache: Path, clock: Clock, refresh: bool = False
        ) -> tuple[bytes, int]:
    """The page's body through the cache, and how many requests reached the index."""
    before = len(page_requests(index))
    with HttpClient(cache, refresh=refresh, now=clock, retries=0) as http:
        resp = http.get_cached(f"{index.url}/kernelpkg/", ACCEPT)
        assert resp.status == 200
        assert http.stats.fresh + http.stats.requests == 1
    return resp.content, len(page_requests(index)) - before


# (Cache-Control, Age, seconds later, asked again?)
ROWS = [
    ("max-age=600", None, 10, False),
    ("public, max-age=600", None, 599, False),
    ("max-age=600", None, 600, True),  # the lifetime is over
    ("max-age=600", "590", 20, True),  # it was 590 s old already when it came
    ("max-age=600", None, -5, True),  # the clock went backwards: never fresh for longer
    ("max-age=600, no-cache", None, 10, True),  # every use must be revalidated
    ("max-age=0", None, 0, True),
    ("max-age=soon", None, 10, True),  # not delta-seconds: no lifetime
    (None, None, 10, True),  # no Cache-Control (the mirror reachable here): ask again
    # an index (hostile or misconfigured) cannot hide new releases and yanks for long:
    ("max-age=315360000", None, 599, False),
    ("max-age=315360000", None, 600, True),  # capped at PyPI's own 600 s
    ("max-age=999999999999999", None, 600, True),  # too many digits: no lifetime at all
    ("max-age=-1", None, 1, True),
    ("max-age=6\u00b2", None, 10, True),  # "²" is a digit to str.isdigit, not to int()
    ("max-age=600", "1\u00b2", 10, False),  # an Age that is no number is ignored
    ("max-age=600", "9999", 0, True),  # older than its lifetime already when it came
    ("s-maxage=600", None, 10, True),  # for shared caches only (RFC 9111 5.2.2.10)
    ("max-age=600, max-age=60", None, 10, True),  # disagreeing twice: stale
]


@pytest.mark.parametrize(("cache_control", "age", "later", "asked"), ROWS)
def test_a_fresh_page_is_used_without_a_request(
        index: HostileIndex, tmp_path: Path, cache_control: str | None, age: str | None,
        later: float, asked: bool) -> None:
    headers = {"ETag": '"v1"'}
    if cache_control is not None:
        headers["Cache-Control"] = cache_control
    if age is not None:
        headers["Age"] = age
    serve(index, b'{"v": 1}', **headers)
    clock = Clock()
    assert get(index, tmp_path / "cache", clock) == (b'{"v": 1}', 1)
    serve(index, b'{"v": 2}', **{**headers, "ETag": '"v2"'})
    clock.now += later
    body, requests = get(index, tmp_path / "cache", clock)
    assert requests == int(asked)
    assert body == (b'{"v": 2}' if asked else b'{"v": 1}')
    if asked:  # the stored copy's validator went with the request
        assert page_requests(index)[-1].get("If-None-Match") == '"v1"'


def test_refresh_asks_again_however_fresh(index: HostileIndex, tmp_path: Path) -> None:
    serve(index, b"one", ETag='"1"', Cache_Control="max-age=3600")
    clock = Clock()
    get(index, tmp_path / "cache", clock)
    serve(index, b"two", ETag='"2"', Cache_Control="max-age=3600")
    assert get(index, tmp_path / "cache", clock, refresh=True) == (b"two", 1)
    assert get(index, tmp_path / "cache", clock) == (b"two", 0)  # what --refresh stored


def test_a_304_renews_the_lifetime(index: HostileIndex, tmp_path: Path) -> None:
    serve(index, b"page", ETag='"1"', Cache_Control="max-age=60")
    clock = Clock()
    get(index, tmp_path / "cache", clock)
    serve(index, b"", ETag='"1"', Cache_Control="max-age=60")
    index.routes[PAGE].status = 304
    clock.now += 100  # stale: revalidated, and the 304 renews it from now
    assert get(index, tmp_path / "cache", clock) == (b"page", 1)
    clock.now += 30
    assert get(index, tmp_path / "cache", clock) == (b"page", 0)
    clock.now += 31
    assert get(index, tmp_path / "cache", clock) == (b"page", 1)


def test_no_store_is_never_written_and_a_lifetime_alone_is_enough_to_store(
        index: HostileIndex, tmp_path: Path) -> None:
    clock = Clock()
    serve(index, b"secret page", Cache_Control="no-store, max-age=600", ETag='"1"')
    get(index, tmp_path / "a", clock)
    assert not [p for p in (tmp_path / "a").rglob("*") if p.is_file()]
    serve(index, b"no validators", Cache_Control="max-age=600")  # no ETag, no Last-Modified
    get(index, tmp_path / "b", clock)
    assert get(index, tmp_path / "b", clock) == (b"no validators", 0)
    [meta] = (tmp_path / "b").rglob("*.json")
    stored = json.loads(meta.read_bytes())
    assert stored["max-age"] == 600 and stored["stored-at"] == clock.now


def test_plan_uses_a_fresh_page_and_refresh_sees_a_new_release(
        index: HostileIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command line: a second plan inside the page's lifetime asks the index nothing
    for it; ``--refresh`` asks again and finds the release published since."""
    wheels = tmp_path / "wheels"
    built = [build_wheel(wheels, "kernelpkg", v) for v in ("1.0", "2.0")]
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "t"\nrequires-python = ">=3.10"\n'
        'dependencies = ["kernelpkg==1.0"]\n\n'
        '[tool.pinbump]\ngroup = "k"\nmin-release-age = 0\n'
        '[tool.pinbump.groups.k]\nlead = "kernelpkg"\n')

    def plan(*extra: str) -> str:
        assert main(["plan", "--repo", str(repo), "--index-url", index.url, "--json",
                     "--cache-dir", str(tmp_path / "cache"), *extra]) == 0
        return str(json.loads(capsys.readouterr().out)["lead"]["target"])

    def publish(paths: list[Path]) -> None:
        index.publish("kernelpkg", paths)
        index.routes[PAGE].headers = {"ETag": f'"{len(paths)}"', "Cache-Control": "max-age=600"}

    publish(built)
    assert plan() == "2.0"
    publish([*built, build_wheel(wheels, "kernelpkg", "3.0")])
    asked = len(page_requests(index))
    assert plan() == "2.0" and len(page_requests(index)) == asked  # fresh: not asked
    assert plan("--refresh") == "3.0" and len(page_requests(index)) == asked + 1


def test_a_stored_lifetime_beyond_the_cap_is_capped_when_read(
        index: HostileIndex, tmp_path: Path) -> None:
    """A cache written with a huge lifetime (by hand, or a release before the cap) is still
    asked again after 600 s."""
    serve(index, b"old", ETag='"1"', Cache_Control="max-age=600")
    clock = Clock()
    get(index, tmp_path / "cache", clock)
    [meta] = (tmp_path / "cache").rglob("*.json")
    meta.write_text(json.dumps({**json.loads(meta.read_bytes()), "max-age": 1e300}))
    serve(index, b"new", ETag='"2"', Cache_Control="max-age=600")
    clock.now += 599
    assert get(index, tmp_path / "cache", clock) == (b"old", 0)
    clock.now += 1
    assert get(index, tmp_path / "cache", clock) == (b"new", 1)


def test_a_fresh_page_from_an_index_with_credentials_keeps_them_off_the_disk(
        index: HostileIndex, tmp_path: Path) -> None:
    secret = "fr3sh-s3cr3t"
    serve(index, b"page", ETag='"1"', Cache_Control="max-age=600")
    url = index.url.replace("http://", f"http://bot:{secret}@") + "/kernelpkg/"
    for requests in (1, 0):  # stored, then used fresh under the same (public) key
        with HttpClient(tmp_path / "cache", now=Clock(), retries=0) as http:
            assert http.get_cached(url, ACCEPT).content == b"page"
            assert http.stats.requests == requests
            assert secret not in http.get_cached(url, ACCEPT).url
    stored = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert stored and all(secret.encode() not in p.read_bytes() for p in stored)
