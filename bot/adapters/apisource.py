"""Adapter: a version of the lead package's Python sources, fetched from the index and cached.

Only the ``.py`` members of importable packages are read, through HTTP range requests when
the server allows them (neighbouring members in one request), else the whole wheel with its
sha256 checked. Sources, condensed APIs and griffe's breakages are cached on disk per version.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path, PurePosixPath

import griffe

from bot.adapters.cache import Cache
from bot.adapters.index import SimpleIndex
from bot.adapters.lazywheel import SOURCE_LIMITS, is_source, member_parts
from bot.core.api import FORMAT, ApiIndex, build_api
from bot.core.models import DistFile
from bot.errors import DriftError


@dataclass
class LoadedVersion:
    api: ApiIndex
    root: Path  # where the package sources lie
    package: str  # import name
    how: str  # "cache" | "range" | "download"
    nbytes: int  # bytes fetched for it (0 from the cache)
    loaded: griffe.Object | None = None  # griffe's tree, when it was built in this run


def importable(members: dict[str, bytes]) -> dict[str, bytes]:
    """Members inside a chain of packages (each folder has an ``__init__.py``): this leaves
    out bundled third-party sources such as ``flashinfer/data/cutlass``."""
    inits = {str(PurePosixPath(n).parent) for n in members if n.endswith("/__init__.py")}
    out = {}
    for name, data in members.items():
        parents = PurePosixPath(name).parents
        folders = [str(p) for p in parents if str(p) != "."]
        if all(f in inits for f in folders):
            out[name] = data
    return out


def main_package(paths: list[str], distribution: str) -> str | None:
    """The import package a distribution is about: a top-level package (folder with an
    ``__init__.py``) named like the distribution (flashinfer-python -> flashinfer), else the
    largest one, else a lone top-level module. Helper modules beside it (build_backend.py)
    are passed over."""
    counts: dict[str, int] = {}
    packages: set[str] = set()
    modules: set[str] = set()
    for name in paths:
        parts = PurePosixPath(name).parts
        if len(parts) == 2 and parts[1] == "__init__.py":
            packages.add(parts[0])
        elif len(parts) == 1 and name.endswith(".py"):
            modules.add(name[:-3])
        if len(parts) > 1:
            counts[parts[0]] = counts.get(parts[0], 0) + 1
    wanted = distribution.lower().replace("-", "_")
    named = [p for p in packages if wanted == p or wanted.startswith(p + "_")]
    if named:  # the biggest of them: flashinfer over a stub flashinfer_python
        return max(sorted(named), key=lambda p: (counts.get(p, 0), p == wanted))
    if packages:
        return max(sorted(packages), key=lambda p: counts.get(p, 0))
    return sorted(modules)[0] if modules else None


def read_api(path: Path) -> ApiIndex | None:
    """A condensed API from the cache (None: absent, unreadable or an older format)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return ApiIndex.from_json(data) if data.get("format") == FORMAT else None


def fetch_sources(index: SimpleIndex, file: DistFile, dest: Path) -> tuple[str, int]:
    """Write the importable ``.py`` members of ``file`` under ``dest``; returns (how, bytes)."""
    before = index.http.stats.bytes_received
    members, how = index.wheel_members(file, is_source, SOURCE_LIMITS)
    members = importable(members)
    if not members:
        raise DriftError(f"{file.filename}: no importable Python sources in the wheel")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}."))
    try:
        for name, data in members.items():
            path = tmp.joinpath(*member_parts(file.filename, name))  # plain names only
            if tmp not in path.parents:
                raise DriftError(f"{file.filename}: member {name!r} is outside its folder")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return how, index.http.stats.bytes_received - before


def load_version(index: SimpleIndex, file: DistFile, cache_dir: Path) -> LoadedVersion:
    """The condensed API of the wheel ``file``, from the cache when it is there."""
    cache = Cache(cache_dir)
    src = cache.path("src", file.url, file.sha256)
    api_file = cache.path("api", file.url, file.sha256)
    cached = read_api(api_file) if src.is_dir() else None
    if cached is not None:
        return LoadedVersion(cached, src, cached.package, "cache", 0)
    how, nbytes = "cache", 0
    if not src.is_dir():
        how, nbytes = fetch_sources(index, file, src)
    package = main_package([p.relative_to(src).as_posix() for p in src.rglob("*.py")],
                           file.filename.split("-")[0])
    if package is None:
        raise DriftError(f"{file.filename}: no top-level package found")
    try:
        api, loaded = build_api(src, package, str(file.version))
    except Exception as exc:
        raise DriftError(f"{file.filename}: griffe could not load {package!r}: "
                         f"{type(exc).__name__}: {exc}") from None
    cache.write(api_file, json.dumps(api.to_json()).encode())
    return LoadedVersion(api, src, package, how, nbytes, loaded)


def shipped_advisories() -> str:
    """The advisory file shipped for the built-in group (bot/data/advisories.toml)."""
    return resources.files("bot").joinpath("data/advisories.toml").read_text("utf-8")


def api_breakages(old: LoadedVersion, new: LoadedVersion, cache_dir: Path
                  ) -> list[tuple[str, str]]:
    """griffe's own breaking-change finder over the two versions (cached per pair):
    (object path, one-line Markdown explanation)."""
    cache = Cache(cache_dir)
    path = cache.path("api", "breakages2", old.root.name, new.root.name)
    try:
        return [(str(a), str(b)) for a, b in json.loads(path.read_text())]
    except (OSError, ValueError, TypeError):
        pass
    loaded = [v.loaded or griffe.load(v.package, search_paths=[str(v.root)],
                                      allow_inspection=False) for v in (old, new)]
    lines = []
    for breakage in griffe.find_breaking_changes(loaded[0], loaded[1]):
        text = breakage.explain(style=griffe.ExplanationStyle.MARKDOWN).strip()  # type: ignore[arg-type]
        lines.append((breakage.obj.path, text.removeprefix("- ")
                      .replace(str(new.root) + "/", "").replace(str(old.root) + "/", "")))
    cache.write(path, json.dumps(lines).encode())
    return lines
