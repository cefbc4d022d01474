from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from bot.adapters.index import parse_html_page, parse_json_page, parse_requires_dist
from bot.errors import IndexError_

PAGE = "https://index.example/simple/flashinfer-python/"


def test_pep691_json_with_pep700_pep592_pep714() -> None:
    doc = {
        "meta": {"api-version": "1.1"},
        "name": "flashinfer-python",
        "files": [
            {"filename": "flashinfer_python-0.6.11-py3-none-any.whl",
             "url": "../../packages/f/flashinfer_python-0.6.11-py3-none-any.whl",
             "hashes": {"sha256": "ab" * 32}, "requires-python": ">=3.10",
             "upload-time": "2026-05-01T10:00:00.123456Z", "yanked": False,
             "core-metadata": {"sha256": "cd" * 32}, "size": 123},
            {"filename": "flashinfer_python-0.6.10-py3-none-any.whl",
             "url": "https://files.example/flashinfer_python-0.6.10-py3-none-any.whl",
             "hashes": {}, "yanked": "allreduce hang", "dist-info-metadata": True},
            {"filename": "flashinfer_python-0.6.9.tar.gz", "url": "x.tar.gz", "hashes": {},
             "yanked": True},
            {"filename": "other_pkg-1.0-py3-none-any.whl", "url": "o.whl", "hashes": {}},
            {"filename": "README.txt", "url": "r.txt", "hashes": {}},
        ],
    }
    page = parse_json_page(json.dumps(doc).encode(), PAGE, "flashinfer-python")
    assert [f.filename for f in page.files] == [
        "flashinfer_python-0.6.11-py3-none-any.whl", "flashinfer_python-0.6.10-py3-none-any.whl",
        "flashinfer_python-0.6.9.tar.gz"]
    new, yanked, sdist = page.files
    assert new.url == "https://index.example/packages/f/flashinfer_python-0.6.11-py3-none-any.whl"
    assert new.upload_time == datetime(2026, 5, 1, 10, 0, 0, 123456, tzinfo=timezone.utc)
    assert new.sha256 == "ab" * 32 and new.core_metadata == (("sha256", "cd" * 32),)
    assert new.yanked is None and new.tags == {"py3-none-any"} and new.size == 123
    assert yanked.yanked == "allreduce hang" and yanked.core_metadata is True
    assert sdist.yanked == "" and not sdist.is_wheel


def test_pep503_html_with_yank_metadata_and_relative_urls() -> None:
    html = """<!DOCTYPE html><html><head><base href="/root/"></head><body>
    <a href="../packages/flashinfer_cubin-0.6.11-py3-none-any.whl#sha256=aa"
       data-requires-python="&gt;=3.10" data-core-metadata="sha256=bb">cubin 0.6.11</a>
    <a href="flashinfer_cubin-0.6.10-py3-none-any.whl" data-yanked="">x</a>
    <a href="flashinfer_cubin-0.6.9-py3-none-any.whl" data-yanked="broken build"
       data-dist-info-metadata="true">x</a>
    </body></html>"""
    page = parse_html_page(html, "https://index.example/simple/flashinfer-cubin/",
                           "flashinfer-cubin")
    a, b, c = page.files
    assert a.url == "https://index.example/packages/flashinfer_cubin-0.6.11-py3-none-any.whl"
    assert a.requires_python == ">=3.10" and a.sha256 == "aa"
    assert a.core_metadata == (("sha256", "bb"),) and a.yanked is None
    assert b.url == "https://index.example/root/flashinfer_cubin-0.6.10-py3-none-any.whl"
    assert b.yanked == "" and b.core_metadata is False
    assert c.yanked == "broken build" and c.core_metadata is True


def test_malformed_json_is_an_index_error() -> None:
    with pytest.raises(IndexError_, match="malformed PEP 691 JSON"):
        parse_json_page(b"{not json", PAGE, "flashinfer-python")


def test_requires_dist() -> None:
    meta = (b"Metadata-Version: 2.1\nName: x\nVersion: 1\n"
            b"Requires-Dist: nvidia-cutlass-dsl>=4.5.0\n"
            b"Requires-Dist: nvidia-cutlass-dsl[cu13]>=4.5.0; extra == \"cu13\"\n"
            b"Requires-Dist: not a requirement ((\n\nbody\n")
    reqs = parse_requires_dist(meta)
    assert [str(r) for r in reqs] == ['nvidia-cutlass-dsl>=4.5.0',
                                      'nvidia-cutlass-dsl[cu13]>=4.5.0; extra == "cu13"']
