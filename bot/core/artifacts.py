"""The GPU gate installs what a target deploys and accounts for what each kernel loaded.
Pure: install specs are validated and turned into pip arguments; file listings of the installs
and of FlashInfer's JIT workspace (gathered by the adapter) become an account of which kernels
came prebuilt (flashinfer-jit-cache AOT modules, flashinfer-cubin cubins) and which were built
or downloaded on the runner.

FlashInfer's layout (``flashinfer/jit/env.py``, ``jit/core.py``): a JIT-built module is
``<workspace>/.cache/flashinfer/<version>/<archs>/cached_ops/<name>/<name>.so``; an AOT module
of flashinfer-jit-cache is ``<jit cache dir>/<name>/<name>.so`` inside the
``flashinfer_jit_cache`` package; cubins come from the ``flashinfer_cubin`` package when it is
installed, else they are downloaded into ``<workspace>/.cache/flashinfer/cubins/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from bot.errors import InputError
from bot.render.markdown import code_span, escape_text

_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{0,98}[a-z0-9])?$")
_JIT = re.compile(r"^\.cache/flashinfer/[^/]+/[^/]+/cached_ops/(?P<name>[^/]+)/(?P=name)\.so$")
_AOT = re.compile(r"(?:^|/)(?P<name>[^/]+)/(?P=name)\.so$")
_DOWNLOADED_CUBIN = re.compile(r"^\.cache/flashinfer/cubins/(?P<rel>.+)$")
JIT_CACHE = "flashinfer-jit-cache"
CUBIN = "flashinfer-cubin"


@dataclass(frozen=True)
class InstallSpec:
    """One package the target deploys: installed at exactly ``version`` from ``index_urls``
    (the first is pip's --index-url, the others --extra-index-url)."""

    package: str
    version: str
    index_urls: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"package": self.package, "version": self.version,
                "index_urls": list(self.index_urls)}


def _url(where: str, url: object) -> str:
    if not isinstance(url, str) or not url or url != url.strip() or any(
            c.isspace() or ord(c) < 32 for c in url):
        raise InputError(f"{where}: {url!r} is not an index URL")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.username \
            or parts.password or parts.fragment:
        raise InputError(f"{where}: {url!r} is not an http(s) index URL without credentials")
    if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise InputError(f"{where}: {url!r}: plain http is allowed for loopback only")
    return url


def install_spec(where: str, package: object, version: object, urls: object) -> InstallSpec:
    """Validate one (package, version, index URLs): each becomes an argument of pip, so none
    may be an option, a path, a URL with credentials, or anything but what it claims."""
    if not isinstance(package, str) or not _NAME.match(canonicalize_name(package)) \
            or canonicalize_name(package) != package.lower().replace("_", "-"):
        raise InputError(f"{where}: {package!r} is not a package name")
    if not isinstance(version, str) or len(version) > 64:
        raise InputError(f"{where}: {package}: {version!r} is not a version")
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise InputError(f"{where}: {package}: {version!r} is not a version") from None
    if str(parsed) != version:
        raise InputError(f"{where}: {package}: {version!r} is not a normalized version "
                         f"(use {str(parsed)!r})")
    if not isinstance(urls, (list, tuple)) or not urls:
        raise InputError(f"{where}: {package}: no index URL to install it from")
    return InstallSpec(canonicalize_name(package), str(parsed),
                       tuple(_url(f"{where}: {package}", u) for u in urls))


def parse_install_list(raw: object, where: str) -> list[InstallSpec]:
    """``[{"package", "version", "index_urls"}, ...]`` (JSON read by the adapter)."""
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{where}: expected a non-empty list of "
                         '{"package", "version", "index_urls"} objects')
    specs = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or set(item) != {"package", "version", "index_urls"}:
            raise InputError(f"{where}: item {i}: expected exactly the keys package, version "
                             "and index_urls")
        specs.append(install_spec(f"{where}: item {i}", item["package"], item["version"],
                                  item["index_urls"]))
    names = [s.package for s in specs]
    if len(set(names)) != len(names):
        raise InputError(f"{where}: a package is listed twice")
    return specs


def pip_install_args(spec: InstallSpec, target: str) -> list[str]:
    """pip arguments installing ``spec`` alone into ``target``: binary wheels only, no
    dependencies (the runner provides torch and the rest), only the spec's own indexes."""
    args = ["install", "--quiet", "--no-deps", "--only-binary=:all:", "--no-input",
            "--disable-pip-version-check", "--upgrade", "--target", target,
            "--index-url", spec.index_urls[0]]
    for url in spec.index_urls[1:]:
        args += ["--extra-index-url", url]
    return [*args, f"{spec.package}=={spec.version}"]


def deploy_specs(pinned: Sequence[tuple[str, str]], indexes: Mapping[str, Sequence[str]],
                 where: str) -> list[InstallSpec]:
    """What a side deploys: each pinned (package, version) with the plan's indexes for it
    (``indexes``: package -> URLs of the runner's CUDA variant, in the plan's order)."""
    specs = []
    for package, version in pinned:
        urls = list(indexes.get(package, ()))
        specs.append(install_spec(f"{where}: {package}", package, version, urls))
    return specs


