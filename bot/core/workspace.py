"""The target as one command sees it: read once, parsed once, immutable. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from bot.core.config import Group, Policy, config_names, load_policy
from bot.core.discovery import Target, find_pins, read_pyprojects
from bot.core.environment import Environment

CONFIG_FILE = "pinbump.toml"


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

    @property
    def python_sources(self) -> dict[str, str]:
        return {p: t for p, t in self.files.items() if p.endswith(".py")}


def build_workspace(root: Path, raw: Mapping[str, bytes], files: Mapping[str, str],
                    undecodable: Mapping[str, str], overrides: Mapping[str, Any]
                    ) -> Workspace:
    """Config first (pinbump.toml, else the shallowest [tool.pinbump]), then the pins of every
    group it names, then the environment of the active group's lead."""
    pyprojects = read_pyprojects(files, undecodable)
    if CONFIG_FILE in undecodable:
        from bot.errors import InputError

        raise InputError(f"{CONFIG_FILE}: not UTF-8 text ({undecodable[CONFIG_FILE]})")
    policy = load_policy(files.get(CONFIG_FILE), pyprojects, overrides)
    target = find_pins(root, files, config_names(policy), undecodable, pyprojects)
    env = Environment.for_target(target.requires_python(policy.active_group.lead),
                                 policy.python)
    return Workspace(root=root, files=MappingProxyType(dict(files)),
                     raw=MappingProxyType(dict(raw)), target=target, policy=policy, env=env)
