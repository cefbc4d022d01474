"""Find where a target pins the packages of a group, in a tree already read. Pure."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from bot.core import tomlread
from bot.core.indexmodel import IndexDecl, cuda_variant
from bot.core.models import FileKind, Pin, PinKind
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
    indexes: tuple[IndexDecl, ...] = ()  # [[tool.uv.index]] in use


@dataclass(frozen=True)
class PyProject:
    """A pyproject parsed once: the document, its text, requires-python and [tool.pinbump]."""

    path: str
    text: str
    doc: dict[str, Any]
    requires_python: str | None
    tool_config: dict[str, Any] | None


def load_toml(text: str, path: str) -> dict[str, Any]:
    """Parse TOML (read only: ``tomlread``); malformed TOML is one line naming the file and
    line, in tomlkit's words, which say more than the standard library's."""
    try:
        return tomlread.load(text)
    except tomlread.TOMLDecodeError:
        pass
    import tomlkit
    import tomlkit.exceptions

    try:
        return tomlkit.parse(text).unwrap()  # the one parser is stricter than the other
    except tomlkit.exceptions.ParseError as exc:
        msg = str(exc).split(" at line")[0]
        raise InputError(f"{path}:{exc.line}: malformed TOML: {msg} (column {exc.col})") from None


_TOML_TYPES = {str: "a string", bool: "a boolean", int: "an integer", float: "a number",
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
    lines = tomlread.string_lines(pyproject.text)
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
            candidates = lines.get(item, [])
            index = used.get(item, 0)
            used[item] = index + 1
            line = candidates[index] if index < len(candidates) else 0
            pin = _pin(str(item), path, line, section, names)
            if pin:
                pins.append(pin)
    indexes = _uv_indexes(pyproject.doc, path, lines)
    return TomlFile(path, tuple(pins), pyproject.requires_python, pyproject.tool_config,
                    tuple(indexes))


def parse_pyproject(text: str, path: str, names: set[str]) -> TomlFile:
    """Pins of ``names`` in one pyproject's text."""
    return pyproject_pins(read_pyproject(text, path), names)


def _uv_indexes(doc: dict[str, Any], path: str, lines: dict[str, list[int]]
                ) -> list[IndexDecl]:
    """[[tool.uv.index]] with [tool.uv.sources]: a package sourced from a named index is looked
    up there only; a non-explicit index serves every package (the packages are filled in by
    ``scan``, which knows what the file pins)."""
    tool = doc.get("tool")
    uv = tool.get("uv") if isinstance(tool, dict) else None
    if not isinstance(uv, dict):
        return []
    named: dict[str, tuple[str, bool, bool]] = {}
    indexes = uv.get("index", [])
    if not isinstance(indexes, list):
        raise InputError(f"{path}: [tool.uv] index must be an array of tables "
                         f"([[tool.uv.index]]), got {_kind(indexes)}; fix the file")
    for entry in indexes:
        if isinstance(entry, dict) and isinstance(entry.get("url"), str):
            named[str(entry.get("name", entry["url"]))] = (
                str(entry["url"]), bool(entry.get("explicit", False)),
                bool(entry.get("default", False)))
    out = []
    sources = uv.get("sources", {})
    for package, source in (sources.items() if isinstance(sources, dict) else []):
        entries = source if isinstance(source, list) else [source]
        for item in entries:
            if isinstance(item, dict) and str(item.get("index", "")) in named:
                url = named[str(item["index"])][0]
                line = lines.get(url, [0])[0]
                out.append(IndexDecl(url, "uv", path, line,
                                     frozenset({canonicalize_name(package)})))
    for url, explicit, default in named.values():
        if not explicit:
            line = lines.get(url, [0])[0]
            out.append(IndexDecl(url, "uv-default" if default else "--extra-index-url", path,
                                 line, frozenset()))
    return out


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


# pip's options in a requirements file (pip 26.3, ``req_file.build_parser``), read as pip's
# optparse reads them: any unambiguous prefix of a long option is that option (``--ha=`` is
# ``--hash``, ``--extra`` is ``--extra-index-url``), ``--pypi-url`` is ``--index-url``.
_PIP_LONG = ("--all-releases", "--config-settings", "--constraint", "--editable",
             "--extra-index-url", "--find-links", "--hash", "--index-url", "--no-binary",
             "--no-index", "--no-require-hashes", "--only-binary", "--only-final", "--pre",
             "--prefer-binary", "--pypi-url", "--require-hashes", "--requirement",
             "--trusted-host", "--use-feature")
_PIP_FLAGS = {"--no-index", "--no-require-hashes", "--pre", "--prefer-binary",
              "--require-hashes"}
_PIP_NAMES = {"-i": "--index-url", "--pypi-url": "--index-url", "-f": "--find-links",
              "-r": "--requirement", "-c": "--constraint", "-e": "--editable",
              "-C": "--config-settings"}
INDEX_OPTIONS = ("--index-url", "--extra-index-url", "--find-links")
_INCLUDE_OPTIONS = ("--requirement", "--constraint")
_EGG = re.compile(r"#egg=(?P<name>[A-Za-z0-9._-]+)")
_COMMENT = re.compile(r"(^|\s+)#.*$")  # pip's COMMENT_RE
_REF = re.compile(r"@v?(?P<version>\d[\w.+!-]*?)(?=#|$|\s)")


def _long_option(name: str, options: Sequence[str] = _PIP_LONG) -> str:
    """A long option as optparse (and git) read it: itself, or the one option it is a prefix
    of."""
    if name in options:
        return name
    found = [o for o in options if o.startswith(name)]
    return found[0] if len(found) == 1 else name


