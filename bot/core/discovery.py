"""Find where a target pins the packages of a group. Parsing is pure; walking is a thin adapter."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from bot.core.models import Pin
from bot.errors import InputError

SKIP_DIRS = {".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", "build", "dist",
             "site-packages", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
PYPROJECT_GLOB = "pyproject*.toml"
REQUIREMENTS_GLOB = "requirements*.txt"


@dataclass
class TomlFile:
    """A parsed pyproject: the pins found in it, its requires-python and its [tool.pinbump]."""

    path: str
    pins: list[Pin] = field(default_factory=list)
    requires_python: str | None = None
    tool_config: dict[str, Any] | None = None


def load_toml(text: str, path: str) -> tomlkit.TOMLDocument:
    """Parse TOML, turning tomlkit's error into one line that names the file and line."""
    try:
        return tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        msg = str(exc).split(" at line")[0]
        raise InputError(f"{path}:{exc.line}: malformed TOML: {msg} (column {exc.col})") from None


def _literal_lines(text: str) -> dict[str, list[int]]:
    """Map each quoted string literal on a line to the line numbers where it stands."""
    out: dict[str, list[int]] = {}
    pattern = re.compile(r"'''.*?'''|\"\"\".*?\"\"\"|'[^'\n]*'|\"(?:[^\"\\\n]|\\.)*\"", re.S)
    for m in pattern.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        out.setdefault(m.group(0), []).append(line)
    return out


def _requirement_arrays(doc: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    project = doc.get("project", {})
    if isinstance(project, dict):
        yield "project.dependencies", project.get("dependencies", [])
        for extra, items in dict(project.get("optional-dependencies", {}) or {}).items():
            yield f"project.optional-dependencies.{extra}", items
    for group, items in dict(doc.get("dependency-groups", {}) or {}).items():
        yield f"dependency-groups.{group}", items


def parse_pyproject(text: str, path: str, names: set[str]) -> TomlFile:
    """Pins of ``names`` in [project] dependencies, optional dependencies and dependency groups."""
    doc = load_toml(text, path)
    lines = _literal_lines(text)
    used: dict[str, int] = {}
    result = TomlFile(path=path)
    project = doc.get("project")
    if isinstance(project, dict) and isinstance(project.get("requires-python"), str):
        result.requires_python = str(project["requires-python"])
    tool = doc.get("tool")
    if isinstance(tool, dict) and "pinbump" in tool:
        result.tool_config = tool["pinbump"].unwrap() if hasattr(tool["pinbump"], "unwrap") \
            else dict(tool["pinbump"])
    for section, items in _requirement_arrays(doc):
        if not isinstance(items, list):
            raise InputError(f"{path}: [{section}] must be an array of requirement strings")
        for item in items:
            if not isinstance(item, str):
                continue  # {include-group = "..."} in dependency groups
            literal = item.as_string() if hasattr(item, "as_string") else f'"{item}"'
            candidates = lines.get(literal, [])
            index = used.get(literal, 0)
            used[literal] = index + 1
            line = candidates[index] if index < len(candidates) else 0
            pin = _pin(str(item), path, line, section, names)
            if pin:
                result.pins.append(pin)
    return result


def _pin(text: str, path: str, line: int, section: str, names: set[str]) -> Pin | None:
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        # Only complain about strings that look like they name one of our packages.
        head = re.split(r"[\s\[<>=!~;@]", text.strip(), maxsplit=1)[0]
        if canonicalize_name(head or "-") in names:
            detail = str(exc).splitlines()[0]
            raise InputError(f"{path}:{line}: invalid requirement {text!r}: {detail}") from None
        return None
    name = canonicalize_name(req.name)
    if name not in names:
        return None
    return Pin(package=name, requirement=text, file=path, line=line, section=section)


def parse_requirements(text: str, path: str, names: set[str]) -> list[Pin]:
    """Pins of ``names`` in a pip requirements file (comments, options, continuations)."""
    pins: list[Pin] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if not line or line.startswith("-"):
            continue
        pin = _pin(line, path, start, "requirements", names)
        if pin:
            pins.append(pin)
    return pins


def iter_target_files(root: Path, patterns: Iterable[str]) -> Iterator[Path]:
    """Files under ``root`` whose name matches one of ``patterns``, skipping vendored trees."""
    pats = tuple(patterns)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if any(fnmatch.fnmatch(name, p) for p in pats):
                yield Path(dirpath) / name


def read_text(path: Path, root: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path.relative_to(root).as_posix()}: not UTF-8 text ({exc.reason})") \
            from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None


@dataclass
class Target:
    root: Path
    tomls: list[TomlFile]
    pins: list[Pin]

    def pins_of(self, package: str) -> list[Pin]:
        return [p for p in self.pins if p.package == package]

    def requires_python(self, package: str) -> str | None:
        """requires-python of the pyproject that pins ``package`` (else of any pyproject)."""
        files = {p.file for p in self.pins_of(package)}
        for toml in self.tomls:
            if toml.path in files and toml.requires_python:
                return toml.requires_python
        return next((t.requires_python for t in self.tomls if t.requires_python), None)


def discover(root: Path, names: set[str]) -> Target:
    """Every pyproject*.toml and requirements*.txt under ``root`` and the pins of ``names``."""
    if not root.is_dir():
        raise InputError(f"{root}: not a directory (pass the target repository with --repo)")
    tomls: list[TomlFile] = []
    pins: list[Pin] = []
    for path in iter_target_files(root, (PYPROJECT_GLOB, REQUIREMENTS_GLOB)):
        rel = path.relative_to(root).as_posix()
        text = read_text(path, root)
        if path.suffix == ".toml":
            toml = parse_pyproject(text, rel, names)
            tomls.append(toml)
            pins.extend(toml.pins)
        else:
            pins.extend(parse_requirements(text, rel, names))
    return Target(root=root, tomls=tomls, pins=pins)
