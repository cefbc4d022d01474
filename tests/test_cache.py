"""The one cache: one key scheme over one folder; credentials never in a key or on disk."""

from __future__ import annotations

from pathlib import Path

from bot.adapters.cache import Cache, cache_key
from bot.adapters.http import HttpClient
from bot.adapters.index import ACCEPT
from bot.cli import main
from servers import StaticIndex
from targets import write_target
from test_plan_static_index import stack


def test_keys_leave_credentials_out_and_tell_parts_apart(tmp_path: Path) -> None:
    assert cache_key("https://user:s3cret@idx.invalid/simple/a/", "json") == \
        cache_key("https://idx.invalid/simple/a/", "json") == \
        cache_key("https://other:t0ken@idx.invalid/simple/a/", "json")
    assert cache_key("https://idx.invalid/a/", None) != cache_key("https://idx.invalid/b/", None)
    assert cache_key("x", "sha-1") != cache_key("x", "sha-2")
    path = Cache(tmp_path).path("metadata", "https://u:p@idx.invalid/f.whl", "abc")
    key = cache_key("https://idx.invalid/f.whl", "abc")
    assert path == tmp_path / "metadata" / key[:2] / key


def test_every_kind_lives_under_one_layout_and_no_secret_reaches_the_disk(
        static: StaticIndex, tmp_path: Path) -> None:
    stack(static)
    repo = write_target(tmp_path / "repo")
    cache = tmp_path / "cache"
    secret = "s3cr3t-t0ken"
    url = static.url.replace("http://", f"http://bot:{secret}@")
    assert main(["plan", "--repo", str(repo), "--index-url", url, "--min-release-age", "0",
                 "--cache-dir", str(cache)]) == 0
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert files
    for path in files:
        kind, prefix, key = path.relative_to(cache).parts
        assert kind in {"http", "metadata", "upload-time"}
        assert key.split(".")[0].startswith(prefix) and len(key.split(".")[0]) == 64
        assert secret.encode() not in path.read_bytes(), path
    # the second plan reads what the first stored, under the same keys
    with HttpClient(cache) as http:
        page = http.get_cached(f"{url}/flashinfer-python/", ACCEPT)
        assert page.status == 200 and http.stats.not_modified == 1