def _split_words(text: str) -> list[str]:
    """Words as pip splits an options string (shell quoting); unbalanced quotes: by spaces."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def pip_options(text: str) -> list[tuple[str, str]]:
    """(option by its long name, value) of each option in ``text``, as pip reads them:
    ``--opt=value``, ``--opt value``, ``-xvalue``, ``-x value``; a flag's value is ""."""
    out = []
    words = iter(_split_words(text))
    for word in words:
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            name = _long_option(name)
            if not eq and name in _PIP_LONG and name not in _PIP_FLAGS:
                value = next(words, "")
        elif word.startswith("-") and len(word) > 1:
            name, value = word[:2], word[2:] or next(words, "")
        else:
            continue  # a stray word: pip ignores it
        out.append((_PIP_NAMES.get(name, name), value))
    return out


@dataclass
class RequirementsFile:
    """What a pip requirements file holds for us: pins, index options and included files."""

    pins: list[Pin] = field(default_factory=list)
    indexes: list[tuple[int, str, str]] = field(default_factory=list)  # line, option, url
    includes: list[tuple[int, str]] = field(default_factory=list)  # line, -r/-c path as written


def _logical(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, logical line without comments), as pip reads them: a line ending
    in "\\" goes on with the next (even after a comment; a comment line never goes on), then
    comments are removed."""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.endswith("\\") and not _COMMENT.match(raw):
            start = start if pending else number
            pending.append(raw.strip("\\"))
            continue
        if pending and _COMMENT.match(raw):
            raw = " " + raw  # a comment line ends a continued line, as a comment
        line = "".join([*pending, raw])
        yield (start if pending else number), _COMMENT.sub("", line).strip()
        pending = []
    if pending:
        yield start, _COMMENT.sub("", "".join(pending)).strip()


def _vcs_pin(target: str, path: str, line: int, names: set[str]) -> Pin | None:
    """``-e git+...@v<ver>#egg=<name>``: a literal pin on the ref."""
    egg, ref = _EGG.search(target), _REF.search(target.split("#")[0])
    if not (egg and ref and canonicalize_name(egg.group("name")) in names):
        return None
    version = ref.group("version")
    if not _is_version(version):
        return None
    package = canonicalize_name(egg.group("name"))
    return Pin(package, f"{package}=={version}", path, line, "requirements (VCS ref)",
               kind=PinKind.LITERAL, literal=version)


def _option_line(out: RequirementsFile, line: int, options: list[tuple[str, str]],
                 path: str, names: set[str]) -> None:
    """A line of options only: index options, -r/-c files, ``-e`` VCS refs."""
    for option, value in options:
        if not value:
            continue
        if option in INDEX_OPTIONS:
            out.indexes.append((line, option, value))
        elif option in _INCLUDE_OPTIONS:
            out.includes.append((line, value))
        elif option == "--editable" and (pin := _vcs_pin(value, path, line, names)):
            out.pins.append(pin)


def _requirement_pin(requirement: str, options: list[tuple[str, str]], path: str, line: int,
                     names: set[str]) -> Pin | None:
    """A requirement line's pin; hash-pinned or ``===`` pins are found but frozen."""
    pin = _pin(requirement, path, line, "requirements", names)
    if pin is None:
        return None
    if any(option == "--hash" for option, _ in options):
        return replace(pin, frozen="hash-pinned (--hash): regenerate the hashes, e.g. "
                                   "pip-compile --generate-hashes")
    if any(s.operator == "===" for s in pin.parsed.specifier):
        return replace(pin, frozen="arbitrary-equality pin (===): edit it by hand")
    return pin


def read_requirements(text: str, path: str, names: set[str]) -> RequirementsFile:
    """Pins of ``names`` in a pip requirements file, its index options and its -r/-c files.

    A line is split as pip splits it: the requirement ends before the first word starting
    with "-", the rest are options (``-C``/``--config-settings``, ``--hash``), which stay as
    they are. Hash-pinned lines (``--hash=sha256:...``) and ``===`` pins are found but frozen:
    editing their version would break the hashes or the arbitrary-equality string. ``-e
    git+...@v<ver>#egg=<name>`` is a literal pin on the ref."""
    out = RequirementsFile()
    for start, line in _logical(text):
        head = re.search(r"(?:^|\s)-", line)
        requirement = line[:head.start()].strip() if head else line
        options = pip_options(line[head.start():]) if head else []
        if not requirement:
            _option_line(out, start, options, path, names)
        elif pin := _requirement_pin(requirement, options, path, start, names):
            out.pins.append(pin)
    return out


def parse_requirements(text: str, path: str, names: set[str]) -> list[Pin]:
    """Pins of ``names`` in a pip requirements file (comments, options, continuations)."""
    return read_requirements(text, path, names).pins


@functools.lru_cache(maxsize=1 << 12)
def skipped_dir(name: str) -> bool:
    """Generated and vendored trees: never a place a maintainer pins."""
    return name in SKIP_DIRS or name.startswith(".") or name.endswith(".egg-info")


def pin_files(paths: Iterable[str],
              kinds: tuple[FileKind, ...] = (FileKind.PYPROJECT, FileKind.REQUIREMENTS)
              ) -> list[str]:
    """The files of ``kinds`` among ``paths`` (relative posix paths, in the order given),
    skipping vendored, generated and hidden folders."""
    out = []
    for path in paths:
        *dirs, _ = path.split("/")
        if any(skipped_dir(d) for d in dirs):
            continue
        if file_kind(path) in kinds:
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
    indexes: tuple[IndexDecl, ...] = ()  # the target's own index declarations
    cuda_variants: tuple[str, ...] = ()  # from CUDA_VERSION ARGs
    skipped: tuple[tuple[str, str], ...] = ()  # files that may hold a pin and were not read

    def pins_of(self, package: str) -> list[Pin]:
        return [p for p in self.pins if p.package == package]

    def requires_python(self, package: str) -> str | None:
        """requires-python of the pyproject that pins ``package`` (else of any pyproject)."""
        files = {p.file for p in self.pins_of(package)}
        for toml in self.tomls:
            if toml.path in files and toml.requires_python:
                return toml.requires_python
        return next((t.requires_python for t in self.tomls if t.requires_python), None)


