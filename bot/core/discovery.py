"""Find where a target pins the packages of a group, in a tree already read. Pure."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
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


@dataclass(frozen=True)
class TomlFile:
    """A pyproject's pins, its requires-python and its [tool.pinbump]."""

    path: str
    pins: tuple[Pin, ...] = ()
    requires_python: str | None = None
    tool_config: dict[str, Any] | None = None


@dataclass(frozen=True)
class PyProject:
    """A pyproject parsed once: the document, its text, requires-python and [tool.pinbump]."""

    path: str
    text: str
    doc: tomlkit.TOMLDocument
    requires_python: str | None
    tool_config: dict[str, Any] | None


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


_TOML_TYPES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean",
               list: "an array", dict: "a table"}


def _kind(value: Any) -> str:
    return next((name for t, name in _TOML_TYPES.items() if isinstance(value, t)),
                type(value).__name__)


def _key_line(text: str, key: str) -> int:
    """The line where ``key`` (a dotted TOML key) is defined, as a table header or a key."""
    last = re.escape(key.rsplit(".", 1)[-1])
    header = re.escape(key)
    m = re.search(rf"(?m)^\s*\[\[?\s*{header}\s*\]|^\s*[\"']?{last}[\"']?\s*=", text)
    return text.count("\n", 0, m.start()) + 1 if m else 0


def _where(path: str, text: str, key: str) -> str:
    line = _key_line(text, key)
    return f"{path}:{line}" if line else path


def _table(doc: Mapping[str, Any], key: str, path: str, text: str, what: str
           ) -> Mapping[str, Any]:
    value = doc.get(key.rsplit(".", 1)[-1], {})
    if not isinstance(value, dict):
        raise InputError(f"{_where(path, text, key)}: [{key}] must be {what}, got "
                         f"{_kind(value)}; fix the file")
    return value


def _requirement_arrays(doc: Mapping[str, Any], path: str, text: str
                        ) -> Iterator[tuple[str, Any]]:
    """Each array of requirements with its dotted key; a wrongly typed table is an error."""
    project = _table(doc, "project", path, text, "a table")
    yield "project.dependencies", project.get("dependencies", [])
    extras = _table(project, "project.optional-dependencies", path, text,
                    "a table of arrays of requirement strings")
    for extra, items in extras.items():
        yield f"project.optional-dependencies.{extra}", items
    groups = _table(doc, "dependency-groups", path, text,
                    "a table of arrays of requirement strings")
    for group, items in groups.items():
        yield f"dependency-groups.{group}", items


def read_pyproject(text: str, path: str) -> PyProject:
    """Parse a pyproject once: malformed TOML is an error naming the file and line."""
    doc = load_toml(text, path)
    requires_python = None
    project = doc.get("project")
    if isinstance(project, dict) and isinstance(project.get("requires-python"), str):
        requires_python = str(project["requires-python"])
    tool_config = None
    tool = doc.get("tool")
    if isinstance(tool, dict) and "pinbump" in tool:
        tool_config = tool["pinbump"].unwrap() if hasattr(tool["pinbump"], "unwrap") \
            else dict(tool["pinbump"])
    return PyProject(path, text, doc, requires_python, tool_config)


def _short(value: Any) -> str:
    text = repr(value.unwrap() if hasattr(value, "unwrap") else value)
    return text if len(text) <= 60 else text[:57] + "..."


def pyproject_pins(pyproject: PyProject, names: set[str]) -> TomlFile:
    """Pins of ``names`` in [project] dependencies, optional dependencies and dependency groups."""
    path = pyproject.path
    lines = _literal_lines(pyproject.text)
    used: dict[str, int] = {}
    pins: list[Pin] = []
    for section, items in _requirement_arrays(pyproject.doc, path, pyproject.text):
        if not isinstance(items, list):
            raise InputError(f"{_where(path, pyproject.text, section)}: [{section}] must be an "
                             f"array of requirement strings, got {_kind(items)}")
        for item in items:
            if isinstance(item, dict) and section.startswith("dependency-groups.") and \
                    isinstance(item.get("include-group"), str):
                continue  # {include-group = "..."} in dependency groups
            if not isinstance(item, str):
                raise InputError(f"{_where(path, pyproject.text, section)}: [{section}] must "
                                 f"hold requirement strings, got {_kind(item)} "
                                 f"{_short(item)}")
            literal = item.as_string() if hasattr(item, "as_string") else f'"{item}"'
            candidates = lines.get(literal, [])
            index = used.get(literal, 0)
            used[literal] = index + 1
            line = candidates[index] if index < len(candidates) else 0
            pin = _pin(str(item), path, line, section, names)
            if pin:
                pins.append(pin)
    return TomlFile(path, tuple(pins), pyproject.requires_python, pyproject.tool_config)


def parse_pyproject(text: str, path: str, names: set[str]) -> TomlFile:
    """Pins of ``names`` in one pyproject's text."""
    return pyproject_pins(read_pyproject(text, path), names)


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


def pin_files(paths: Iterable[str]) -> list[str]:
    """The pyproject*.toml and requirements*.txt among ``paths`` (relative posix paths, in the
    order given), skipping vendored and hidden folders."""
    out = []
    for path in paths:
        *dirs, name = path.split("/")
        if any(d in SKIP_DIRS or d.startswith(".") for d in dirs):
            continue
        if fnmatch.fnmatch(name, PYPROJECT_GLOB) or fnmatch.fnmatch(name, REQUIREMENTS_GLOB):
            out.append(path)
    return out


def _check_text(undecodable: Mapping[str, str]) -> None:
    for path in pin_files(undecodable):
        raise InputError(f"{path}: not UTF-8 text ({undecodable[path]})")


def read_pyprojects(files: Mapping[str, str], undecodable: Mapping[str, str] = MappingProxyType({})
                    ) -> list[PyProject]:
    """Every pyproject*.toml of the tree, parsed once (pins are picked later, by name)."""
    _check_text(undecodable)
    return [read_pyproject(files[p], p) for p in pin_files(files) if p.endswith(".toml")]


@dataclass(frozen=True)
class Target:
    root: Path
    tomls: tuple[TomlFile, ...]
    pins: tuple[Pin, ...]

    def pins_of(self, package: str) -> list[Pin]:
        return [p for p in self.pins if p.package == package]

    def requires_python(self, package: str) -> str | None:
        """requires-python of the pyproject that pins ``package`` (else of any pyproject)."""
        files = {p.file for p in self.pins_of(package)}
        for toml in self.tomls:
            if toml.path in files and toml.requires_python:
                return toml.requires_python
        return next((t.requires_python for t in self.tomls if t.requires_python), None)


def find_pins(root: Path, files: Mapping[str, str], names: set[str],
              undecodable: Mapping[str, str] = MappingProxyType({}),
              pyprojects: Sequence[PyProject] | None = None) -> Target:
    """The pins of ``names`` in the tree ``files`` (relative path -> text); ``pyprojects``
    are the already parsed pyproject files, when the caller has them."""
    parsed = {p.path: p for p in (pyprojects if pyprojects is not None
                                  else read_pyprojects(files, undecodable))}
    _check_text(undecodable)
    tomls: list[TomlFile] = []
    pins: list[Pin] = []
    for path in pin_files(files):
        if path.endswith(".toml"):
            toml = pyproject_pins(parsed[path], names)
            tomls.append(toml)
            pins.extend(toml.pins)
        else:
            pins.extend(parse_requirements(files[path], path, names))
    return Target(root=root, tomls=tuple(tomls), pins=tuple(pins))
