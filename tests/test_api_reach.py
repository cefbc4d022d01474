"""griffe loads only the modules a target reaches (bot/adapters/apisource.py: ModuleReach):
re-exports, submodules, relative and star imports are followed; a name the new version lost
is looked for where it went; and the drift computed on those modules is the drift computed
on the whole package, for both fixture pairs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from packaging.version import Version

from bot.adapters.apisource import (
    ModuleReach,
    Sources,
    _loadable,
    _reach_both,
    api_breakages,
    build_apis,
    importable,
    load_version,
    reached_modules,
)
from bot.adapters.cache import Cache
from bot.core.api import build_api
from bot.core.drift import analyse, scan_source
from bot.core.models import DistFile
from drift_fixture import REACH, REACH_V1, REACH_V2, TARGET, V1, V2

PKG = {
    "pkg/__init__.py": ("from .sub import *\nfrom . import tools as t\nimport os\n"
                        "if True:\n    from .cond import c\n"
                        "try:\n    from .maybe import m\nexcept ImportError:\n    m = None\n"
                        "def here():\n    pass\n"),
    "pkg/sub/__init__.py": "from ..deep.leaf import g\n",
    "pkg/deep/__init__.py": "",
    "pkg/deep/leaf.py": "def g():\n    pass\n",
    "pkg/tools.py": "def h():\n    pass\n",
    "pkg/cond.py": "def c():\n    pass\n",
    "pkg/maybe.py": "def m():\n    pass\n",
    "pkg/big.py": "def unused():\n    pass\n",
    "pkg/broken.py": "def (:\n",
}


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in importable({k: v.encode() for k, v in files.items()}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text)
    return root


@pytest.mark.parametrize(("path", "found", "modules"), [
    ("pkg.here", True, {"pkg"}),
    ("pkg.g", True, {"pkg", "pkg.sub", "pkg.deep", "pkg.deep.leaf"}),  # star, then ..relative
    ("pkg.t.h", True, {"pkg", "pkg.tools"}),  # `from . import tools as t`
    ("pkg.c", True, {"pkg", "pkg.cond"}),  # inside an if block
    ("pkg.m", True, {"pkg", "pkg.maybe"}),  # inside try
    ("pkg.tools", True, {"pkg", "pkg.tools"}),  # a module itself
    ("pkg.nothing", False, {"pkg", "pkg.sub"}),  # looked for behind the star import too
    ("pkg.os.path", False, {"pkg", "pkg.sub"}),  # an outside package is not followed
    ("other.x", False, set()),
])
def test_reach_follows_the_ways_a_name_gets_into_a_module(
        tmp_path: Path, path: str, found: bool, modules: set[str]) -> None:
    reach = ModuleReach(write(tmp_path, PKG), "pkg")
    assert reach.reach(path) is found
    assert reach.modules == modules


def test_view_holds_the_reached_modules_and_empty_siblings(tmp_path: Path) -> None:
    reach = ModuleReach(write(tmp_path / "src", PKG), "pkg")
    reach.reach("pkg.t.h")
    reach.view(reach.modules, tmp_path / "view")
    got = {p.relative_to(tmp_path / "view").as_posix(): p.read_text()
           for p in (tmp_path / "view").rglob("*.py")}
    assert got["pkg/__init__.py"] == PKG["pkg/__init__.py"]
    assert got["pkg/tools.py"] == PKG["pkg/tools.py"]
    # the package's other submodules are there but empty: a re-export of one of them
    # (`from .cond import c`) does not resolve, and nothing of them is parsed
    assert {p for p, text in got.items() if not text} == {
        "pkg/sub/__init__.py", "pkg/deep/__init__.py", "pkg/cond.py", "pkg/maybe.py",
        "pkg/big.py", "pkg/broken.py"}


def test_a_lost_name_is_looked_for_where_it_went(tmp_path: Path) -> None:
    new = ModuleReach(write(tmp_path, V2), "kernelpkg")
    assert new.defining(["moved_fn", "absent"]) == {"kernelpkg.utils"}
    assert new.defining([]) == set()
    # two workers share the search, each every other file
    halves = [ModuleReach(new.root, "kernelpkg").defining(["moved_fn"], half=h) for h in (0, 1)]
    assert halves[0] | halves[1] == {"kernelpkg.utils"} and not halves[0] & halves[1]


@pytest.mark.parametrize(("old_files", "new_files", "target"), [
    (V1, V2, TARGET), (REACH_V1, REACH_V2, REACH)])
def test_drift_on_the_reached_modules_is_the_drift_on_the_whole_package(
        tmp_path: Path, old_files: dict[str, str], new_files: dict[str, str],
        target: str) -> None:
    unreached = {"kernelpkg/generated.py": "def kernel_0(a, b):\n    pass\n"}
    old = Sources(write(tmp_path / "old", {**old_files, **unreached}), "kernelpkg", "cache", 0)
    new = Sources(write(tmp_path / "new", {**new_files, **unreached}), "kernelpkg", "cache", 0)
    sites = {"t.py": scan_source("t.py", target, {"kernelpkg"})}
    modules = _reach_both(old, new, [s.path for s in sites["t.py"]])
    apis = {}
    for label, only in (("whole", None), ("reached", modules)):
        pair = []
        for src, version in ((old, "1.0"), (new, "2.0")):
            with _loadable(src.root, src.package, only) as where:
                pair.append(build_api(where, src.package, version)[0])
        apis[label] = pair
    reports = {label: analyse({"t.py": target}, {"kernelpkg"}, pair[0], pair[1], "kernelpkg",
                              sites) for label, pair in apis.items()}
    assert reports["reached"].findings == reports["whole"].findings
    assert reports["reached"].findings  # the fixtures do drift
    assert reports["reached"].reached == reports["whole"].reached
    # and less was loaded
    assert "kernelpkg.generated.kernel_0" in apis["whole"][1].functions
    assert "kernelpkg.generated.kernel_0" not in apis["reached"][1].functions


def _cold_build(cache: Path, workers: bool) -> dict[str, bytes]:
    """drift's cold build of the API entries for the fixture pair (V1 -> V2, the TARGET's
    calls), in worker processes or in this one; returns every cache entry it wrote."""
    files = {"1.0": V1, "2.0": V2}
    sources, wheels = [], []
    for version, members in files.items():
        wheel = DistFile(f"kernelpkg-{version}-py3-none-any.whl", f"mem://kernelpkg-{version}",
                         Version(version), True, frozenset({"py3-none-any"}))
        root = write(Cache(cache).path("src", wheel.url, wheel.sha256), members)
        sources.append(Sources(root, "kernelpkg", "cache", 0, len(members)))
        wheels.append(wheel)
    paths = [s.path for s in scan_source("t.py", TARGET, {"kernelpkg"})]
    assert build_apis(*sources, *wheels, paths, cache, min_files=0 if workers else 10**9) \
        is workers
    modules = reached_modules(*sources, paths, cache)
    old, new = (load_version(None, w, cache, modules, s)  # type: ignore[arg-type]
                for w, s in zip(wheels, sources, strict=True))
    assert old.loaded is None and new.loaded is None if workers else old.loaded is not None
    assert api_breakages(old, new, cache)  # the fixtures do break
    return {p.relative_to(cache).as_posix(): p.read_bytes()
            for p in (cache / "api").rglob("*") if p.is_file()}


def test_the_cold_build_in_worker_processes_writes_what_the_in_process_build_writes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reached modules, both condensed APIs and griffe's breakages (the old version's
    griffe tree pickled into the new version's worker), byte for byte; and the workers run
    this pinbump, not a ``bot`` package in the working directory (a target's)."""
    here = _cold_build(tmp_path / "here", workers=False)
    poisoned = tmp_path / "cwd" / "bot"
    poisoned.mkdir(parents=True)
    (poisoned / "__init__.py").write_text("raise SystemExit('the target tree was imported')\n")
    monkeypatch.chdir(poisoned.parent)
    assert _cold_build(tmp_path / "workers", workers=True) == here
    assert len(here) == 4  # reach, two APIs, breakages


def test_a_worker_that_cannot_run_leaves_the_build_to_this_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")
    old = Sources(write(tmp_path / "old", V1), "kernelpkg", "cache", 0, len(V1))
    new = Sources(write(tmp_path / "new", V2), "kernelpkg", "cache", 0, len(V2))
    wheel = DistFile("kernelpkg-1.0-py3-none-any.whl", "mem://k", Version("1.0"), True,
                     frozenset({"py3-none-any"}))
    assert build_apis(old, new, wheel, wheel, ["kernelpkg.norm.rmsnorm"], tmp_path / "cache",
                      min_files=0) is False