# -- which files may hold a pin -------------------------------------------------------------
DOCKERFILE_GLOBS = ("Dockerfile", "*.Dockerfile", "Dockerfile.*", "*.dockerfile")
SHELL_GLOBS = ("*.sh", "*.bash")


def _globs(*patterns: str) -> Callable[[str], re.Match[str] | None]:
    """fnmatch's test of a name (posix: case-sensitive), compiled once: discovery asks it of
    every file of the tree."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match


_PYPROJECT = _globs(PYPROJECT_GLOB)
_REQUIREMENTS = _globs(REQUIREMENTS_GLOB, "constraints*.txt")
_DOCKERFILE = _globs(*DOCKERFILE_GLOBS)
_SHELL = _globs(*SHELL_GLOBS)


@functools.lru_cache(maxsize=1 << 16)
def file_kind(rel: str) -> FileKind | None:
    """How discovery reads a file; None for files that cannot hold a pin."""
    parts = rel.split("/")
    name = parts[-1]
    if name == "PKG-INFO":
        return None
    if _PYPROJECT(name):
        return FileKind.PYPROJECT
    if _REQUIREMENTS(name) \
            or (name.endswith(".in") and not name.endswith(".py.in")) \
            or (name.endswith(".txt") and any(p.startswith("requirements") for p in parts[:-1])):
        return FileKind.REQUIREMENTS
    if name == "setup.py":
        return FileKind.SETUP_PY
    if name == "setup.cfg":
        return FileKind.SETUP_CFG
    if _DOCKERFILE(name):
        return FileKind.DOCKERFILE
    if _SHELL(name):
        return FileKind.SHELL
    if name.endswith(".json"):
        return FileKind.JSON
    return None


# -- version variables: ARG FLASHINFER_VERSION, FLASHINFER_VERSION=... in CI scripts ----------
_ARG = re.compile(r"\s*(?P<op>ARG)\s", re.IGNORECASE)
_INSTALL_PIN = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?"
                          r"(?P<op>===|==|>=)\s*(?P<value>\$\{?(?P<var>[A-Za-z_][A-Za-z0-9_]*)"
                          r"\}?|\d[\w.+!-]*)")
_INDEX_OPT = re.compile(r"(?P<opt>--index-url|--extra-index-url|--find-links|-i|-f)"
                        r"(?:=|\s+)(?P<q>[\"']?)(?P<url>https?://\S+?)(?P=q)(?=\s|$|;|&|\|)")

# `git clone`'s long options (git 2.47), those taking a value, and its short options: git's
# option parser also takes a long option's unique prefix (``--br`` is ``--branch``)
_CLONE_LONG = ("--also-filter-submodules", "--bare", "--branch", "--bundle-uri", "--config",
               "--depth", "--dissociate", "--filter", "--jobs", "--local", "--mirror",
               "--no-checkout", "--no-hardlinks", "--no-reject-shallow",
               "--no-remote-submodules", "--no-shallow-submodules", "--no-single-branch",
               "--no-tags", "--origin", "--progress", "--quiet", "--recurse-submodules",
               "--ref-format", "--reference", "--reference-if-able", "--reject-shallow",
               "--remote-submodules", "--revision", "--separate-git-dir", "--server-option",
               "--shallow-exclude", "--shallow-since", "--shallow-submodules", "--shared",
               "--single-branch", "--sparse", "--tags", "--template", "--upload-pack",
               "--recursive", "--verbose")
_CLONE_VALUED = {"--branch", "--bundle-uri", "--config", "--depth", "--filter", "--jobs",
                 "--origin", "--ref-format", "--reference", "--reference-if-able",
                 "--revision", "--separate-git-dir", "--server-option", "--shallow-exclude",
                 "--shallow-since", "--template", "--upload-pack"}
_CLONE_SHORT = {"-b": "--branch", "-c": "--config", "-j": "--jobs", "-o": "--origin",
                "-u": "--upload-pack"}


def _git_words(command: str, subcommand: str = "clone") -> list[str] | None:
    """The words after ``git [-C dir] [-c k=v] <subcommand>`` in one command; None if it is
    not one."""
    words = _split_words(command)
    for i, word in enumerate(words):
        if word != "git" and not word.endswith("/git"):
            continue
        j = i + 1
        while j < len(words) and words[j].startswith("-"):
            j += 2 if words[j] in ("-C", "-c") else 1
        if j < len(words) and words[j] == subcommand:
            return words[j + 1:]
    return None


def _clone_args(words: Sequence[str]) -> tuple[str, str]:
    """(the --branch value, the repository) of git clone's arguments, as git reads them."""
    branch, positional = "", list[str]()
    rest = iter(words)
    for word in rest:
        if word == "--":
            positional.extend(rest)
        elif word.startswith("--"):
            name, eq, value = word.partition("=")
            name = _long_option(name, _CLONE_LONG)
            value = value if eq or name not in _CLONE_VALUED else next(rest, "")
            branch = value if name == "--branch" else branch
        elif word.startswith("-") and len(word) > 1:
            name = _CLONE_SHORT.get(word[:2], "")
            value = word[2:] or (next(rest, "") if name else "")
            branch = value if name == "--branch" else branch
        else:
            positional.append(word)
    return branch, positional[0] if positional else ""


def _repository_name(url: str) -> str:
    """flashinfer for https://github.com/flashinfer-ai/flashinfer.git, git@host:o/flashinfer/."""
    name = re.split(r"[/:]", url.rstrip("/"))[-1].lower()
    return name[:-4] if name.endswith(".git") else name


def clone_version(command: str, repository: str) -> str | None:
    """The version a ``git clone --branch v<version> <url>`` of ``repository`` (its name on any
    host, under any owner) checks out; None for another repository or a branch that is not a
    version (``flashinfer-bench`` is not ``flashinfer``; a folder named flashinfer is not the
    repository)."""
    branch = _clone_of(command, repository)
    if not branch or not _is_version(branch):
        return None
    return branch[1:] if branch.startswith("v") else branch


