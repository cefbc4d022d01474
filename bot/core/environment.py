"""The install environments a plan is checked for: each platform the target deploys on (Linux
x86-64 and aarch64 by default) and each Python it supports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

from packaging import tags
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from bot.core.models import DistFile

PYTHONS = tuple(f"3.{minor}" for minor in range(8, 16))
RELEASED = tuple(f"3.{minor}" for minor in range(9, 15))  # checked for wheels: 3.9-3.14
_MACHINE = {"linux-x86_64": "x86_64", "linux-aarch64": "aarch64", "win-amd64": "AMD64",
            "macos-arm64": "arm64"}
_NAMES = {"linux-x86_64": "Linux x86-64", "linux-aarch64": "Linux aarch64",
          "win-amd64": "Windows x86-64", "macos-arm64": "macOS arm64"}


def platform_tags(platform: str) -> list[str]:
    if platform.startswith("linux-"):
        arch = platform.split("-", 1)[1]
        return [f"manylinux_2_{m}_{arch}" for m in range(40, 4, -1)] + [
            f"manylinux2014_{arch}", f"manylinux2010_{arch}", f"manylinux1_{arch}",
            f"linux_{arch}"]
    if platform == "win-amd64":
        return ["win_amd64"]
    return [f"macosx_{major}_0_arm64" for major in range(15, 10, -1)]


MANYLINUX = platform_tags("linux-x86_64")
_EVERY = "\x00"  # stands for each platform of a list: packaging's tag lists are products


@dataclass(frozen=True)
class TagTable:
    """The wheel tags one Python installs on one platform, as packaging lists them
    (``cpython_tags`` + ``compatible_tags``), held as the product it is: every
    interpreter-ABI pair of ``pairs`` with every platform tag of ``platforms``, and the
    pairs of ``anywhere`` with ``any``. About 40 entries instead of 1,100 tag objects."""

    pairs: frozenset[str]
    platforms: frozenset[str]
    anywhere: frozenset[str]

    def fits(self, wheel_tags: frozenset[str]) -> bool:
        for tag in wheel_tags:
            pair, _, platform = tag.rpartition("-")
            if (pair in self.pairs and platform in self.platforms) or (
                    platform == "any" and pair in self.anywhere):
                return True
        return False

    def expand(self) -> frozenset[str]:
        return frozenset({f"{p}-{plat}" for p in self.pairs for plat in self.platforms}
                         | {f"{p}-any" for p in self.anywhere})


def tag_table(platform: str, python: str) -> TagTable:
    """The tags of ``python`` on ``platform``: packaging's own lists, computed for one
    stand-in platform and spread over the platform's tags (the lists are products)."""
    version = tuple(int(x) for x in python.split("."))
    pairs: set[str] = set()
    anywhere: set[str] = set()
    for tag in (*tags.cpython_tags(version, platforms=[_EVERY]),
                *tags.compatible_tags(version, platforms=[_EVERY])):
        (pairs if tag.platform == _EVERY else anywhere).add(f"{tag.interpreter}-{tag.abi}")
    return TagTable(frozenset(pairs), frozenset(platform_tags(platform)), frozenset(anywhere))


@dataclass(frozen=True)
class Environment:
    """Platforms and the Python versions a target supports (its requires-python)."""

    pythons: tuple[str, ...]
    marker_python: str
    platforms: tuple[str, ...] = ("linux-x86_64",)

    @classmethod
    def for_target(cls, requires_python: str | None, python: str | None = None,
                   platforms: tuple[str, ...] = ("linux-x86_64",)) -> Environment:
        spec = _specifier(requires_python)
        supported = tuple(v for v in PYTHONS if Version(v) in spec) or ("3.10",)
        if python:
            supported = (python,)
        return cls(pythons=supported, marker_python=python or supported[0],
                   platforms=platforms)

    @cached_property
    def _tags(self) -> dict[tuple[str, str], TagTable]:
        return {(platform, py): tag_table(platform, py)
                for platform in self.platforms for py in self.pythons}

    @cached_property
    def wheel_tags(self) -> frozenset[str]:
        return frozenset(t for table in self._tags.values() for t in table.expand())

    def _fits(self, file: DistFile, platform: str, python: str) -> bool:
        return file.is_wheel and self._tags[(platform, python)].fits(file.tags) and \
            _allows(file.requires_python, python)

    def on_platform(self, files: Sequence[DistFile], platform: str) -> list[DistFile]:
        """The wheels of ``files`` that install on ``platform`` (for a checked Python)."""
        return [f for f in files if any(self._fits(f, platform, py)
                                        for py in self.checked_pythons())]

    def installable(self, file: DistFile) -> bool:
        """A wheel of this file installs on one of the supported Pythons and platforms."""
        return any(self._fits(file, p, py) for p, py in self._tags)

    def checked_pythons(self) -> tuple[str, ...]:
        """The Pythons every platform must have a wheel for: supported and released."""
        return tuple(p for p in self.pythons if p in RELEASED) or self.pythons[:1]

    def missing(self, files: list[DistFile] | tuple[DistFile, ...],
                requires_python: str | None = None) -> list[str]:
        """Where no wheel of ``files`` installs: "Linux aarch64", "Linux x86-64 (Python 3.13)".
        A platform missing for every Python is named once."""
        out = []
        pythons = [p for p in self.checked_pythons()
                   if Version(p) in _specifier(requires_python)] or list(self.checked_pythons())
        for platform in self.platforms:
            lacking = [py for py in pythons
                       if not any(self._fits(f, platform, py) for f in files)]
            if lacking and len(lacking) == len(pythons):
                out.append(describe_platform(platform))
            elif lacking:
                out.append(f"{describe_platform(platform)} (Python {', '.join(lacking)})")
        return out

    def markers(self, extra: str = "", platform: str | None = None) -> dict[str, str]:
        machine = _MACHINE.get(platform or self.platforms[0], "x86_64")
        return {
            "python_version": self.marker_python,
            "python_full_version": f"{self.marker_python}.0",
            "os_name": "posix", "sys_platform": "linux", "platform_system": "Linux",
            "platform_machine": machine, "platform_release": "", "platform_version": "",
            "implementation_name": "cpython", "implementation_version": f"{self.marker_python}.0",
            "platform_python_implementation": "CPython", "extra": extra,
        }

    def applies(self, req: Requirement, extras: frozenset[str] = frozenset()) -> bool:
        """Whether a Requires-Dist line is active on some platform for the given extras."""
        if req.marker is None:
            return True
        marker: Marker = req.marker
        return any(marker.evaluate(self.markers(e, p)) for e in ("", *sorted(extras))
                   for p in self.platforms)

    def applies_on(self, req: Requirement, platform: str,
                   extras: frozenset[str] = frozenset()) -> bool:
        if req.marker is None:
            return True
        return any(req.marker.evaluate(self.markers(e, platform)) for e in ("", *sorted(extras)))

    def describe(self) -> str:
        return f"{', '.join(describe_platform(p) for p in self.platforms)}, " \
               f"Python {', '.join(self.checked_pythons())}"


def describe_platform(platform: str) -> str:
    return _NAMES.get(platform, platform)


@lru_cache(maxsize=1024)
def _allows(requires_python: str | None, python: str) -> bool:
    """Whether ``python`` satisfies a file's Requires-Python (asked for every file of every
    version screened: a few distinct pairs, asked thousands of times)."""
    return Version(python) in _specifier(requires_python)


def _specifier(text: str | None) -> SpecifierSet:
    try:
        return SpecifierSet(text or "")
    except InvalidSpecifier:
        return SpecifierSet("")
