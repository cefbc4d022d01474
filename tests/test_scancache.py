"""The scan cache around drift's call-site finder: results kept by content across runs, the
text prefilter, and worker processes giving what one process gives."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.adapters.scancache import scanning
from bot.commands.drift import background_scan, reaching
from bot.core.drift import scan_source
from drift_fixture import REACH, V1
from drift_fixture import TARGET as FIXTURE_TARGET

CALLS: list[str] = []


@dataclass(frozen=True)
class Row:
    file: str
    size: int
    tags: tuple[str, ...]


def counting_scan(path: str, text: str, tag: str) -> list[Row]:
    CALLS.append(path)
    return [Row(path, len(text), (tag, "x"))]


def run(files: dict[str, str], cache: Path | None, tag: str = "t") -> dict[str, list[Row]]:
    with scanning(files, counting_scan, Row, args=(tag,), params=[tag], cache=cache,
                  min_parallel=10**6) as scanned:
        return scanned()


def test_unchanged_files_are_not_scanned_again(tmp_path: Path) -> None:
    files = {"a.py": "import flashinfer\n", "b.py": "import flashinfer as fi\n"}
    CALLS.clear()
    first = run(files, tmp_path)
    assert sorted(CALLS) == ["a.py", "b.py"]
    CALLS.clear()
    assert run(files, tmp_path) == first  # rows come back equal, tuples as tuples
    assert CALLS == []


def test_a_content_change_invalidates_that_file_only(tmp_path: Path) -> None:
    files = {"a.py": "import flashinfer\n", "b.py": "import flashinfer as fi\n"}
    run(files, tmp_path)
    CALLS.clear()
    changed = {**files, "b.py": "import flashinfer as fi\nfi.x()\n"}
    result = run(changed, tmp_path)
    assert CALLS == ["b.py"]
    assert result["b.py"] == [Row("b.py", len(changed["b.py"]), ("t", "x"))]


def test_other_parameters_or_no_cache_scan_again(tmp_path: Path) -> None:
    files = {"a.py": "import flashinfer\n"}
    run(files, tmp_path, tag="t")
    CALLS.clear()
    assert run(files, tmp_path, tag="u")["a.py"][0].tags == ("u", "x")
    assert run(files, None)["a.py"][0].tags == ("t", "x")
    assert CALLS == ["a.py", "a.py"]


def test_an_unreadable_store_is_ignored(tmp_path: Path) -> None:
    files = {"a.py": "import flashinfer\n"}
    run(files, tmp_path)
    for store in (tmp_path / "scan").rglob("*"):
        if store.is_file():
            store.write_text('{"files": {"a.py": ["x", [{"nope": 1}]]}}')
    CALLS.clear()
    assert run(files, tmp_path)["a.py"][0].file == "a.py"
    assert CALLS == ["a.py"]


TARGET = {
    # the only mention of the package is an alias import: still found
    "alias.py": "from flashinfer import fp4_quantize as _q\n\n\ndef f(x, s):\n"
                "    return _q(x, s, 16)\n",
    "module.py": "import flashinfer.comm as comm\n\ncomm.allreduce_fusion(x)\n",
    "other.py": "import torch\n\ntorch.zeros(3)\n",  # no mention: never parsed
    "broken.py": "import flashinfer\nflashinfer.fp4_quantize(\n",  # not Python: no sites
}


def test_prefilter_and_cache_find_what_a_full_scan_finds(tmp_path: Path) -> None:
    roots = {"flashinfer"}
    full = {p: scan_source(p, t, roots) for p, t in TARGET.items()}
    assert full["alias.py"] and full["module.py"] and not full["other.py"]
    with background_scan(TARGET, roots, cache=tmp_path) as scanned:
        cold = scanned()
    with background_scan(TARGET, roots, cache=tmp_path) as scanned:
        warm = scanned()
    assert "other.py" not in cold  # passed over by the byte search
    assert cold == warm == {p: s for p, s in full.items() if p != "other.py"}


def test_worker_processes_find_what_one_process_finds(tmp_path: Path) -> None:
    files = {f"m{i}.py": TARGET["alias.py" if i % 2 else "module.py"] for i in range(12)}
    roots = {"flashinfer"}
    with background_scan(files, roots, min_files=1) as scanned:
        parallel = scanned()
    assert parallel == {p: scan_source(p, t, roots) for p, t in files.items()}


@pytest.mark.parametrize("text", [
    *TARGET.values(), *(t for p, t in V1.items() if p.endswith(".py")), REACH, FIXTURE_TARGET,
    "import os, flashinfer\nflashinfer.g()\n",
    "import importlib\nm = importlib.import_module(f\"flashinfer.{name}\")\nm.k()\n",
    "x = __import__('flashinfer')\nx.y()\n",
])
def test_every_file_with_a_call_site_passes_the_prefilter(text: str) -> None:
    """The byte-level prefilter (an import of the package, or a string starting with its
    name) keeps every file in which the scanner finds anything."""
    for roots in ({"flashinfer"}, {"kernelpkg"}):
        if scan_source("f.py", text, roots):
            assert reaching(roots).search(text), text


def test_a_file_that_only_names_the_package_is_not_parsed(tmp_path: Path) -> None:
    files = {"prose.py": "# needs flashinfer >= 0.6\nHELP = 'install flashinfer first'\n"
                         "import torch\ntorch.flashinfer_like(1)\n",
             "module.py": TARGET["module.py"]}
    assert not scan_source("prose.py", files["prose.py"], {"flashinfer"})
    with background_scan(files, {"flashinfer"}) as scanned:
        found = scanned()
    assert found["prose.py"] == [] and found["module.py"]