def _clone_of(command: str, repository: str) -> str | None:
    """The --branch ("" without one) of a ``git clone`` of ``repository``; None for another
    command or a clone of another repository."""
    if "clone" not in command or repository.lower() not in command.lower():
        return None
    words = _git_words(command)
    if words is None:
        return None
    branch, url = _clone_args(words)
    return branch if _repository_name(url) == repository.lower() else None


def checkout_version(command: str) -> str | None:
    """The version ``git [-C dir] checkout [options] [tags/]v<version>`` checks out; None for
    another command or a ref that is not a version (a branch, ``FETCH_HEAD``)."""
    if "checkout" not in command:
        return None
    words = iter(_git_words(command, "checkout") or [])
    ref = ""
    for word in words:
        if word in ("-b", "-B", "--orphan"):
            next(words, "")  # the new branch's name
        elif word == "--":
            break
        elif not word.startswith("-"):
            ref = word.removeprefix("refs/").removeprefix("tags/")
            break
    if not _is_version(ref):
        return None
    return ref[1:] if ref.startswith("v") else ref


_DECLARATIONS = {"export", "readonly", "local", "declare", "typeset"}
_RESERVED = {"then", "else", "do", "if", "elif", "while", "until", "!", "{", "time"}
_NAME_VALUE = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)", re.S)
_DEFAULT_VALUE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*:?[-=](?P<value>[^}]*)\}")


def _shell_words(line: str) -> list[str]:
    """Words and operators (``;``, ``&&``, ``|``...) of a shell line, quotes removed. A "#"
    inside a word is part of it (as in the shell); when the quotes do not close (an
    apostrophe in a comment), the line is read again with "#" ending it anywhere."""
    for commenters in ("", "#"):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = commenters
        try:
            return list(lexer)
        except ValueError:
            continue
    return []


def shell_assignments(line: str) -> list[tuple[str, str]]:
    """(name, value) of each variable a logical shell line sets, as the shell reads it: the
    ``NAME=value`` words at the start of each command (after ``;``, ``&&``, ``||``, ``|``,
    ``then``...; also an environment prefix of one command) and the words of ``export``,
    ``readonly``, ``declare``; ``${NAME:-default}`` gives its default. A comment, an argument
    (``echo X=1``) or a quoted ``;`` sets nothing."""
    out: list[tuple[str, str]] = []
    start, declaring = True, False
    for word in _shell_words(line):
        if word.startswith("#"):
            break
        if not word.strip(";&|()"):
            start, declaring = True, False
        elif (start or declaring) and (m := _NAME_VALUE.fullmatch(word)):
            default = _DEFAULT_VALUE.fullmatch(m.group("value"))
            out.append((m.group("name"), default.group("value") if default
                        else m.group("value")))
        elif start and word in _DECLARATIONS:
            start, declaring = False, True
        elif not (start and word in _RESERVED) and not declaring:
            start = False
    return out


_ENV = re.compile(r"\s*ENV\s+(?P<rest>.+)", re.IGNORECASE)
_RUN_SHELL = re.compile(r"\s*RUN\s+(?:--\S+\s+)*(?P<rest>[^\[\s].*)", re.IGNORECASE)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ENV_OLD = re.compile(r"\s*ENV\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s+[\"']?v?\d\S*\s*",
                      re.IGNORECASE)  # ENV NAME value


def _env_sets(rest: str) -> list[tuple[str, str]]:
    """``ENV A=1 B=2`` (and the older ``ENV NAME value``): (name, value) of each variable."""
    words = _shell_words(rest)
    pairs = [(m.group("name"), m.group("value")) for w in words
             if (m := _NAME_VALUE.fullmatch(w))]
    if not pairs and len(words) == 2 and _IDENTIFIER.fullmatch(words[0]):
        return [(words[0], words[1])]
    return pairs


# ``NAME=<digit>`` (also quoted, ``v``-prefixed or a ``${X:-default}``): a line that may set
# a version; only such a line, setting a variable of interest, is lexed
_SETS_VERSION = re.compile(r"(?<![\w$])(?P<name>[A-Za-z_][A-Za-z0-9_]*)=[\"']?"
                           r"(?:\$\{[A-Za-z_][A-Za-z0-9_]*:?[-=][\"']?)?v?\d")


def _may_set(line: str, wanted: Callable[[str], bool]) -> bool:
    return any(wanted(m.group("name")) for m in _SETS_VERSION.finditer(line))


def dockerfile_sets(text: str, wanted: Callable[[str], bool] = lambda name: True
                    ) -> Iterator[tuple[int, str, str, str]]:
    """(first line, instruction, name, value) of each variable an ``ENV`` sets, or the shell
    of a ``RUN`` sets (``RUN FLASHINFER_VERSION=0.6.8 && pip install ...``); a line setting no
    ``wanted`` name to a version is not lexed."""
    for start, line in _logical_commands(text):
        if (env := _ENV.fullmatch(line)) and (_may_set(line, wanted) or (
                (old := _ENV_OLD.fullmatch(line)) and wanted(old.group("name")))):
            yield from ((start, "ENV", n, v) for n, v in _env_sets(env.group("rest")))
        elif (run := _RUN_SHELL.fullmatch(line)) and _may_set(line, wanted):
            yield from ((start, "RUN", n, v) for n, v in shell_assignments(run.group("rest")))


def _is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return bool(re.fullmatch(r"v?\d[\w.+!-]*", text))


