"""The target as one command sees it: its pin files read and parsed once, the rest of the tree
read when first searched (once), immutable once read. Pure: the reading is the ``Source``'s
(``bot.adapters.tree.Tree``), passed in."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from bot.core.config import Group, Policy, config_names, load_policy
from bot.core.discovery import Target, find_pins, read_includes, read_pyprojects
from bot.core.environment import Environment
from bot.core.models import Pin

CONFIG_FILE = "pinbump.toml"

Counted = Callable[[int], None]  # told how many files were read so far (progress)


class TextFiles(Mapping[str, str]):
    """A tree's text files, decoded when looked at from the bytes held once: a large tree is
    not held twice, and the files nobody opens are never decoded. ``raw`` holds only files
    already known to be UTF-8 text; a live view (files read later appear in it)."""

    def __init__(self, raw: Mapping[str, bytes]) -> None:
        self._raw = raw

    def __getitem__(self, path: str) -> str:
        return self._raw[path].decode("utf-8")

    def __contains__(self, path: object) -> bool:
        return path in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


class Source(Protocol):
    """The target's files as the tree reader holds them: every file listed once, the pin
    files read at once, the others read when named (``read``) or searched (``search``)."""

    @property
    def paths(self) -> Collection[str]:
        """Every regular file of the tree under the size cap (relative posix paths)."""

    @property
    def raw(self) -> Mapping[str, bytes]:
        """The text files read and held so far, as bytes (what a write checks against)."""

    @property
    def undecodable(self) -> Mapping[str, str]:
        """Files read and found not to be UTF-8 text: path -> why."""

    @property
    def skipped(self) -> Sequence[tuple[str, str]]:
        """Files that may hold a pin and could not be read (links, over the cap), with why."""

    def read(self, paths: Iterable[str]) -> None:
        """Hold the text files among ``paths`` (each read at most once while held)."""

    def search(self, needles: frozenset[bytes], counted: Counted | None = None) -> None:
        """Hold every text file whose bytes hold one of ``needles``: the files not read yet
        are read once; those holding none are let go again."""


class HeldFiles:
    """A ``Source`` whose files are all held already (a tree in memory)."""

    def __init__(self, raw: Mapping[str, bytes],
                 undecodable: Mapping[str, str] = MappingProxyType({})) -> None:
        self._raw = dict(raw)
        self._undecodable = dict(undecodable)

    @property
    def paths(self) -> Collection[str]:
        return self._raw.keys()

    @property
    def raw(self) -> Mapping[str, bytes]:
        return self._raw

    @property
    def undecodable(self) -> Mapping[str, str]:
        return self._undecodable

    @property
    def skipped(self) -> Sequence[tuple[str, str]]:
        return ()

    def read(self, paths: Iterable[str]) -> None:
        pass

    def search(self, needles: frozenset[bytes], counted: Counted | None = None) -> None:
        pass


def holding(raw: Mapping[str, bytes], needles: Iterable[bytes],
            keep: Callable[[str], bool] = lambda _path: False) -> dict[str, str]:
    """The files whose bytes hold one of ``needles`` (or that ``keep`` names), decoded: a byte
    search per file, so a command that needs a few files of a large tree decodes only those.
    A file may be kept for a match that is not a whole token; callers look closer."""
    wanted = tuple(needles)
    return {p: data.decode("utf-8") for p, data in raw.items()
            if keep(p) or any(n in data for n in wanted)}


def import_guesses(distribution: str) -> set[str]:
    """Import names a distribution may provide: flashinfer-python -> flashinfer_python,
    flashinfer. Used to look for its users before its wheel says which one it is."""
    parts = distribution.lower().replace("-", "_").replace(".", "_").split("_")
    return {"_".join(parts[:i]) for i in range(1, len(parts) + 1)}


def _versions_written(pin: Pin) -> set[str]:
    """The version strings a pin holds (as written and normalized): what apply looks for."""
    out = {pin.literal} if pin.literal else set()
    try:
        out |= {spec.version for spec in pin.parsed.specifier}
        if pin.current is not None:
            out.add(str(pin.current))
    except ValueError:  # a literal pin's requirement need not parse
        pass
    return {v for v in out if v}


def interest_of(target: Target, lead: str) -> frozenset[bytes]:
    """What a command may search the tree for: the lead's import names (drift, apply's
    codemod) and every version the target's pins hold (apply's old versions). The first
    search looks for all of them at once, so later ones are served without reading again."""
    versions = {v for pin in target.pins for v in _versions_written(pin)}
    return frozenset(s.encode() for s in import_guesses(lead) | versions)


@dataclass(frozen=True)
class Workspace:
    """The target loaded once per command: its policy (config parsed once), its pins
    (discovered once), the install environment and its files (``source``: pin files held,
    the rest read once, when first searched)."""

    root: Path
    source: Source
    target: Target
    policy: Policy
    env: Environment
    interest: frozenset[bytes] = frozenset()  # what the first search looks for besides

    @property
    def group(self) -> Group:
        return self.policy.active_group

    @property
    def files(self) -> Mapping[str, str]:
        """The text files read and held so far (relative posix path -> text)."""
        return TextFiles(self.source.raw)

    @property
    def raw(self) -> Mapping[str, bytes]:
        """The same files' bytes as read: what a write checks against."""
        return MappingProxyType(self.source.raw)

    def holding(self, needles: Iterable[bytes],
                keep: Callable[[str], bool] = lambda _path: False,
                counted: Counted | None = None) -> dict[str, str]:
        """The text files holding one of ``needles`` (byte search), or named by ``keep``
        among those read up front (the files that may hold a pin, the config, the files
        they include: apply's pin files and Dockerfiles are). The first search of a command
        reads the files not read yet, once, and holds those that hold a needle or one of
        ``interest``; a later one whose needles that covers reads nothing (``Tree.search``)."""
        wanted = frozenset(needles)
        self.source.search(wanted | self.interest, counted)
        return holding(self.source.raw, wanted, keep)

    def lead_sources(self, counted: Counted | None = None) -> dict[str, str]:
        """The Python files whose bytes name one of the lead's import names: drift's call
        sites, apply's codemod (a byte search, served by the first one: of ``interest``)."""
        guesses = [g.encode() for g in import_guesses(self.group.lead)]
        return {p: t for p, t in self.holding(guesses, counted=counted).items()
                if p.endswith(".py")}


