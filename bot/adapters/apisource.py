"""Adapter: a version of the lead package's Python sources, fetched from the index and cached.

Only the ``.py`` members of importable packages are read, through HTTP range requests when
the server allows them (neighbouring members in one request), else the whole wheel with its
sha256 checked. Sources, condensed APIs and griffe's breakages are cached on disk per version.
"""

from __future__ import annotations

import ast
import gc
import hashlib
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import griffe

from bot.adapters.cache import Cache
from bot.adapters.index import SimpleIndex
from bot.adapters.lazywheel import SOURCE_LIMITS, is_source, member_parts
from bot.core.api import FORMAT, ApiIndex, build_api
from bot.core.models import DistFile
from bot.errors import DriftError, PinbumpError


@dataclass
class LoadedVersion:
    api: ApiIndex
    root: Path  # where the package sources lie
    package: str  # import name
    how: str  # "cache" | "range" | "download"
    nbytes: int  # bytes fetched for it (0 from the cache)
    loaded: griffe.Object | None = None  # griffe's tree, when it was built in this run
    # the modules loaded (those the target reaches), or None: the whole package
    modules: frozenset[str] | None = None


def importable(members: dict[str, bytes]) -> dict[str, bytes]:
    """Members inside a chain of packages (each folder has an ``__init__.py``): this leaves
    out bundled third-party sources such as ``flashinfer/data/cutlass``."""
    keep = importable_names(members)
    return {name: data for name, data in members.items() if name in keep}