def tied_package(variable: str, group_members: Iterable[str], lead: str) -> str | None:
    """The group package a ``<NAME>_VERSION`` variable names: FLASHINFER_VERSION -> the lead,
    FLASHINFER_CUBIN_VERSION -> flashinfer-cubin, CUTLASS_DSL_VERSION -> nvidia-cutlass-dsl."""
    m = re.fullmatch(r"(?P<stem>[A-Za-z0-9_]+?)_?VERSION", variable, re.IGNORECASE)
    if not m or not m.group("stem"):
        return None
    stem = canonicalize_name(m.group("stem").strip("_"))
    members = list(group_members)
    if stem in members:
        return stem
    if lead.startswith(stem + "-"):
        return lead
    if "-" not in stem:  # PYTHON_VERSION is not flashinfer-python's
        return None
    ends = [p for p in members if p.endswith("-" + stem)]
    return ends[0] if len(ends) == 1 else None


@dataclass
class _Commands:
    """Logical lines of a Dockerfile RUN or a shell script, with their first line number."""

    lines: list[tuple[int, str]]


@functools.lru_cache(maxsize=8)  # a file's installs, then its variables: one pass
def _logical_commands(text: str) -> tuple[tuple[int, str], ...]:
    """(first line, logical line) of a Dockerfile or script, continuations joined."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        line = raw.rstrip()
        if line.lstrip().startswith("#"):
            line = ""
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append((start, pending + line))
        pending = ""
    if pending:
        out.append((start, pending))
    return tuple(out)


@dataclass
class _Scan:
    names: set[str]
    lead: str
    pins: list[Pin] = field(default_factory=list)
    indexes: list[IndexDecl] = field(default_factory=list)
    variants: list[str] = field(default_factory=list)
    args: dict[str, set[str]] = field(default_factory=dict)  # Docker ARG -> packages it feeds
    tomls: list[TomlFile] = field(default_factory=list)
    requirement_files: dict[str, RequirementsFile] = field(default_factory=dict)


def _installs(path: str, text: str, scan: _Scan, *, section: str) -> dict[str, list[int]]:
    """Pins in install commands (Dockerfile RUN lines, CI scripts) and their index options.
    Returns variable -> lines where it feeds an install of a group package."""
    fed: dict[str, list[int]] = {}
    commands = [(start, part) for start, line in _logical_commands(text)
                for part in re.split(r"&&|\|\||;", line)]
    for start, line in commands:
        if "install" not in line and "clone" not in line:
            continue
        packages = set()
        for m in _INSTALL_PIN.finditer(line):
            package = canonicalize_name(m.group("name"))
            if package not in scan.names:
                continue
            packages.add(package)
            var = m.group("var")
            if var:
                scan.args.setdefault(var, set()).add(package)
                fed.setdefault(var, []).append(start)
            elif _is_version(m.group("value")):
                line_no = start + _line_offset(text, start, m.group(0))
                scan.pins.append(Pin(package, f"{package}=={m.group('value')}", path, line_no,
                                     section, kind=PinKind.LITERAL, literal=m.group("value")))
        for m in _INDEX_OPT.finditer(line):
            if packages:
                opt = {"-i": "--index-url", "-f": "--find-links"}.get(m.group("opt"),
                                                                      m.group("opt"))
                line_no = start + _line_offset(text, start, m.group(0))
                scan.indexes.append(IndexDecl(m.group("url"), opt, path, line_no,
                                              frozenset(packages)))
    _clones(path, text, scan, section, commands)
    return fed


def _clones(path: str, text: str, scan: _Scan, section: str,
            commands: Sequence[tuple[int, str]]) -> None:
    """The lead's version a clone of its own repository checks out: its ``--branch``, or a
    ``git checkout v<version>`` after it in the same logical command (a ``RUN``)."""
    repository = scan.lead.split("-")[0]
    cloned = 0  # the logical line of the last clone of the lead's repository
    for start, command in commands:
        branch = _clone_of(command, repository)
        if branch is not None:
            cloned, version, how = start, clone_version(command, repository), "clone --branch"
        elif cloned == start:
            version, how = checkout_version(command), "checkout"
        else:
            continue
        if version:
            line_no = start + _branch_offset(text, start, version)
            scan.pins.append(Pin(scan.lead, f"{scan.lead}=={version}", path, line_no,
                                 f"{section} (git {how})", kind=PinKind.LITERAL,
                                 literal=version))


def _line_offset(text: str, start: int, fragment: str) -> int:
    """Which physical line, counted from ``start``, holds ``fragment`` (continued lines)."""
    lines = text.splitlines()[start - 1:][:50]
    head = fragment.split()[0] if fragment.split() else fragment
    for needle in (fragment, head):  # the whole fragment first: its head may be on an earlier
        for i, line in enumerate(lines):  # line (`--extra-index-url` of another install)
            if needle in line:
                return i
    return 0


def _branch_offset(text: str, start: int, version: str) -> int:
    """Which physical line, counted from ``start``, gives ``--branch`` its version (another
    line of the command may install a package at the same version)."""
    option = re.compile(rf"(?:^|\s)(?:-[\w-]*(?:=|\s+)?)?[\"']?v?{re.escape(version)}"
                        r"(?![\w.+!-])")  # --branch v0.6.8, -bv0.6.8, or the word alone
    lines = text.splitlines()[start - 1:start + 49]
    found = (i for i, line in enumerate(lines) if option.search(line))
    return next(found, _line_offset(text, start, version))


def _dockerfile(path: str, text: str, scan: _Scan) -> None:
    fed = _installs(path, text, scan, section="dockerfile")
    _dockerfile_variables(path, text, scan, fed)
    for number, name, value in _arg_defaults(text):
        if name.upper() == "CUDA_VERSION" and value and (v := cuda_variant(value)):
            scan.variants.append(v)
            continue
        if not value or not _is_version(value):
            continue
        packages = scan.args.get(name) if name in fed else None
        if not packages:
            tied = tied_package(name, scan.names, scan.lead)
            packages = {tied} if tied else set()
        for package in sorted(packages):
            scan.pins.append(Pin(package, f"{package}=={value.lstrip('v')}", path, number,
                                 f"dockerfile ARG {name}", kind=PinKind.LITERAL,
                                 literal=value.lstrip("v")))


def _arg_defaults(text: str) -> Iterator[tuple[int, str, str]]:
    """(physical line, name, default) of each variable an ``ARG`` declares: Docker takes
    several ``name[=default]`` on one instruction (``ARG A=1 B=2``), continued lines too."""
    for start, line in _logical_commands(text):
        m = _ARG.match(line)
        if not m:
            continue
        for word in _shell_words(line[m.end("op"):]):
            name, _, value = word.partition("=")
            if _IDENTIFIER.fullmatch(name):
                yield _assignment_line(text, start, name), name, value


def _assignment_line(text: str, start: int, name: str) -> int:
    """The physical line, from the logical line at ``start``, where ``name=`` is set."""
    assignment = re.compile(rf"(?<![\w$]){re.escape(name)}=")
    lines = text.splitlines()[start - 1:start + 49]
    return start + next((i for i, line in enumerate(lines) if assignment.search(line)), 0)


def _dockerfile_variables(path: str, text: str, scan: _Scan, fed: Mapping[str, list[int]]
                          ) -> None:
    """Versions set by ``ENV`` or by a ``RUN``'s shell: pins like an ``ARG`` default's."""
    def wanted(name: str) -> bool:
        return name in fed or tied_package(name, scan.names, scan.lead) is not None

    for start, op, name, value in dockerfile_sets(text, wanted):
        if _is_version(value):
            used = scan.args.get(name, set()) if name in fed else set()
            _shell_pin(path, text, scan, start, name, value.lstrip("v"), used,
                       f"dockerfile {op}")


def _shell(path: str, text: str, scan: _Scan) -> None:
    """``FLASHINFER_VERSION=0.6.8.post1`` in a CI script: a pin of the packages the script
    installs with it (``flashinfer-cubin==${FLASHINFER_VERSION}``), else of the package its
    name says."""
    before = {k: set(v) for k, v in scan.args.items()}
    fed = _installs(path, text, scan, section="shell")
    mine = {name: scan.args[name] - before.get(name, set()) or scan.args[name] for name in fed}
    def wanted(name: str) -> bool:
        return name in mine or tied_package(name, scan.names, scan.lead) is not None

    for start, line in _logical_commands(text):
        if not _may_set(line, wanted):  # no version of interest is set here: not lexed
            continue
        for name, value in shell_assignments(line):
            if _is_version(value):
                _shell_pin(path, text, scan, start, name, value.lstrip("v"),
                           mine.get(name, set()))


def _shell_pin(path: str, text: str, scan: _Scan, start: int, name: str, value: str,
               used: set[str], section: str = "shell") -> None:
    """``name=value`` set on the logical line at ``start``: a pin of the packages the file
    installs with it, else of the package its name says, on the physical line setting it."""
    packages = used or ({p} if (p := tied_package(name, scan.names, scan.lead)) else set())
    if not packages:
        return
    number = _assignment_line(text, start, name)
    for package in sorted(packages):
        scan.pins.append(Pin(package, f"{package}=={value}", path, number, f"{section} {name}",
                             kind=PinKind.LITERAL, literal=value))


def _json(path: str, text: str, scan: _Scan, arg_names: set[str]) -> None:
    """``{"FLASHINFER_VERSION": "0.6.8.post1"}`` or ``{"FLASHINFER_VERSION": {"default":
    "0.6.8.post1"}}``: a version under a key named after a Docker ARG (or a group package)."""
    if not any(name in text for name in arg_names) and "_VERSION" not in text:
        return
    key_re = re.compile(r"\"(?P<key>[A-Za-z_][A-Za-z0-9_]*)\"\s*:\s*(?=(?P<rest>[^\n]*))")
    lines = text.splitlines()
    for i, line in enumerate(lines):
        for m in key_re.finditer(line):
            _json_key(path, lines, i, m, scan)


def _json_key(path: str, lines: list[str], i: int, m: re.Match[str], scan: _Scan) -> None:
    """One ``"KEY": value`` of a versions JSON: a pin when KEY names a group package."""
    key = m.group("key")
    packages = scan.args.get(key) or (
        {p} if (p := tied_package(key, scan.names, scan.lead)) else set())
    if not packages:
        return
    value_line, value = _json_value(lines, i, m.group("rest"))
    if value is None or not _is_version(value):
        return
    for package in sorted(packages):
        scan.pins.append(Pin(package, f"{package}=={value.lstrip('v')}", path,
                             value_line + 1, f"json {key}", kind=PinKind.LITERAL,
                             literal=value.lstrip("v")))


def _json_value(lines: list[str], i: int, rest: str) -> tuple[int, str | None]:
    m = re.match(r"\s*\"(?P<v>[^\"]*)\"", rest)
    if m:
        return i, m.group("v")
    if not rest.strip().startswith("{"):
        return i, None
    for j in range(i, min(i + 8, len(lines))):
        text = rest if j == i else lines[j]
        d = re.search(r"\"default\"\s*:\s*\"(?P<v>[^\"]*)\"", text)
        if d:
            return j, d.group("v")
        if "}" in text:
            break
    return i, None


_SETUP_LISTS = {"install_requires", "extras_require", "setup_requires", "tests_require"}


def _module_values(tree: Any) -> dict[str, list[Any]]:
    """Name -> the values a module assigns it at its top level (``REQS = [...]``,
    ``REQS += [...]``): what ``install_requires=REQS`` may refer to."""
    import ast

    out: dict[str, list[Any]] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            if isinstance(target, ast.Name) and node.value is not None:
                out.setdefault(target.id, []).append(node.value)
    return out


def _requirement_strings(node: Any, values: Mapping[str, list[Any]], depth: int = 0
                         ) -> Iterator[Any]:
    """The string constants of a requirement list as setup() gets it: a list, tuple or set,
    a dict of them (extras_require), a name assigned at the module's top level, ``a + b``."""
    import ast

    if depth > 8:
        return
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        for item in node.elts:
            yield from _requirement_strings(item, values, depth + 1)
    elif isinstance(node, ast.Dict):
        for item in node.values:
            yield from _requirement_strings(item, values, depth + 1)
    elif isinstance(node, ast.Name):
        for value in values.get(node.id, []):
            yield from _requirement_strings(value, values, depth + 1)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        yield from _requirement_strings(node.left, values, depth + 1)
        yield from _requirement_strings(node.right, values, depth + 1)