def _excluded(files: Mapping[str, str], exclude: Iterable[str]) -> dict[str, str]:
    """The tree without the config's ``exclude`` globs."""
    globs = tuple(exclude)
    return {p: files[p] for p in files if not any(fnmatch.fnmatch(p, g) for g in globs)}


def _globbed(paths: Iterable[str], policy: Policy) -> list[str]:
    """The files the config's ``files`` globs name (and its ``exclude`` globs do not)."""
    if not policy.files:
        return []
    return [p for p in paths if any(fnmatch.fnmatch(p, g) for g in policy.files)
            and not any(fnmatch.fnmatch(p, g) for g in policy.exclude)]


def build_workspace(root: Path, source: Source, overrides: Mapping[str, Any]) -> Workspace:
    """Config first (pinbump.toml, else the shallowest [tool.pinbump]), then the pins of every
    group it names, then the environment of the active group's lead. ``source`` holds the
    files that may hold a pin and the config; the files the config's ``files`` globs and the
    requirements' ``-r``/``-c`` lines name are read now, the rest of the tree is not."""
    files: Mapping[str, str] = TextFiles(source.raw)
    undecodable = source.undecodable
    pyprojects = read_pyprojects(files, undecodable)
    if CONFIG_FILE in undecodable:
        from bot.errors import InputError

        raise InputError(f"{CONFIG_FILE}: not UTF-8 text ({undecodable[CONFIG_FILE]})")
    policy = load_policy(files.get(CONFIG_FILE), pyprojects, overrides)
    names = config_names(policy)
    globbed = _globbed(source.paths, policy)

    def pin_files_now() -> Mapping[str, str]:  # the files held so far, less the excluded
        return files if not policy.exclude else _excluded(files, policy.exclude)

    # only pin files (and the files they name, read here, level by level) name them
    includes = read_includes(pin_files_now, names, source.read)
    source.read(globbed)  # named: read now
    pin_files = pin_files_now()
    also = [p for p in globbed if p in pin_files or p in undecodable]  # not UTF-8: listed
    target = find_pins(root, pin_files, names, undecodable, pyprojects,
                       lead=policy.active_group.lead, skipped=source.skipped, also=also,
                       includes=includes)
    env = Environment.for_target(target.requires_python(policy.active_group.lead),
                                 policy.python, policy.platforms)
    return Workspace(root=root, source=source, target=target, policy=policy, env=env,
                     interest=interest_of(target, policy.active_group.lead))
