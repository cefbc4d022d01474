"""Where each package of a group is published: one ordered list of indexes per package and
CUDA variant. Pure: the built-in data, the policy and the target's own declarations in; the
model out. The index adapter fetches what the model names; the resolver reads the answers."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import canonicalize_name

from bot.core.models import Channel
from bot.errors import ConfigError

DEFAULT_FLASHINFER_WHL = "https://flashinfer.ai/whl"
CHANNELS = tuple(c.value for c in Channel)
_VARIANT = re.compile(r"^cu\d{3}$")
# ".../cu$(echo $CUDA_VERSION | ...)", ".../cu${CU}", ".../cu$CU": one index per CUDA variant.
_VARIANT_TEMPLATE = re.compile(r"^(?P<base>https?://[^\s\"'$]+?)/cu(?:\$\(|\$\{|\$[A-Za-z_])")


@dataclass(frozen=True)
class IndexRef:
    """One index a package is looked up on."""

    url: str
    origin: str  # "built-in", "requirements/cuda.txt:3", "pinbump.toml", "--index-url"
    variant: str = ""  # "cu130" for FlashInfer's per-CUDA-variant indexes
    flat: bool = False  # a --find-links page (one flat list of files), not a simple index


@dataclass(frozen=True)
class IndexDecl:
    """An index the target itself declares, and the packages it serves there."""

    url: str  # may end in "{variant}" (a shell-computed cuXYZ suffix)
    option: str  # --index-url | --extra-index-url | --find-links | uv | uv-default
    file: str
    line: int
    packages: frozenset[str]

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class PackageData:
    stable: tuple[str, ...] = ("{pypi}",)
    nightly: tuple[str, ...] = ()
    providers: str = ""  # regex of per-architecture provider names (jit-cache 0.7+), full match
    moved: str = ""  # the fix to print when the package is missing from an index it left


@dataclass(frozen=True)
class BuiltinData:
    base: str = DEFAULT_FLASHINFER_WHL
    cuda_variants: tuple[str, ...] = ()
    packages: Mapping[str, PackageData] = field(default_factory=dict)


def parse_builtin(raw: Mapping[str, Any], where: str) -> BuiltinData:
    """The shipped index model (bot/data/<group>.toml); a broken file is a ConfigError."""
    def strings(key: str, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: key {key!r} must be an array of strings")
        return tuple(value)

    packages: dict[str, PackageData] = {}
    for name, table in dict(raw.get("packages", {})).items():
        providers = str(table.get("providers", ""))
        try:
            re.compile(providers)
        except re.error as exc:
            raise ConfigError(f"{where}: key 'packages.{name}.providers' is not a regular "
                              f"expression ({exc})") from None
        packages[str(canonicalize_name(name))] = PackageData(
            stable=strings(f"packages.{name}.stable", table.get("stable", ["{pypi}"])),
            nightly=strings(f"packages.{name}.nightly", table.get("nightly", [])),
            providers=providers, moved=str(table.get("moved", "")))
    return BuiltinData(base=str(raw.get("base", DEFAULT_FLASHINFER_WHL)).rstrip("/"),
                       cuda_variants=strings("cuda-variants", raw.get("cuda-variants", [])),
                       packages=packages)


def variant_of(url: str) -> tuple[str, str]:
    """(url or template, variant): ``.../cu130`` -> (url, "cu130"); a shell-computed suffix
    ``.../cu$(...)`` -> (".../{variant}", "*"); anything else -> (url, "")."""
    url = url.strip().strip("\"'")
    m = _VARIANT_TEMPLATE.match(url)
    if m:
        return f"{m.group('base')}/{{variant}}", "*"
    last = url.rstrip("/").rsplit("/", 1)[-1]
    return url, last if _VARIANT.match(last) else ""


def cuda_variant(version: str) -> str | None:
    """A CUDA toolkit version as FlashInfer's index suffix: 12.9.1 -> cu129, 13.0 -> cu130."""
    m = re.fullmatch(r"\s*(\d{2})\.(\d)(?:\.\d+)*\s*", version)
    return f"cu{m.group(1)}{m.group(2)}" if m else None


@dataclass(frozen=True)
class IndexModel:
    indexes: Mapping[str, tuple[IndexRef, ...]]
    variants: tuple[str, ...] = ()
    providers: Mapping[str, str] = field(default_factory=dict)  # package -> provider regex
    hints: Mapping[str, str] = field(default_factory=dict)  # package -> the fix, filled in
    channel: Channel = Channel.STABLE

    def for_package(self, package: str) -> tuple[IndexRef, ...]:
        return self.indexes.get(package, ())

    def variant_based(self, package: str) -> bool:
        return any(r.variant for r in self.for_package(package))

    def is_provider(self, package: str, name: str) -> bool:
        """Whether ``name`` is one of ``package``'s per-architecture provider packages."""
        pattern = self.providers.get(package, "")
        return bool(pattern) and re.fullmatch(pattern, name) is not None

    def describe(self, package: str) -> str:
        return ", ".join(r.url for r in self.for_package(package)) or "(no index)"