def _setup_lists(tree: Any) -> Iterator[Any]:
    """The values of ``setup(...)``'s requirement keywords (install_requires, extras_require,
    setup_requires, tests_require), in ``setup(...)`` or ``setuptools.setup(...)``."""
    import ast

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else \
            func.attr if isinstance(func, ast.Attribute) else ""
        if name == "setup":
            yield from (k.value for k in node.keywords if k.arg in _SETUP_LISTS)


def _setup_py(path: str, text: str, names: set[str]) -> list[Pin]:
    """Requirement strings in setup.py's requirement lists (setup()'s install_requires,
    extras_require, setup_requires, tests_require, also through a module-level name); never
    its other strings (a description naming a package beside an operator is no pin)."""
    import ast

    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    values = _module_values(tree)
    pins = []
    seen: set[int] = set()
    for listing in _setup_lists(tree):
        for node in _requirement_strings(listing, values):
            if id(node) in seen or "\n" in node.value:
                continue
            seen.add(id(node))
            pin = _pin(node.value.strip(), path, node.lineno, "setup.py", names)
            if pin:
                pins.append(pin)
    return sorted(pins, key=lambda p: p.line)


_CFG_SECTION = re.compile(r"\[(?P<name>[^\]]+)\]\s*$")
_CFG_KEY = re.compile(r"(?P<key>[^\s=:][^=:]*?)\s*[=:]\s*(?P<value>.*)$")
_CFG_LISTS = {"install_requires", "setup_requires", "tests_require"}  # of [options]