def with_version(specs: Iterable[InstallSpec], packages: Iterable[str], version: str
                 ) -> list[InstallSpec]:
    """The same installs with ``packages`` (a lead and its lockstep) moved to ``version``."""
    moved = set(packages)
    return [InstallSpec(s.package, version, s.index_urls) if s.package in moved else s
            for s in specs]


@dataclass
class ArtifactReport:
    """Where one side's kernels came from."""

    deployed: tuple[str, ...]  # the packages installed for this side
    aot_available: tuple[str, ...] = ()  # modules flashinfer-jit-cache ships
    cubins_available: int = 0  # cubin files flashinfer-cubin ships
    jit_built: tuple[str, ...] = ()  # modules compiled on the runner
    cubins_downloaded: tuple[str, ...] = ()  # cubins fetched at run time
    loaded: tuple[str, ...] = ()  # artifacts the processes opened (relative to their root)
    failures: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"deployed": list(self.deployed), "aot_available": list(self.aot_available),
                "cubins_available": self.cubins_available, "jit_built": list(self.jit_built),
                "cubins_downloaded": list(self.cubins_downloaded),
                "loaded": list(self.loaded), "failures": self.failures}

    def markdown(self, label: str) -> list[str]:
        aot = [x for x in self.loaded if x.startswith("jit-cache:")]
        cubins = [x for x in self.loaded if x.startswith("cubin:")]
        lines = [f"Artifacts ({label}): deployed {', '.join(self.deployed) or 'nothing'}; "
                 f"{len(aot)} AOT module(s) and {len(cubins)} cubin(s) loaded prebuilt, "
                 f"{len(self.jit_built)} module(s) JIT-built on the runner, "
                 f"{len(self.cubins_downloaded)} cubin(s) downloaded."]
        if self.jit_built:
            lines.append("JIT-built: " + ", ".join(code_span(n) for n in self.jit_built[:20]))
        lines += [f"- **{label}: {escape_text(f)}**" for f in self.failures]  # file names
        return lines


def _cubin_rel(rel: str) -> str:
    """A packaged cubin's path as FlashInfer looks it up (under ``flashinfer_cubin/cubins``)."""
    rest = rel.split("/", 1)[1]
    return rest.removeprefix("cubins/")


def _shipped(site_files: Iterable[str]) -> tuple[set[str], set[str]]:
    """The AOT modules flashinfer-jit-cache ships and the cubins flashinfer-cubin ships."""
    aot: set[str] = set()
    cubins: set[str] = set()
    for rel in site_files:
        if rel.startswith("flashinfer_jit_cache/"):
            m = _AOT.search(rel)
            if m:
                aot.add(m.group("name"))
        elif rel.startswith("flashinfer_cubin/") and rel.endswith(".cubin"):
            cubins.add(_cubin_rel(rel))
    return aot, cubins


def _made_at_run_time(workspace_files: Iterable[str]) -> tuple[set[str], set[str]]:
    """The modules JIT-built and the cubins downloaded into the workspace."""
    jit: set[str] = set()
    downloaded: set[str] = set()
    for rel in workspace_files:
        m = _JIT.match(rel)
        if m:
            jit.add(m.group("name"))
        d = _DOWNLOADED_CUBIN.match(rel)
        if d and rel.endswith(".cubin"):
            downloaded.add(d.group("rel"))
    return jit, downloaded


def _loaded_item(item: str) -> str | None:
    """One opened file as ``jit-cache:...``, ``cubin:...`` or ``jit:...``; None for others."""
    kind, _, rel = item.partition(":")
    if kind == "site" and rel.startswith("flashinfer_jit_cache/") and rel.endswith(".so"):
        return f"jit-cache:{rel.split('/', 1)[1]}"
    if kind == "site" and rel.startswith("flashinfer_cubin/") and rel.endswith(".cubin"):
        return f"cubin:{_cubin_rel(rel)}"
    if kind == "workspace" and _JIT.match(rel):
        return f"jit:{rel.rsplit('/', 1)[-1]}"
    return None


def account(deployed: Sequence[str], site_files: Iterable[str], workspace_files: Iterable[str],
            opened: Iterable[str]) -> ArtifactReport:
    """The account of one side. ``site_files``: paths relative to the install (``--target``)
    folder; ``workspace_files``: relative to its FLASHINFER_WORKSPACE_BASE; ``opened``: what its
    processes opened or mapped, already made relative (``site:...``, ``workspace:...``).
    A module flashinfer-jit-cache ships that was JIT-built instead, or a cubin flashinfer-cubin
    ships that was downloaded instead, is a failure: the target would not run what was tested."""
    aot, cubins = _shipped(site_files)
    jit, downloaded = _made_at_run_time(workspace_files)
    loaded = {x for x in map(_loaded_item, opened) if x is not None}
    report = ArtifactReport(tuple(deployed), tuple(sorted(aot)), len(cubins),
                            tuple(sorted(jit)), tuple(sorted(downloaded)), tuple(sorted(loaded)))
    if JIT_CACHE in deployed:
        for name in sorted(jit & aot):
            report.failures.append(f"{name} was JIT-built on the runner although "
                                   f"{JIT_CACHE} ships it prebuilt (the deployed module was "
                                   "not the one tested)")
    if CUBIN in deployed:
        for rel in sorted(downloaded & cubins):
            report.failures.append(f"cubin {rel} was downloaded at run time although "
                                   f"{CUBIN} ships it")
    return report
