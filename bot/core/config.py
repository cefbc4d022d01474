"""Policy: built-in defaults, then pinbump.toml or [tool.pinbump], then command-line flags."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from bot.core.discovery import PyProject, load_toml
from bot.core.indexmodel import CHANNELS, BuiltinData, parse_builtin
from bot.core.urls import Credentials, index_url
from bot.errors import ConfigError

DEFAULT_INDEX = "https://pypi.org/simple"
DEFAULT_LABELS = ("dependencies", "pinbump", "gpu-gate")
DEFAULT_RUNNERS: dict[str, tuple[str, ...]] = {
    "sm90": ("self-hosted", "linux", "gpu", "sm90"),
    "sm100": ("self-hosted", "linux", "gpu", "sm100"),
    "multi-gpu": ("self-hosted", "linux", "gpu", "multi-gpu"),
}
STATUS_PREFIX = "pinbump/gpu-gate"  # commit status context of each GPU job: prefix/<job>
MERGE_METHODS = ("merge", "squash", "rebase")
PLATFORMS = ("linux-x86_64", "linux-aarch64")  # GB200/GB300 and DGX Spark are aarch64
KNOWN_PLATFORMS = ("linux-x86_64", "linux-aarch64", "win-amd64", "macos-arm64")


@dataclass(frozen=True)
class Group:
    """Packages that move together: one lead, lockstep followers, and companions."""

    name: str
    lead: str
    lockstep: tuple[str, ...] = ()
    companions: tuple[str, ...] = ()

    @property
    def members(self) -> tuple[str, ...]:
        return (self.lead, *self.lockstep, *self.companions)


BUILTIN_GROUPS: dict[str, Group] = {
    "flashinfer": Group(
        name="flashinfer",
        lead="flashinfer-python",
        lockstep=("flashinfer-cubin", "flashinfer-jit-cache"),
        companions=("nvidia-cutlass-dsl", "quack-kernels"),
    ),
}


@dataclass(frozen=True)
class Policy:
    groups: Mapping[str, Group] = field(default_factory=lambda: dict(BUILTIN_GROUPS))
    group: str = "flashinfer"
    index_url: str = DEFAULT_INDEX
    package_index: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    min_release_age_days: float = 3.0
    allow_prereleases: bool | frozenset[str] = False
    known_bad: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    caps: Mapping[str, Version] = field(default_factory=dict)  # package -> must stay below
    python: str | None = None  # the Python version markers are evaluated for
    doc_patterns: tuple[str, ...] = ()  # extra regexes with {version} for apply
    dockerfile_args: Mapping[str, str] = field(default_factory=dict)  # ARG/ENV name -> package
    reviewers: tuple[str, ...] = ()
    labels: tuple[str, ...] = DEFAULT_LABELS
    gate_workflow: str = "pinbump-gpu-gate.yml"
    runner_labels: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: dict(DEFAULT_RUNNERS))
    required_checks: tuple[str, ...] | None = None  # default: one status per GPU job
    gate_min_tests: Mapping[str, int] = field(default_factory=dict)  # job -> executed tests
    merge_method: str = "squash"
    bot_login: str | None = None  # who opens the bot PRs; default: the token's identity
    platforms: tuple[str, ...] = PLATFORMS
    cuda_variants: tuple[str, ...] = ()  # default: the target's Dockerfiles, else built-in
    files: tuple[str, ...] = ()  # more globs discovery reads
    exclude: tuple[str, ...] = ()  # globs discovery skips
    strict: bool = False  # an unreachable index is an error, not a report
    channel: str = "stable"
    nightly_prs: bool = False  # --channel nightly opens PRs only when this is set
    advisories: Mapping[str, Mapping[str, tuple[str, str]]] = field(default_factory=dict)
    source: str = "built-in defaults"
    credentials: tuple[Credentials, ...] = field(default=(), repr=False)  # of index URLs

    def index_for(self, package: str) -> str:
        configured = self.package_index.get(package)
        return configured[0] if configured else self.index_url

    def has_own_index(self, package: str) -> bool:
        return package in self.package_index

    def prereleases_allowed(self, package: str) -> bool:
        if isinstance(self.allow_prereleases, bool):
            return self.allow_prereleases
        return package in self.allow_prereleases

    def known_bad_reason(self, package: str, version: Version) -> str | None:
        entry = self.known_bad_entry(package, version)
        return entry[0] if entry else None

    def known_bad_entry(self, package: str, version: Version) -> tuple[str, str] | None:
        """(reason, source): the target's [known-bad] first, then the shipped advisories."""
        for text, reason in self.known_bad.get(package, {}).items():
            if Version(text) == version:
                return reason, self.source
        for text, (reason, link) in self.advisories.get(package, {}).items():
            if Version(text) == version:
                return reason, f"pinbump advisory, {link}" if link else "pinbump advisory"
        return None

    @property
    def active_group(self) -> Group:
        return self.groups[self.group]

    @property
    def checks_required(self) -> tuple[str, ...]:
        """What the gate requires; never empty, whichever layer the policy came from."""
        checks = self.required_checks if self.required_checks is not None else tuple(
            f"{STATUS_PREFIX}/{job}" for job in self.runner_labels)
        if not checks:
            raise ConfigError(f"{self.source}: no required checks (runner-labels is empty "
                              "and required-checks is not set): a gate that requires nothing "
                              "would merge anything")
        return checks