def _cfg_lists(text: str) -> Iterator[tuple[int, str, bool]]:
    """(line number, text, whole) of each line of setup.cfg's requirement lists: [options]
    install_requires, setup_requires and tests_require, and every key of
    [options.extras_require] (never [metadata], whose ``name`` is the project's own); whole:
    the key's value is that one line (setuptools splits it at ";")."""
    lines = text.splitlines()
    section, listing = "", False
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith(("#", ";")):
            continue
        if line[0] in " \t":  # the value of the key above, continued
            if listing:
                yield number, line, False
            continue
        if m := _CFG_SECTION.match(line):
            section, listing = m.group("name").strip(), False
            continue
        key = _CFG_KEY.match(line)
        name = key.group("key").strip().replace("-", "_") if key else ""
        listing = bool(name) and (section == "options.extras_require"
                                  or (section == "options" and name in _CFG_LISTS))
        if key and listing and key.group("value").strip():
            following = lines[number] if number < len(lines) else ""
            yield number, key.group("value"), not (following[:1] in (" ", "\t")
                                                   and following.strip())


def _setup_cfg(path: str, text: str, names: set[str]) -> list[Pin]:
    """Pins in setup.cfg's requirement lists (one requirement a line; ";" between several on
    the key's own line)."""
    pins = []
    for number, line, whole in _cfg_lists(text):
        body = re.split(r"(?:^|\s)#", line)[0]
        for item in body.split(";") if whole else [body]:
            try:
                pin = _pin(item.strip(), path, number, "setup.cfg", names)
            except InputError:
                continue
            if pin:
                pins.append(pin)
    return pins


MAX_INCLUDE_DEPTH = 16  # -r/-c files naming more files: levels followed


def includes_of(files: Mapping[str, str], names: set[str]) -> set[str]:
    """Files named by -r/-c in the requirements files and, transitively, in the files they
    name (whatever their names: pip reads each as a requirements file), and by setup.cfg's
    ``file:`` directives, relative to the root. Each file held is read once (a file naming
    itself, or a cycle, ends there), to ``MAX_INCLUDE_DEPTH`` levels; a file named but not
    held yet is not followed (``read_includes`` reads it, then asks again)."""
    out: set[str] = set()
    named = {p for rel in pin_files(files, (FileKind.SETUP_CFG,))
             for _, p in _cfg_includes(rel, files[rel])}
    frontier = pin_files(files, (FileKind.REQUIREMENTS,))
    seen = set(frontier)
    for _ in range(MAX_INCLUDE_DEPTH):
        named |= {_included(rel, inc) for rel in frontier
                  for _, inc in read_requirements(files[rel], rel, names).includes}
        named = {p for p in named if _inside(p)}
        out |= named
        frontier = sorted(p for p in named - seen if p in files)
        seen |= named
        named = set()
        if not frontier:
            break
    return out


def read_includes(files: Callable[[], Mapping[str, str]], names: set[str],
                  read: Callable[[list[str]], None]) -> set[str]:
    """``includes_of`` when the files it names are read on demand: the files named so far
    are read (``read``), then looked at for more, until none is new (bounded: each round
    reads one level deeper)."""
    includes: set[str] = set()
    for _ in range(MAX_INCLUDE_DEPTH + 1):
        found = includes_of(files(), names)
        new = found - includes
        includes |= found
        if not new:
            break
        read(sorted(new))
    return includes


def _cfg_includes(rel: str, text: str) -> list[tuple[int, str]]:
    """(line, file) of each file setup.cfg's requirement lists take with setuptools' ``file:``
    directive (``install_requires = file: requirements.in, extra.txt``), relative to the
    root."""
    out = []
    for number, line, _ in _cfg_lists(text):
        value = line.strip()
        if value.startswith("file:"):
            out += [(number, _included(rel, p.strip())) for p in value[5:].split(",")
                    if p.strip()]
    return out


