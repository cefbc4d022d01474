"""The install environment a plan is checked for: Python versions, platform, marker values."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from packaging import tags
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from bot.core.models import DistFile

PYTHONS = tuple(f"3.{minor}" for minor in range(8, 16))
MANYLINUX = [f"manylinux_2_{m}_x86_64" for m in range(40, 4, -1)] + [
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"]


@dataclass(frozen=True)
class Environment:
    """Linux x86-64 and the Python versions a target supports (its requires-python)."""

    pythons: tuple[str, ...]
    marker_python: str

    @classmethod
    def for_target(cls, requires_python: str | None, python: str | None = None) -> Environment:
        spec = _specifier(requires_python)
        supported = tuple(v for v in PYTHONS if Version(v) in spec) or ("3.10",)
        if python:
            supported = (python,)
        return cls(pythons=supported, marker_python=python or supported[0])

    @cached_property
    def wheel_tags(self) -> frozenset[str]:
        out: set[str] = set()
        for py in self.pythons:
            version = tuple(int(x) for x in py.split("."))
            out.update(str(t) for t in tags.cpython_tags(version, platforms=MANYLINUX))
            out.update(str(t) for t in tags.compatible_tags(version, platforms=MANYLINUX))
        return frozenset(out)

    def installable(self, file: DistFile) -> bool:
        """A wheel of this file installs on one of the supported Pythons."""
        if not file.is_wheel or not (file.tags & self.wheel_tags):
            return False
        spec = _specifier(file.requires_python)
        return any(Version(p) in spec for p in self.pythons)

    def markers(self, extra: str = "") -> dict[str, str]:
        return {
            "python_version": self.marker_python,
            "python_full_version": f"{self.marker_python}.0",
            "os_name": "posix", "sys_platform": "linux", "platform_system": "Linux",
            "platform_machine": "x86_64", "platform_release": "", "platform_version": "",
            "implementation_name": "cpython", "implementation_version": f"{self.marker_python}.0",
            "platform_python_implementation": "CPython", "extra": extra,
        }

    def applies(self, req: Requirement, extras: frozenset[str] = frozenset()) -> bool:
        """Whether a Requires-Dist line is active here for the given extras of its owner."""
        if req.marker is None:
            return True
        marker: Marker = req.marker
        return any(marker.evaluate(self.markers(e)) for e in ("", *sorted(extras)))

    def describe(self) -> str:
        return f"Linux x86-64, Python {', '.join(self.pythons)}"


def _specifier(text: str | None) -> SpecifierSet:
    try:
        return SpecifierSet(text or "")
    except InvalidSpecifier:
        return SpecifierSet("")