KNOWN_KEYS = {"group", "groups", "index-url", "index", "min-release-age", "allow-prereleases",
              "known-bad", "cap", "python", "doc-patterns", "dockerfile-args", "reviewers",
              "labels", "gate-workflow", "runner-labels", "required-checks", "merge-method",
              "bot-login", "platforms", "cuda-variants", "files", "exclude", "strict",
              "nightly-prs", "advisories", "gate-min-tests"}
GROUP_KEYS = {"lead", "lockstep", "companions"}


def _expect(where: str, key: str, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise ConfigError(f"{where}: key '{key}' must be {what}, got {value!r}")
    return value


def _version(where: str, key: str, value: Any) -> Version:
    _expect(where, key, value, str, "a version string")
    try:
        return Version(value)
    except InvalidVersion:
        raise ConfigError(f"{where}: key '{key}': {value!r} is not a valid version") from None


def _names(where: str, key: str, value: Any) -> tuple[str, ...]:
    _expect(where, key, value, list, "an array of package names")
    for item in value:
        _expect(where, key, item, str, "an array of package names")
    return tuple(canonicalize_name(v) for v in value)


def parse_config(raw: Mapping[str, Any], where: str, base: Policy | None = None) -> Policy:
    """Validate a [tool.pinbump] table and lay it over ``base``; errors name the key."""
    policy = base or Policy()
    prefix = "" if where.endswith("pinbump.toml") else "tool.pinbump."
    updates: dict[str, Any] = {"source": where}
    for key in raw:
        if key not in KNOWN_KEYS:
            listed = ", ".join(sorted(KNOWN_KEYS))
            raise ConfigError(f"{where}: unknown key '{prefix}{key}' (known keys: {listed})")
    groups = dict(policy.groups)
    for name, table in _expect(where, f"{prefix}groups", raw.get("groups", {}), dict,
                               "a table of groups").items():
        key = f"{prefix}groups.{name}"
        _expect(where, key, table, dict, "a table with lead, lockstep and companions")
        for sub in table:
            if sub not in GROUP_KEYS:
                raise ConfigError(f"{where}: unknown key '{key}.{sub}' (known keys: "
                                  f"{', '.join(sorted(GROUP_KEYS))})")
        if "lead" not in table:
            raise ConfigError(f"{where}: key '{key}.lead' is required")
        groups[name] = Group(
            name=name,
            lead=canonicalize_name(_expect(where, f"{key}.lead", table["lead"], str, "a name")),
            lockstep=_names(where, f"{key}.lockstep", table.get("lockstep", [])),
            companions=_names(where, f"{key}.companions", table.get("companions", [])),
        )
    updates["groups"] = groups
    if "group" in raw:
        updates["group"] = _expect(where, f"{prefix}group", raw["group"], str, "a group name")
        if updates["group"] not in groups:
            raise ConfigError(f"{where}: key '{prefix}group': no group named "
                              f"{updates['group']!r} (defined: {', '.join(sorted(groups))})")
    if "index-url" in raw:
        updates["index_url"] = _expect(where, f"{prefix}index-url", raw["index-url"], str, "a URL")
    members = sorted({m for g in groups.values() for m in g.members})

    def package(key: str, name: str) -> str:
        """A package key of a table: it must belong to a group (typos are not ignored)."""
        canonical = canonicalize_name(name)
        if canonical not in members:
            close = difflib.get_close_matches(canonical, members, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else \
                f" (packages of the groups: {', '.join(members)})"
            raise ConfigError(f"{where}: key '{key}': {name!r} is not a package of any "
                              f"group{hint}")
        return canonical

    if "index" in raw:
        table = _expect(where, f"{prefix}index", raw["index"], dict, "a table package = URL")
        indexes: dict[str, tuple[str, ...]] = {}
        for k, v in table.items():
            key = f"{prefix}index.{k}"
            urls = [v] if isinstance(v, str) else _expect(where, key, v, list,
                                                          "a URL or an array of URLs")
            for url in urls:
                _expect(where, key, url, str, "a URL or an array of URLs")
                if not re.match(r"https?://\S+$", url):
                    raise ConfigError(f"{where}: key '{key}': {url!r} is not an http(s) URL")
            indexes[package(key, k)] = tuple(urls)
        updates["package_index"] = indexes
    if "platforms" in raw:
        key = f"{prefix}platforms"
        values = _expect(where, key, raw["platforms"], list, "an array of platforms")
        for value in values:
            if value not in KNOWN_PLATFORMS:
                raise ConfigError(f"{where}: key '{key}': unknown platform {value!r} "
                                  f"(known: {', '.join(KNOWN_PLATFORMS)})")
        if not values:
            raise ConfigError(f"{where}: key '{key}' is empty: name at least one platform")
        updates["platforms"] = tuple(values)
    if "cuda-variants" in raw:
        key = f"{prefix}cuda-variants"
        values = _expect(where, key, raw["cuda-variants"], list, "an array such as "
                         '["cu129", "cu130"]')
        for value in values:
            if not isinstance(value, str) or not re.fullmatch(r"cu\d{3}", value):
                raise ConfigError(f"{where}: key '{key}': {value!r} is not a CUDA variant "
                                  "such as cu129")
        updates["cuda_variants"] = tuple(values)
    for key, attr in (("files", "files"), ("exclude", "exclude")):
        if key in raw:
            values = _expect(where, f"{prefix}{key}", raw[key], list, "an array of globs")
            for value in values:
                _expect(where, f"{prefix}{key}", value, str, "an array of globs")
            updates[attr] = tuple(values)
    for key, attr in (("strict", "strict"), ("nightly-prs", "nightly_prs")):
        if key in raw:
            updates[attr] = _expect(where, f"{prefix}{key}", raw[key], bool, "true or false")
    if "advisories" in raw and not _expect(where, f"{prefix}advisories", raw["advisories"],
                                           bool, "true or false"):
        updates["advisories"] = {}
    if "min-release-age" in raw:
        age = _expect(where, f"{prefix}min-release-age", raw["min-release-age"], (int, float),
                      "a number of days")
        if age < 0:
            raise ConfigError(f"{where}: key '{prefix}min-release-age' must not be negative")
        updates["min_release_age_days"] = float(age)
    if "allow-prereleases" in raw:
        value = raw["allow-prereleases"]
        updates["allow_prereleases"] = value if isinstance(value, bool) else frozenset(
            package(f"{prefix}allow-prereleases", n)
            for n in _names(where, f"{prefix}allow-prereleases", value))
    if "known-bad" in raw:
        table = _expect(where, f"{prefix}known-bad", raw["known-bad"], dict,
                        "a table package = {version = reason}")
        known: dict[str, dict[str, str]] = {}
        for pkg, versions in table.items():
            key = f"{prefix}known-bad.{pkg}"
            _expect(where, key, versions, dict, "a table version = reason")
            known[package(key, pkg)] = {
                str(_version(where, f"{key}.{v}", v)): _expect(where, f"{key}.{v}", r, str,
                                                               "a reason string")
                for v, r in versions.items()}
        updates["known_bad"] = known
    if "cap" in raw:
        table = _expect(where, f"{prefix}cap", raw["cap"], dict, "a table package = version")
        updates["caps"] = {package(f"{prefix}cap.{k}", k): _version(where, f"{prefix}cap.{k}", v)
                           for k, v in table.items()}
    if "python" in raw:
        updates["python"] = str(_version(where, f"{prefix}python", raw["python"]))
    if "doc-patterns" in raw:
        key = f"{prefix}doc-patterns"
        patterns = _expect(where, key, raw["doc-patterns"], list, "an array of regexes")
        for pattern in patterns:
            _expect(where, key, pattern, str, "an array of regexes")
            if "{version}" not in pattern:
                raise ConfigError(f"{where}: key '{key}': {pattern!r} has no {{version}}")
            try:
                re.compile(pattern.replace("{version}", "0"))
            except re.error as exc:
                raise ConfigError(f"{where}: key '{key}': {pattern!r} is not a valid regex "
                                  f"({exc})") from None
        updates["doc_patterns"] = tuple(patterns)
    if "dockerfile-args" in raw:
        key = f"{prefix}dockerfile-args"
        table = _expect(where, key, raw["dockerfile-args"], dict, "a table NAME = package")
        args: dict[str, str] = {}
        for name, package in table.items():
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ConfigError(f"{where}: key '{key}.{name}': not an ARG/ENV name")
            args[name] = canonicalize_name(_expect(where, f"{key}.{name}", package, str,
                                                   "a package name"))
        updates["dockerfile_args"] = args
    for key, attr in (("reviewers", "reviewers"), ("labels", "labels"),
                      ("required-checks", "required_checks")):
        if key in raw:
            values = _expect(where, f"{prefix}{key}", raw[key], list, "an array of strings")
            for value in values:
                _expect(where, f"{prefix}{key}", value, str, "an array of strings")
            if key == "required-checks" and not values:
                raise ConfigError(f"{where}: key '{prefix}required-checks' is empty: a gate "
                                  "that requires nothing would merge anything")
            updates[attr] = tuple(values)
    if "gate-workflow" in raw:
        updates["gate_workflow"] = _expect(where, f"{prefix}gate-workflow",
                                           raw["gate-workflow"], str, "a workflow file name")
    if "bot-login" in raw:
        updates["bot_login"] = _expect(where, f"{prefix}bot-login", raw["bot-login"], str,
                                       "a GitHub login such as 'github-actions[bot]'")
    if "merge-method" in raw:
        method = _expect(where, f"{prefix}merge-method", raw["merge-method"], str,
                         "merge, squash or rebase")
        if method not in MERGE_METHODS:
            raise ConfigError(f"{where}: key '{prefix}merge-method' must be one of "
                              f"{', '.join(MERGE_METHODS)}, got {method!r}")
        updates["merge_method"] = method
    if "gate-min-tests" in raw:
        key = f"{prefix}gate-min-tests"
        table = _expect(where, key, raw["gate-min-tests"], dict, "a table job = number")
        minimums: dict[str, int] = {}
        for job, count in table.items():
            _expect(where, f"{key}.{job}", count, int, "a whole number of tests")
            if count < 0:
                raise ConfigError(f"{where}: key '{key}.{job}' must not be negative")
            minimums[job] = count
        updates["gate_min_tests"] = minimums
    if "runner-labels" in raw:
        table = _expect(where, f"{prefix}runner-labels", raw["runner-labels"], dict,
                        "a table job = [labels]")
        runners: dict[str, tuple[str, ...]] = {}
        for job, labels in table.items():
            key = f"{prefix}runner-labels.{job}"
            if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", job):
                raise ConfigError(f"{where}: key '{key}': job names are lowercase letters, "
                                  "digits and dashes")
            _expect(where, key, labels, list, "an array of runner labels")
            for label in labels:
                _expect(where, key, label, str, "an array of runner labels")
            runners[job] = tuple(labels)
        updates["runner_labels"] = runners
    return replace(policy, **updates)


def builtin_data(group: str) -> BuiltinData | None:
    """The shipped index model of a built-in group (bot/data/<group>.toml), else None."""
    from importlib import resources

    if group not in BUILTIN_GROUPS:
        return None
    text = resources.files("bot.data").joinpath(f"{group}.toml").read_text(encoding="utf-8")
    return parse_builtin(load_toml(text, f"bot/data/{group}.toml").unwrap(),
                         f"bot/data/{group}.toml")


def builtin_advisories() -> dict[str, dict[str, tuple[str, str]]]:
    """The shipped known-bad versions: package -> version -> (reason, link)."""
    from importlib import resources

    where = "bot/data/known_bad.toml"
    text = resources.files("bot.data").joinpath("known_bad.toml").read_text(encoding="utf-8")
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for package, entries in load_toml(text, where).unwrap().items():
        for entry in entries:
            version = str(_version(where, f"{package}.version", entry.get("version")))
            out.setdefault(canonicalize_name(package), {})[version] = (
                str(entry["reason"]), str(entry.get("source", "")))
    return out


def load_policy(pinbump_toml: str | None, pyprojects: Sequence[PyProject],
                overrides: Mapping[str, Any]) -> Policy:
    """Defaults, then pinbump.toml (its text, when the target has one) or the shallowest
    pyproject with [tool.pinbump], then flags. The config is parsed once."""
    policy = Policy(advisories=builtin_advisories())
    if pinbump_toml is not None:
        raw = load_toml(pinbump_toml, "pinbump.toml").unwrap()
        policy = parse_config(raw.get("tool", {}).get("pinbump", raw), "pinbump.toml", policy)
    else:
        for toml in sorted(pyprojects, key=lambda t: (t.path.count("/"), t.path)):
            if toml.tool_config is not None:
                policy = parse_config(toml.tool_config, toml.path, policy)
                break
    flags = {k: v for k, v in overrides.items() if v is not None}
    if flags.get("channel", "stable") not in CHANNELS:
        raise ConfigError(f"--channel: {flags['channel']!r} is not one of "
                          f"{', '.join(CHANNELS)}")
    if "group" in flags and flags["group"] not in policy.groups:
        raise ConfigError(f"--group: no group named {flags['group']!r} "
                          f"(defined: {', '.join(sorted(policy.groups))})")
    policy = _split_index_credentials(replace(policy, **flags), "index_url" in flags)
    if policy.channel == "nightly":
        # Nightly builds are pre-releases (0.7.1.dev20261128) and are tried the day they land.
        group = policy.active_group
        allowed = policy.allow_prereleases
        policy = replace(policy, allow_prereleases=True if allowed is True else frozenset(
            (allowed or frozenset()) | {group.lead, *group.lockstep}),
            min_release_age_days=flags.get("min_release_age_days", 0.0))
    return policy


def _split_index_credentials(policy: Policy, from_flag: bool) -> Policy:
    """Check every index URL; keep their credentials in ``policy.credentials`` only."""
    found: list[Credentials] = []

    def clean(where: str, url: str) -> str:
        try:
            plain, creds = index_url(url)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if creds is not None:
            found.append(creds)
        return plain

    prefix = "" if policy.source.endswith("pinbump.toml") else "tool.pinbump."
    main_url = clean("--index-url" if from_flag else f"{policy.source}: key '{prefix}index-url'",
                     policy.index_url)
    per_package = {name: tuple(clean(f"{policy.source}: key '{prefix}index.{name}'", url)
                               for url in urls)
                   for name, urls in policy.package_index.items()}
    return replace(policy, index_url=main_url, package_index=per_package,
                   credentials=tuple(found))


def config_names(policy: Policy) -> set[str]:
    """Every package of every group (the built-in ones included): what discovery looks for."""
    return {name for group in policy.groups.values() for name in group.members}