def importable_names(names: Iterable[str]) -> set[str]:
    """The names of ``importable`` members."""
    names = list(names)
    inits = {str(PurePosixPath(n).parent) for n in names if n.endswith("/__init__.py")}
    out = set()
    for name in names:
        parents = PurePosixPath(name).parents
        folders = [str(p) for p in parents if str(p) != "."]
        if all(f in inits for f in folders):
            out.add(name)
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
    """Write the importable ``.py`` members of ``file`` under ``dest``; returns (how, bytes).
    Each member is written as it is inflated, never all of them held (flashinfer 0.7: 92 MB
    of sources); those outside a chain of packages are removed once all names are known."""
    before = index.http.stats.bytes_received
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}."))
    written: dict[str, Path] = {}

    def put(name: str, data: bytes) -> None:
        path = tmp.joinpath(*member_parts(file.filename, name))  # plain names only
        if tmp not in path.parents:
            raise DriftError(f"{file.filename}: member {name!r} is outside its folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written[name] = path

    try:
        _, how = index.wheel_members(file, is_source, SOURCE_LIMITS, sink=put)
        keep = importable_names(written)
        if not keep:
            raise DriftError(f"{file.filename}: no importable Python sources in the wheel")
        for name in sorted(set(written) - keep, reverse=True):
            written[name].unlink()
            for folder in written[name].parents:  # the folders left empty, as if never made
                if folder == tmp or any(folder.iterdir()):
                    break
                folder.rmdir()
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return how, index.http.stats.bytes_received - before


@dataclass(frozen=True)
class Sources:
    """A version's importable sources on disk (the cache's ``src`` entry)."""

    root: Path
    package: str  # import name
    how: str  # "cache" | "range" | "download"
    nbytes: int
    files: int = 0  # its .py files


def fetch_version(index: SimpleIndex, file: DistFile, cache_dir: Path) -> Sources:
    """The wheel's importable sources, fetched once and kept in the cache."""
    src = Cache(cache_dir).path("src", file.url, file.sha256)
    how, nbytes = "cache", 0
    if not src.is_dir():
        how, nbytes = fetch_sources(index, file, src)
    paths = _py_files(src)
    package = main_package(paths, file.filename.split("-")[0])
    if package is None:
        raise DriftError(f"{file.filename}: no top-level package found")
    return Sources(src, package, how, nbytes, len(paths))


def _py_files(root: Path) -> list[str]:
    """The ``.py`` files under ``root``, relative, with ``/`` (``os.walk``: ``rglob`` and
    ``relative_to`` took 0.2 s per drift run over flashinfer 0.7's two versions)."""
    out = []
    for folder, _, names in os.walk(root):
        rel = os.path.relpath(folder, root).replace(os.sep, "/")
        out += [name if rel == "." else f"{rel}/{name}" for name in names
                if name.endswith(".py")]
    return out


def modules_key(modules: frozenset[str] | None) -> str:
    """A cache key part naming the loaded modules ("" for the whole package)."""
    if modules is None:
        return ""
    return hashlib.sha256("\n".join(sorted(modules)).encode()).hexdigest()[:24]


def load_version(index: SimpleIndex, file: DistFile, cache_dir: Path,
                 modules: frozenset[str] | None = None, sources: Sources | None = None
                 ) -> LoadedVersion:
    """The condensed API of the wheel ``file`` (only ``modules`` and the packages above
    them, when given), from the cache when it is there; ``sources``: what
    ``fetch_version`` already gave for it."""
    cache = Cache(cache_dir)
    src = cache.path("src", file.url, file.sha256)
    api_file = _api_entry(file, cache_dir, modules)
    cached = read_api(api_file) if src.is_dir() else None
    if cached is not None:
        how, nbytes = (sources.how, sources.nbytes) if sources is not None else ("cache", 0)
        return LoadedVersion(cached, src, cached.package, how, nbytes, modules=modules)
    return _built(file, cache_dir, modules, sources or fetch_version(index, file, cache_dir))


def _built(file: DistFile, cache_dir: Path, modules: frozenset[str] | None, sources: Sources
           ) -> LoadedVersion:
    """griffe's load of ``sources`` (only ``modules``, when given), condensed and cached."""
    try:
        with _no_cycle_collection(), _loadable(sources.root, sources.package, modules) as where:
            api, loaded = build_api(where, sources.package, str(file.version))
    except Exception as exc:
        raise DriftError(f"{file.filename}: griffe could not load {sources.package!r}: "
                         f"{type(exc).__name__}: {exc}") from None
    cache = Cache(cache_dir)
    cache.write(_api_entry(file, cache_dir, modules), json.dumps(api.to_json()).encode())
    return LoadedVersion(api, cache.path("src", file.url, file.sha256), sources.package,
                         sources.how, sources.nbytes, loaded, modules)


def _api_entry(file: DistFile, cache_dir: Path, modules: frozenset[str] | None) -> Path:
    return Cache(cache_dir).path("api", file.url, file.sha256,
                                 *([modules_key(modules)] if modules is not None else []))


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The cycle collector off while ``ast`` and griffe build trees that stay alive: its
    passes over them found nothing and took a fifth to a quarter of the CPU."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_VIEW_PREFIX = "pinbump-api-"
_VIEW_PATH = re.compile(rf"[^\s`'\"]*/{_VIEW_PREFIX}[^/\s]*/")


@contextmanager
def _loadable(root: Path, package: str, modules: frozenset[str] | None) -> Iterator[Path]:
    """Where griffe loads from: the sources, or a copy of only ``modules`` (and the
    packages above them), removed afterwards (griffe keeps the lines it read)."""
    if modules is None:
        yield root
        return
    with tempfile.TemporaryDirectory(prefix=_VIEW_PREFIX) as tmp:
        ModuleReach(root, package).view({package, *modules}, Path(tmp))  # the package at least
        yield Path(tmp)


def reached_modules(old: Sources, new: Sources, paths: Iterable[str], cache_dir: Path
                    ) -> frozenset[str]:
    """The modules of either version that the target's ``paths`` go through, and, for a
    name the new version no longer has where the target reaches it, the new version's
    modules that define that name (a move), loaded in both versions alike. Kept in the
    cache per pair of versions and set of paths."""
    wanted = sorted(set(paths))
    entry = _reach_entry(old, new, wanted, cache_dir)
    stored = _stored_reach(entry)
    if stored is not None:
        return stored
    with _no_cycle_collection():
        found = _reach_both(old, new, wanted)
    Cache(cache_dir).write(entry, json.dumps(sorted(found)).encode())
    return found


def _reach_entry(old: Sources, new: Sources, wanted: list[str], cache_dir: Path) -> Path:
    return Cache(cache_dir).path("api", "reach1", old.root.name, new.root.name, *wanted)


def _stored_reach(entry: Path) -> frozenset[str] | None:
    try:
        stored = json.loads(entry.read_bytes())
        if isinstance(stored, list) and all(isinstance(m, str) for m in stored):
            return frozenset(stored)
    except (OSError, ValueError):
        pass
    return None


def _reach_both(old: Sources, new: Sources, wanted: list[str]) -> frozenset[str]:
    old_reach, (new_reach, lost) = _reach_one(old, wanted)[0], _reach_one(new, wanted)
    return frozenset(old_reach.modules | new_reach.modules | new_reach.defining(lost))


def _reach_one(src: Sources, wanted: list[str]) -> tuple[ModuleReach, set[str]]:
    """The modules of one version that ``wanted`` goes through (``.modules``), and the last
    names of the paths that end at nothing there (in the new version: names that moved, or
    went)."""
    reach = ModuleReach(src.root, src.package)
    return reach, {p.rpartition(".")[2] for p in wanted if not reach.reach(p)}


def shipped_advisories() -> str:
    """The advisory file shipped for the built-in group (bot/data/advisories.toml)."""
    return resources.files("bot").joinpath("data/advisories.toml").read_text("utf-8")


def api_breakages(old: LoadedVersion, new: LoadedVersion, cache_dir: Path
                  ) -> list[tuple[str, str]]:
    """griffe's own breaking-change finder over the two versions (cached per pair):
    (object path, one-line Markdown explanation)."""
    cache = Cache(cache_dir)
    path = _breakages_entry(old.root, new.root, old.modules, cache_dir)
    try:
        return [(str(a), str(b)) for a, b in json.loads(path.read_text())]
    except (OSError, ValueError, TypeError):
        pass
    lines = []
    with _no_cycle_collection(), _loadable(old.root, old.package, old.modules) as old_at, \
            _loadable(new.root, new.package, new.modules) as new_at:
        loaded = [v.loaded or griffe.load(v.package, search_paths=[str(at)],
                                          allow_inspection=False)
                  for v, at in ((old, old_at), (new, new_at))]
        for breakage in griffe.find_breaking_changes(loaded[0], loaded[1]):
            text = breakage.explain(style=griffe.ExplanationStyle.MARKDOWN).strip()  # type: ignore[arg-type]
            for root in (new.root, old.root):
                text = text.replace(str(root) + "/", "")
            text = _VIEW_PATH.sub("", text)  # a copy griffe loaded from, possibly gone now
            lines.append((breakage.obj.path, text.removeprefix("- ")))
    cache.write(path, json.dumps(lines).encode())
    return lines


def _breakages_entry(old_root: Path, new_root: Path, modules: frozenset[str] | None,
                     cache_dir: Path) -> Path:
    return Cache(cache_dir).path("api", "breakages2", old_root.name, new_root.name,
                                 *([modules_key(modules)] if modules is not None else []))


# -- the cold build, in worker processes -----------------------------------------------------
# both versions' modules: a smaller package is built in this process (flashinfer 0.6, ~470
# modules: two interpreters' start cost more than the side-by-side build saved on 2 busy
# cores; 0.7 is ~4,800)
MIN_WORKER_FILES = 1000


def build_apis(old: Sources, new: Sources, old_file: DistFile, new_file: DistFile,
               paths: Iterable[str], cache_dir: Path, min_files: int = MIN_WORKER_FILES
               ) -> bool:
    """The cold build of what ``reached_modules``, ``load_version`` and ``api_breakages``
    then read from the cache, in two worker processes side by side, one per version: each
    finds its version's reached modules; each loads the union with griffe and condenses it;
    the new version's worker then takes the old version's griffe tree (pickled) and runs
    griffe's breaking-change finder. The workers are fresh interpreters, not forks of this
    process: the target's texts held here are not in their memory, and no griffe tree (two
    of flashinfer 0.7's reached modules: ~70 MB) ever is in this one. True when it built;
    False, with nothing changed, when the entries are there, the package is small
    (``min_files`` modules in both versions: starting two interpreters costs more than it
    saves), or a worker could not start or died (the caller builds in-process). griffe's
    failure to load a version is raised as the in-process build raises it."""
    wanted = sorted(set(paths))
    entry = _reach_entry(old, new, wanted, cache_dir)
    modules = _stored_reach(entry)
    if modules is not None and all(path.is_file() for path in (
            _breakages_entry(old.root, new.root, modules, cache_dir),
            *(_api_entry(f, cache_dir, modules) for f in (old_file, new_file)))):
        return False  # warm (an entry of an older format is rebuilt by the caller)
    if old.files + new.files < min_files or not sys.executable:
        return False
    try:
        with _Worker() as for_old, _Worker() as for_new:
            for_old.send(("reach", old, wanted))
            for_new.send(("reach", new, wanted))
            modules = for_old.receive()[0]
            reached, lost = for_new.receive()
            # where the lost names went: each worker searches half of the new version's files
            for_old.send(("defining", new, lost, 0))
            for_new.send(("defining", new, lost, 1))
            modules = frozenset(modules | reached | for_old.receive() | for_new.receive())
            Cache(cache_dir).write(entry, json.dumps(sorted(modules)).encode())
            for_old.send(("load", old_file, old, modules, cache_dir, True))
            for_new.send(("load", new_file, new, modules, cache_dir, False))
            old_tree = for_old.receive()  # a pickle, unpickled only in the new one's worker
            for_new.receive()
            for_new.send(("breakages", cache_dir), then=old_tree)
            del old_tree
            for_new.receive()
    except _WorkerLost:
        return False
    return True


class _WorkerLost(Exception):
    """A worker process could not be started, or ended without answering."""


class _Worker:
    """One worker process (``bot.adapters.apiworker``), spoken to in pickles over its
    standard input and output. It imports pinbump from this process's own import path: a
    ``bot`` folder in the working directory (a target's) is never imported in its place."""

    def __init__(self) -> None:
        boot = (f"import sys; sys.path[:] = {sys.path!r}; "
                "from bot.adapters.apiworker import main; main()")
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", boot], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError as exc:
            raise _WorkerLost(str(exc)) from None

    def __enter__(self) -> _Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if exc[0] is not None:
            self.proc.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            with suppress(OSError):
                stream.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def send(self, request: tuple[Any, ...], then: bytes = b"") -> None:
        """``request``, and ``then`` (a pickle the worker reads from the stream itself)."""
        assert self.proc.stdin is not None
        try:
            pickle.dump(request, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self.proc.stdin.write(then)
            self.proc.stdin.flush()
        except (OSError, ValueError) as exc:
            raise _WorkerLost(str(exc)) from None

    def receive(self) -> Any:
        assert self.proc.stdout is not None
        try:
            status, value = pickle.load(self.proc.stdout)
        except (OSError, EOFError, ValueError, pickle.UnpicklingError) as exc:
            raise _WorkerLost(str(exc)) from None
        if status == "error":
            raise DriftError(str(value))
        return value


def serve(requests: BinaryIO, replies: BinaryIO) -> None:
    """A worker's loop: one reply, ``("ok", value)`` or ``("error", message)``, per request,
    until its input ends."""
    held: dict[str, Any] = {}
    while True:
        try:
            request = pickle.load(requests)
        except EOFError:
            return
        try:
            reply: tuple[str, Any] = ("ok", _serve_one(request, held, requests))
        except PinbumpError as exc:
            reply = ("error", str(exc))
        pickle.dump(reply, replies, protocol=pickle.HIGHEST_PROTOCOL)
        replies.flush()


def _serve_one(request: tuple[Any, ...], held: dict[str, Any], requests: BinaryIO) -> Any:
    step, *args = request
    if step == "reach":
        src, wanted = args
        held["reach"], lost = _reach_one(src, wanted)
        return held["reach"].modules, lost
    if step == "defining":
        src, lost, half = args
        reach = held["reach"] if held["reach"].root == src.root else ModuleReach(src.root,
                                                                                src.package)
        return reach.defining(lost, half=half)
    if step == "load":
        file, src, modules, cache_dir, give = args
        loaded = _built(file, cache_dir, modules, src)  # its condensed API is in the cache
        # griffe's finder needs the trees, not the condensed APIs: those are dropped
        held["loaded"] = loaded = replace(loaded, api=ApiIndex(loaded.api.package,
                                                               loaded.api.version))
        return pickle.dumps(loaded, protocol=pickle.HIGHEST_PROTOCOL) if give else None
    if step == "breakages":  # the old version follows, read from the stream (never whole)
        (cache_dir,) = args
        api_breakages(pickle.load(requests), held["loaded"], cache_dir)
        return None
    raise ValueError(f"unknown step {step!r}")


# -- the modules a target reaches ------------------------------------------------------------
@dataclass
class _ModuleNames:
    """What one module binds at its top level, read with ``ast`` (no griffe): names it
    imports (name -> dotted path), names it defines, modules it star-imports."""

    imports: dict[str, str] = field(default_factory=dict)
    defined: set[str] = field(default_factory=set)
    stars: list[str] = field(default_factory=list)


def _relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute module of ``from <level dots><name> import ...`` inside ``module``."""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, *([name] if name else [])])


def _top_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's top-level statements, those inside if/try/with blocks included."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.With)):
            yield from _top_statements(node.body)
            yield from _top_statements(getattr(node, "orelse", []))
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody,
                          *(h.body for h in node.handlers)):
                yield from _top_statements(block)


def _module_names(text: str, module: str, is_package: bool) -> _ModuleNames:
    out = _ModuleNames()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # not loadable: no names
        return out
    for node in _top_statements(tree.body):
        if isinstance(node, ast.ImportFrom):
            base = _relative(module, is_package, node.level, node.module) if node.level \
                else (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    out.stars.append(base)
                else:
                    out.imports[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out.imports[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    out.imports.setdefault(top, top)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out.defined.update(t.id for t in targets if isinstance(t, ast.Name))
    return out


class ModuleReach:
    """Which modules of a package's sources (under ``root``) hold the objects a target
    reaches, following re-exports (``from .gemm_base import mm_fp4``), submodules and
    star imports: griffe then loads only those (flashinfer 0.7 is 2,854 modules and 92 MB
    of source, of which a target reaches a few dozen)."""

    def __init__(self, root: Path, package: str) -> None:
        self.root = root
        self.package = package
        self._names: dict[str, _ModuleNames | None] = {}
        self.modules: set[str] = set()

    def file(self, module: str) -> Path | None:
        base = self.root.joinpath(*module.split("."))
        for path in (base / "__init__.py", base.with_suffix(".py")):
            if path.is_file():
                return path
        return None

    def names(self, module: str) -> _ModuleNames | None:
        if module not in self._names:
            path = self.file(module)
            self._names[module] = None if path is None else _module_names(
                path.read_text("utf-8", "replace"), module, path.name == "__init__.py")
        return self._names[module]

    def reach(self, path: str, seen: set[str] | None = None) -> bool:
        """Add the modules ``path`` goes through; True when it ends at something found (a
        module, or a name its module defines or imports)."""
        seen = set() if seen is None else seen
        parts = path.split(".")
        if parts[0] != self.package or path in seen or len(seen) > 200:
            return False
        seen.add(path)
        module = parts[0]
        for i, name in enumerate(parts[1:], start=1):
            info = self.names(module)
            if info is None:
                return False
            self.modules.add(module)
            rest = parts[i + 1:]
            found = name in info.defined
            if name in info.imports:
                found = self.reach(".".join([info.imports[name], *rest]), seen) or found
            if self.file(f"{module}.{name}") is not None:
                module = f"{module}.{name}"
                continue
            if not found:
                found = any(self.reach(".".join([star, *parts[i:]]), seen)
                            for star in info.stars)
            return found
        self.modules.add(module)
        return self.names(module) is not None

    def defining(self, names: Iterable[str], half: int | None = None) -> set[str]:
        """Modules with a top-level ``def``/``class`` of one of ``names`` (one byte search
        per file, then ``ast`` on the few that match): where an object that left its module
        may have gone. ``half`` (0 or 1): only every other file, from that one (two
        processes share the search)."""
        wanted = set(names)
        if not wanted:
            return set()
        either = b"|".join(re.escape(n.encode()) for n in sorted(wanted))
        # one pattern per keyword: a literal start is searched for fast (one "def|class"
        # pattern was four times slower over flashinfer 0.7's 92 MB)
        needles = [re.compile(word + rb"\s+(" + either + rb")\b") for word in (rb"def",
                                                                              rb"class")]
        out = set()
        files = sorted(self.root.rglob("*.py"))
        for path in files if half is None else files[half::2]:
            data = path.read_bytes()
            hits = {m.decode() for needle in needles for m in needle.findall(data)}
            if not hits:
                continue
            rel = path.relative_to(self.root).with_suffix("").parts
            module = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
            info = self.names(module)
            if info is not None and hits & info.defined:
                out.add(module)
        return out

    def view(self, modules: Iterable[str], dest: Path) -> None:
        """A copy of the sources holding only ``modules`` and the packages above them;
        the other submodules of those packages are there empty, so a re-export of a module
        not loaded (``from .x import x`` in a package) stays an alias that does not resolve
        rather than one that names itself (griffe's cyclic alias)."""
        wanted: set[Path] = set()
        for module in modules:
            parts = module.split(".")
            for i in range(1, len(parts) + 1):
                path = self.file(".".join(parts[:i]))
                if path is not None:
                    wanted.add(path)
        packages = {p.parent for p in wanted if p.name == "__init__.py"}
        for folder in sorted(packages):
            for child in sorted(folder.iterdir()):
                stub = child / "__init__.py" if child.is_dir() else child
                if stub.suffix == ".py" and stub.is_file() and stub not in wanted:
                    target = dest / stub.relative_to(self.root)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(b"")
        for path in wanted:
            target = dest / path.relative_to(self.root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
