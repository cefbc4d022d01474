"""The target as one command sees it: read once, parsed once, immutable. Pure."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from bot.core.config import Group, Policy, config_names, load_policy
from bot.core.discovery import Target, find_pins, read_pyprojects
from bot.core.environment import Environment

CONFIG_FILE = "pinbump.toml"


class TextFiles(Mapping[str, str]):
    """A tree's text files, decoded when looked at from the bytes held once: a large tree is
    not held twice, and the files nobody opens are never decoded. ``raw`` holds only files
    already known to be UTF-8 text."""

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


def holding(raw: Mapping[str, bytes], needles: Iterable[bytes],
            keep: Callable[[str], bool] = lambda _path: False) -> dict[str, str]:
    """The files whose bytes hold one of ``needles`` (or that ``keep`` names), decoded: a byte
    search per file, so a command that needs a few files of a large tree decodes only those.
    A file may be kept for a match that is not a whole token; callers look closer."""
    wanted = tuple(needles)
    return {p: data.decode("utf-8") for p, data in raw.items()
            if keep(p) or any(n in data for n in wanted)}


@dataclass(frozen=True)
class Workspace:
    """The target loaded once per command: its files (text and bytes as read), its policy
    (config parsed once), its pins (discovered once) and the install environment."""

    root: Path
    files: Mapping[str, str]  # relative posix path -> text
    raw: Mapping[str, bytes]  # the same files' bytes as read: what a write checks against
    target: Target
    policy: Policy
    env: Environment

    @property
    def group(self) -> Group:
        return self.policy.active_group

    def holding(self, needles: Iterable[bytes],
                keep: Callable[[str], bool] = lambda _path: False) -> dict[str, str]:
        """The text files holding one of ``needles`` (byte search), or named by ``keep``."""
        return holding(self.raw, needles, keep)

    @property
    def python_sources(self) -> dict[str, str]:
        return {p: t for p, t in self.files.items() if p.endswith(".py")}


def _excluded(files: Mapping[str, str], exclude: Iterable[str]) -> dict[str, str]:
    """The tree without the config's ``exclude`` globs."""
    globs = tuple(exclude)
    return {p: files[p] for p in files if not any(fnmatch.fnmatch(p, g) for g in globs)}


def build_workspace(root: Path, raw: Mapping[str, bytes], files: Mapping[str, str],
                    undecodable: Mapping[str, str], overrides: Mapping[str, Any],
                    skipped: Iterable[tuple[str, str]] = ()) -> Workspace:
    """Config first (pinbump.toml, else the shallowest [tool.pinbump]), then the pins of every
    group it names, then the environment of the active group's lead."""
    pyprojects = read_pyprojects(files, undecodable)
    if CONFIG_FILE in undecodable:
        from bot.errors import InputError

        raise InputError(f"{CONFIG_FILE}: not UTF-8 text ({undecodable[CONFIG_FILE]})")
    policy = load_policy(files.get(CONFIG_FILE), pyprojects, overrides)
    pin_files = files if not policy.exclude else _excluded(files, policy.exclude)
    also = [p for p in pin_files if any(fnmatch.fnmatch(p, g) for g in policy.files)]
    target = find_pins(root, pin_files, config_names(policy), undecodable, pyprojects,
                       lead=policy.active_group.lead, skipped=skipped, also=also)
    env = Environment.for_target(target.requires_python(policy.active_group.lead),
                                 policy.python, policy.platforms)
    view = files if isinstance(files, TextFiles) else MappingProxyType(dict(files))
    return Workspace(root=root, files=view,
                     raw=MappingProxyType(dict(raw)), target=target, policy=policy, env=env)