def _included(rel: str, inc: str) -> str:
    """The path a -r/-c line of ``rel`` names, relative to the root."""
    return os.path.normpath(str(Path(rel).parent / inc)).replace(os.sep, "/")


def _inside(path: str) -> bool:
    """Whether a normalized relative path stays under the root (``..foo/x`` does)."""
    return path != ".." and not path.startswith("../") and not os.path.isabs(path)


def _outside(requirement_files: Mapping[str, RequirementsFile], files: Mapping[str, str]
             ) -> list[tuple[str, str]]:
    """The -r/-c lines, and setup.cfg's ``file:`` directives, naming a file outside the
    target: never read, and listed (a pin there is not bumped), never dropped silently."""
    cfg = [(f"{rel}:{line}", "file: names a file outside the target (not read)")
           for rel in pin_files(files, (FileKind.SETUP_CFG,))
           for line, path in _cfg_includes(rel, files[rel]) if not _inside(path)]
    return [(f"{rel}:{line}", "-r/-c names a file outside the target (not read)")
            for rel, req in requirement_files.items() for line, inc in req.includes
            if not _inside(_included(rel, inc))] + cfg


def _read_pins(rel: str, kind: FileKind | None, text: str, state: _Scan,
               parsed: Mapping[str, PyProject]) -> None:
    """The first pass over one chosen file: its requirement pins (and its parsed form, for
    the index declarations) and, for a Dockerfile, its ARGs."""
    if kind == FileKind.PYPROJECT:
        toml = pyproject_pins(parsed[rel], state.names)
        state.tomls.append(toml)
        state.pins.extend(toml.pins)
    elif kind == FileKind.REQUIREMENTS:
        req = read_requirements(text, rel, state.names)
        state.requirement_files[rel] = req
        state.pins.extend(req.pins)
    elif kind == FileKind.SETUP_PY:
        state.pins.extend(_setup_py(rel, text, state.names))
    elif kind == FileKind.SETUP_CFG:
        state.pins.extend(_setup_cfg(rel, text, state.names))
    elif kind == FileKind.DOCKERFILE:
        _dockerfile(rel, text, state)


def _requirement_indexes(state: _Scan) -> None:
    """Index options of a requirements file serve the packages of that file and the files it
    includes (pip reads them as one install)."""
    files = state.requirement_files
    for rel, req in files.items():
        family = {os.path.normpath(str(Path(rel).parent / inc)).replace(os.sep, "/")
                  for _, inc in req.includes} | {rel}
        packages = frozenset(p.package for f in family for p in
                             files.get(f, RequirementsFile()).pins)
        for line, option, url in req.indexes:
            state.indexes.append(IndexDecl(url, option, rel, line, packages))


def _toml_indexes(state: _Scan) -> None:
    """A pyproject's index declaration without packages serves the packages it pins."""
    for toml in state.tomls:
        mine = frozenset(p.package for p in toml.pins)
        state.indexes.extend(d if d.packages else replace(d, packages=mine)
                             for d in toml.indexes)


def _not_read(includes: set[str], files: Mapping[str, str],
              undecodable: Mapping[str, str], skipped: Iterable[tuple[str, str]]
              ) -> tuple[tuple[str, str], ...]:
    """Files that may hold a pin and were not read, with why, sorted: each once, with the
    reader's reason when it has one (a link named by -r is a link, not a missing file)."""
    skipped = list(skipped)
    said = {p for p, _ in skipped}
    missing = [(p, "named by -r/-c but not found") for p in sorted(includes)
               if p not in files and p not in undecodable and p not in said]
    unread = [(p, f"not UTF-8 text ({why})") for p, why in undecodable.items()
              if file_kind(p) is not None or p in includes]
    return tuple(sorted({*skipped, *unread, *missing}))


_PIN_KINDS = tuple(FileKind)


def find_pins(root: Path, files: Mapping[str, str], names: set[str],
              undecodable: Mapping[str, str] = MappingProxyType({}),
              pyprojects: Sequence[PyProject] | None = None, *, lead: str = "",
              skipped: Iterable[tuple[str, str]] = (), also: Iterable[str] = (),
              includes: Iterable[str] | None = None) -> Target:
    """The pins of ``names`` in the tree ``files`` (relative path -> text); ``pyprojects``
    are the already parsed pyproject files, and ``includes`` the files named by -r/-c
    (``includes_of``), when the caller has them. Files that may hold a pin and could not be
    read (``undecodable``, ``skipped``) are listed in the target."""
    parsed = {p.path: p for p in (pyprojects if pyprojects is not None
                                  else read_pyprojects(files, undecodable))}
    _check_text(undecodable)
    lead = lead or ("flashinfer-python" if "flashinfer-python" in names
                    else next(iter(sorted(names)), ""))
    state = _Scan(names=names, lead=lead)
    includes = (includes_of(files, names) if includes is None else set(includes)) | set(also)
    # `also`: the config's `files` globs, read in the requirements format
    chosen = pin_files(files, _PIN_KINDS) + sorted(
        p for p in includes if p in files and file_kind(p) != FileKind.REQUIREMENTS)
    for rel in chosen:
        kind = FileKind.REQUIREMENTS if rel in includes else file_kind(rel)
        _read_pins(rel, kind, files[rel], state, parsed)
    for rel in chosen:
        if file_kind(rel) == FileKind.SHELL:
            _shell(rel, files[rel], state)
    arg_names = set(state.args)
    for rel in chosen:
        if file_kind(rel) == FileKind.JSON:
            _json(rel, files[rel], state, arg_names)
    _requirement_indexes(state)
    _toml_indexes(state)
    return Target(root=root, tomls=tuple(state.tomls), pins=tuple(state.pins),
                  indexes=tuple(state.indexes),
                  cuda_variants=tuple(dict.fromkeys(state.variants)),
                  skipped=_not_read(includes, files, undecodable,
                                    [*skipped, *_outside(state.requirement_files, files)]))