def _norm(url: str) -> str:
    return url.rstrip("/")


def _expand(template: str, *, pypi: str, base: str, variants: Iterable[str]) -> list[
        tuple[str, str]]:
    """(url, variant) for one template; an empty FlashInfer base drops the {base} ones, and a
    mirror base replaces FlashInfer's host in the target's own declarations too."""
    if template.startswith(DEFAULT_FLASHINFER_WHL) and base != DEFAULT_FLASHINFER_WHL:
        template = "{base}" + template[len(DEFAULT_FLASHINFER_WHL):]
    if "{base}" in template and not base:
        return []
    url = template.replace("{pypi}", _norm(pypi)).replace("{base}", base)
    if "{variant}" in url:
        return [(url.replace("{variant}", v), v) for v in variants]
    return [(url, variant_of(url)[1])]


def _chosen_variants(variants: Iterable[str], decls: Sequence[IndexDecl],
                     data: BuiltinData | None) -> tuple[str, ...]:
    """The CUDA variants asked for, else those the target's index URLs name, else the
    built-in ones."""
    chosen = tuple(dict.fromkeys(variants))
    if not chosen:
        found = [variant_of(d.url)[1] for d in decls]
        chosen = tuple(dict.fromkeys(v for v in found if v not in ("", "*")))
    if not chosen and data:
        chosen = data.cuda_variants
    return chosen


@dataclass(frozen=True)
class _Expander:
    """Turns index templates into refs for one model (its PyPI, base and variants)."""

    pypi: str
    base: str
    variants: tuple[str, ...]

    def refs(self, template: str, origin: str, flat: bool = False) -> list[IndexRef]:
        return [IndexRef(url, origin, variant, flat=flat) for url, variant in
                _expand(template, pypi=self.pypi, base=self.base, variants=self.variants)]


def _builtin_refs(pdata: PackageData | None, channel: Channel, ex: _Expander) -> list[IndexRef]:
    """A package's built-in indexes for the channel (the default index when it has none)."""
    if pdata is None:
        return [r for t in ("{pypi}",) for r in ex.refs(t, "default index")]
    templates = (pdata.nightly or pdata.stable) if channel == Channel.NIGHTLY else pdata.stable
    return [r for t in templates for r in ex.refs(t, f"built-in ({channel})")]


def _with_declared(refs: list[IndexRef], package: str, decls: Sequence[IndexDecl],
                   ex: _Expander) -> list[IndexRef]:
    """The target's own declarations for the package: ``--index-url`` and uv sources replace
    the default index, the others add to it."""
    mine = [d for d in decls if package in d.packages]
    if any(d.option in ("--index-url", "uv", "uv-default") for d in mine):
        refs = [r for r in refs if _norm(r.url) != _norm(ex.pypi)]
    for d in mine:
        template = variant_of(d.url)[0]  # ".../cu$(...)" -> ".../{variant}"
        refs += ex.refs(template, d.where, flat=d.option == "--find-links")
    return refs


def _unique(refs: Iterable[IndexRef]) -> tuple[IndexRef, ...]:
    """The first ref of each URL (trailing slash ignored), in order."""
    seen: set[str] = set()
    unique = []
    for ref in refs:
        if _norm(ref.url) not in seen:
            seen.add(_norm(ref.url))
            unique.append(ref)
    return tuple(unique)


def build_model(members: Iterable[str], data: BuiltinData | None, *, pypi: str,
                base: str | None, configured: Mapping[str, tuple[str, ...]],
                config_source: str, decls: Iterable[IndexDecl] = (),
                variants: Iterable[str] = (), channel: Channel = Channel.STABLE
                ) -> IndexModel:
    """Indexes per package: built-in data (or the default index), then the target's own
    declarations (``--index-url`` and uv sources replace the default index for their packages,
    the others add), then [tool.pinbump.index] (replaces everything for its package)."""
    members = list(members)
    base = _norm(data.base if base is None and data else (base or ""))
    decls = list(decls)
    chosen = _chosen_variants(variants, decls, data)
    ex = _Expander(pypi, base, chosen)
    out: dict[str, tuple[IndexRef, ...]] = {}
    providers: dict[str, str] = {}
    hints: dict[str, str] = {}
    for package in members:
        pdata = data.packages.get(package) if data else None
        refs = _builtin_refs(pdata, channel, ex)
        if channel != Channel.NIGHTLY:
            refs = _with_declared(refs, package, decls, ex)
        if package in configured:
            refs = [r for t in configured[package] for r in ex.refs(t, config_source)]
        out[package] = _unique(refs)
        if pdata and pdata.providers:
            providers[package] = pdata.providers
        if pdata and pdata.moved:  # FlashInfer's own host, even when its indexes are off
            hints[package] = pdata.moved.replace("{base}", base or DEFAULT_FLASHINFER_WHL)
    used = tuple(v for v in chosen if any(r.variant == v for refs in out.values()
                                          for r in refs))
    return IndexModel(indexes=out, variants=used, providers=providers, hints=hints,
                      channel=channel)
