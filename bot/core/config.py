"""Policy: built-in defaults, then pinbump.toml or [tool.pinbump], then command-line flags."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from bot.core.discovery import PyProject, load_toml
from bot.core.indexmodel import CHANNELS, BuiltinData, parse_builtin
from bot.core.models import Channel, MergeMethod, RebaseWhen
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
MERGE_METHODS = tuple(m.value for m in MergeMethod)
REBASE_WHEN = tuple(w.value for w in RebaseWhen)
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
    merge_method: MergeMethod = MergeMethod.SQUASH
    bot_login: str | None = None  # who opens the bot PRs; default: the token's identity
    rebase_when: RebaseWhen = RebaseWhen.CONFLICTED
    ci_comment: str | None = None  # posted after each push, e.g. "/tag-and-rerun-ci"
    extra_labels: tuple[str, ...] = ()  # added to the bot PR besides `labels`
    platforms: tuple[str, ...] = PLATFORMS
    cuda_variants: tuple[str, ...] = ()  # default: the target's Dockerfiles, else built-in
    files: tuple[str, ...] = ()  # more globs discovery reads
    exclude: tuple[str, ...] = ()  # globs discovery skips
    strict: bool = False  # an unreachable index is an error, not a report
    channel: Channel = Channel.STABLE
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


@dataclass(frozen=True)
class _Keys:
    """Where a config table comes from, how its keys are spelled in messages, and the
    packages its package keys may name (those of every group)."""

    where: str
    prefix: str
    members: tuple[str, ...] = ()

    def key(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def error(self, key: str, text: str) -> ConfigError:
        return ConfigError(f"{self.where}: key '{self.key(key)}'{text}")

    def expect(self, key: str, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
        return _expect(self.where, self.key(key), value, kind, what)

    def strings(self, key: str, value: Any, what: str) -> tuple[str, ...]:
        values = self.expect(key, value, list, what)
        for item in values:
            self.expect(key, item, str, what)
        return tuple(values)

    def package(self, key: str, name: str) -> str:
        """A package key of a table: it must belong to a group (typos are not ignored)."""
        canonical = canonicalize_name(name)
        if canonical not in self.members:
            close = difflib.get_close_matches(canonical, self.members, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else \
                f" (packages of the groups: {', '.join(self.members)})"
            raise self.error(key, f": {name!r} is not a package of any group{hint}")
        return canonical


# Each key of [tool.pinbump]: (the Policy field it sets, how its value is read). A reader gets
# the table's context, the key and the raw value and returns the field's value.
_Reader = Callable[[_Keys, str, Any], Any]


def _text(what: str) -> _Reader:
    return lambda k, key, value: k.expect(key, value, str, what)


def _flag(k: _Keys, key: str, value: Any) -> bool:
    return bool(k.expect(key, value, bool, "true or false"))


def _strings(what: str) -> _Reader:
    return lambda k, key, value: k.strings(key, value, what)


def _globs(k: _Keys, key: str, value: Any) -> tuple[str, ...]:
    """Globs of paths relative to the target's root: one naming a path outside it (``..``,
    an absolute path) would match nothing, silently, so it is an error."""
    globs = k.strings(key, value, "an array of globs")
    for glob in globs:
        if glob.startswith("/") or re.match(r"[A-Za-z]:[/\\]", glob) \
                or ".." in glob.split("/"):
            raise k.error(key, f": {glob!r} points outside the target (globs match paths "
                               "relative to its root)")
    return globs


def _index(k: _Keys, key: str, value: Any) -> dict[str, tuple[str, ...]]:
    table = k.expect(key, value, dict, "a table package = URL")
    indexes: dict[str, tuple[str, ...]] = {}
    for name, urls in table.items():
        sub = f"{key}.{name}"
        listed = [urls] if isinstance(urls, str) else k.strings(sub, urls,
                                                                "a URL or an array of URLs")
        for url in listed:
            if not re.match(r"https?://\S+$", url):
                raise k.error(sub, f": {url!r} is not an http(s) URL")
        indexes[k.package(sub, name)] = tuple(listed)
    return indexes


def _platforms(k: _Keys, key: str, value: Any) -> tuple[str, ...]:
    values = k.expect(key, value, list, "an array of platforms")
    for item in values:
        if item not in KNOWN_PLATFORMS:
            raise k.error(key, f": unknown platform {item!r} "
                               f"(known: {', '.join(KNOWN_PLATFORMS)})")
    if not values:
        raise k.error(key, " is empty: name at least one platform")
    return tuple(values)


def _cuda_variants(k: _Keys, key: str, value: Any) -> tuple[str, ...]:
    values = k.expect(key, value, list, 'an array such as ["cu129", "cu130"]')
    for item in values:
        if not isinstance(item, str) or not re.fullmatch(r"cu\d{3}", item):
            raise k.error(key, f": {item!r} is not a CUDA variant such as cu129")
    return tuple(values)


def _advisories(k: _Keys, key: str, value: Any) -> object:
    """``advisories = false`` turns the shipped advisories off; true keeps the default."""
    return _KEEP if k.expect(key, value, bool, "true or false") else {}


def _min_release_age(k: _Keys, key: str, value: Any) -> float:
    age = k.expect(key, value, (int, float), "a number of days")
    if age < 0:
        raise k.error(key, " must not be negative")
    return float(age)


def _allow_prereleases(k: _Keys, key: str, value: Any) -> bool | frozenset[str]:
    if isinstance(value, bool):
        return value
    return frozenset(k.package(key, n) for n in _names(k.where, k.key(key), value))


def _known_bad(k: _Keys, key: str, value: Any) -> dict[str, dict[str, str]]:
    table = k.expect(key, value, dict, "a table package = {version = reason}")
    known: dict[str, dict[str, str]] = {}
    for package, versions in table.items():
        sub = f"{key}.{package}"
        k.expect(sub, versions, dict, "a table version = reason")
        known[k.package(sub, package)] = {
            str(_version(k.where, k.key(f"{sub}.{v}"), v)):
                k.expect(f"{sub}.{v}", reason, str, "a reason string")
            for v, reason in versions.items()}
    return known


def _caps(k: _Keys, key: str, value: Any) -> dict[str, Version]:
    table = k.expect(key, value, dict, "a table package = version")
    return {k.package(f"{key}.{name}", name): _version(k.where, k.key(f"{key}.{name}"), v)
            for name, v in table.items()}


def _python(k: _Keys, key: str, value: Any) -> str:
    return str(_version(k.where, k.key(key), value))


def _doc_patterns(k: _Keys, key: str, value: Any) -> tuple[str, ...]:
    patterns = k.strings(key, value, "an array of regexes")
    for pattern in patterns:
        if "{version}" not in pattern:
            raise k.error(key, f": {pattern!r} has no {{version}}")
        try:
            re.compile(pattern.replace("{version}", "0"))
        except re.error as exc:
            raise k.error(key, f": {pattern!r} is not a valid regex ({exc})") from None
    return patterns


def _dockerfile_args(k: _Keys, key: str, value: Any) -> dict[str, str]:
    table = k.expect(key, value, dict, "a table NAME = package")
    args: dict[str, str] = {}
    for name, package in table.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise k.error(f"{key}.{name}", ": not an ARG/ENV name")
        args[name] = canonicalize_name(k.expect(f"{key}.{name}", package, str,
                                                "a package name"))
    return args


def _required_checks(k: _Keys, key: str, value: Any) -> tuple[str, ...]:
    values = k.strings(key, value, "an array of strings")
    if not values:
        raise k.error(key, " is empty: a gate that requires nothing would merge anything")
    return values


def _merge_method(k: _Keys, key: str, value: Any) -> MergeMethod:
    method = k.expect(key, value, str, "merge, squash or rebase")
    if method not in MERGE_METHODS:
        raise k.error(key, f" must be one of {', '.join(MERGE_METHODS)}, got {method!r}")
    return MergeMethod(method)


def _rebase_when(k: _Keys, key: str, value: Any) -> RebaseWhen:
    when = k.expect(key, value, str, "conflicted, behind or never")
    if when not in REBASE_WHEN:
        raise k.error(key, f" must be one of {', '.join(REBASE_WHEN)}, got {when!r}")
    return RebaseWhen(when)


def _ci_comment(k: _Keys, key: str, value: Any) -> str:
    text = k.expect(key, value, str, "a comment such as '/tag-and-rerun-ci'")
    if not text.strip() or len(text) > 1000:
        raise k.error(key, " must be 1 to 1000 characters")
    return str(text)


def _gate_min_tests(k: _Keys, key: str, value: Any) -> dict[str, int]:
    table = k.expect(key, value, dict, "a table job = number")
    minimums: dict[str, int] = {}
    for job, count in table.items():
        k.expect(f"{key}.{job}", count, int, "a whole number of tests")
        if count < 0:
            raise k.error(f"{key}.{job}", " must not be negative")
        minimums[job] = count
    return minimums


def _runner_labels(k: _Keys, key: str, value: Any) -> dict[str, tuple[str, ...]]:
    table = k.expect(key, value, dict, "a table job = [labels]")
    runners: dict[str, tuple[str, ...]] = {}
    for job, labels in table.items():
        sub = f"{key}.{job}"
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", job):
            raise k.error(sub, ": job names are lowercase letters, digits and dashes")
        runners[job] = k.strings(sub, labels, "an array of runner labels")
    return runners


_KEEP = object()  # a reader's answer that leaves the field as it was

# key -> (Policy field, reader), in the order keys are checked
CONFIG_KEYS: dict[str, tuple[str, _Reader]] = {
    "index-url": ("index_url", _text("a URL")),
    "index": ("package_index", _index),
    "platforms": ("platforms", _platforms),
    "cuda-variants": ("cuda_variants", _cuda_variants),
    "files": ("files", _globs),
    "exclude": ("exclude", _globs),
    "strict": ("strict", _flag),
    "nightly-prs": ("nightly_prs", _flag),
    "advisories": ("advisories", _advisories),
    "min-release-age": ("min_release_age_days", _min_release_age),
    "allow-prereleases": ("allow_prereleases", _allow_prereleases),
    "known-bad": ("known_bad", _known_bad),
    "cap": ("caps", _caps),
    "python": ("python", _python),
    "doc-patterns": ("doc_patterns", _doc_patterns),
    "dockerfile-args": ("dockerfile_args", _dockerfile_args),
    "reviewers": ("reviewers", _strings("an array of strings")),
    "labels": ("labels", _strings("an array of strings")),
    "required-checks": ("required_checks", _required_checks),
    "gate-workflow": ("gate_workflow", _text("a workflow file name")),
    "bot-login": ("bot_login", _text("a GitHub login such as 'github-actions[bot]'")),
    "merge-method": ("merge_method", _merge_method),
    "rebase-when": ("rebase_when", _rebase_when),
    "ci-comment": ("ci_comment", _ci_comment),
    "extra-labels": ("extra_labels", _strings("an array of label names")),
    "gate-min-tests": ("gate_min_tests", _gate_min_tests),
    "runner-labels": ("runner_labels", _runner_labels),
}
KNOWN_KEYS = {"group", "groups", *CONFIG_KEYS}
GROUP_KEYS = {"lead", "lockstep", "companions"}


def _groups(k: _Keys, raw: Mapping[str, Any], groups: dict[str, Group]) -> dict[str, Group]:
    """The built-in groups plus the config's [groups.NAME] tables."""
    out = dict(groups)
    for name, table in k.expect("groups", raw.get("groups", {}), dict,
                                "a table of groups").items():
        key = f"groups.{name}"
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}", name) or ".." in name:
            raise ConfigError(f"{k.where}: key {k.key(key)!r}: a group name is up to 40 "
                              "letters, digits, '.', '_' and '-' (it names the bot's branch "
                              "pinbump/<group>-<version>)")
        k.expect(key, table, dict, "a table with lead, lockstep and companions")
        for sub in table:
            if sub not in GROUP_KEYS:
                raise ConfigError(f"{k.where}: unknown key '{k.key(key)}.{sub}' (known keys: "
                                  f"{', '.join(sorted(GROUP_KEYS))})")
        if "lead" not in table:
            raise k.error(f"{key}.lead", " is required")
        out[name] = Group(
            name=name,
            lead=canonicalize_name(k.expect(f"{key}.lead", table["lead"], str, "a name")),
            lockstep=_names(k.where, k.key(f"{key}.lockstep"), table.get("lockstep", [])),
            companions=_names(k.where, k.key(f"{key}.companions"),
                              table.get("companions", [])),
        )
    return out


def parse_config(raw: Mapping[str, Any], where: str, base: Policy | None = None) -> Policy:
    """Validate a [tool.pinbump] table and lay it over ``base``; errors name the key."""
    policy = base or Policy()
    k = _Keys(where, "" if where.endswith("pinbump.toml") else "tool.pinbump.")
    for key in raw:
        if key not in KNOWN_KEYS:
            listed = ", ".join(sorted(KNOWN_KEYS))
            raise ConfigError(f"{where}: unknown key '{k.key(key)}' (known keys: {listed})")
    groups = _groups(k, raw, dict(policy.groups))
    updates: dict[str, Any] = {"source": where, "groups": groups}
    if "group" in raw:
        updates["group"] = k.expect("group", raw["group"], str, "a group name")
        if updates["group"] not in groups:
            raise k.error("group", f": no group named {updates['group']!r} "
                                   f"(defined: {', '.join(sorted(groups))})")
    k = replace(k, members=tuple(sorted({m for g in groups.values() for m in g.members})))
    for key, (attr, read) in CONFIG_KEYS.items():
        if key in raw:
            value = read(k, key, raw[key])
            if value is not _KEEP:
                updates[attr] = value
    return replace(policy, **updates)


def builtin_data(group: str) -> BuiltinData | None:
    """The shipped index model of a built-in group (bot/data/<group>.toml), else None."""
    from importlib import resources

    if group not in BUILTIN_GROUPS:
        return None
    text = resources.files("bot.data").joinpath(f"{group}.toml").read_text(encoding="utf-8")
    return parse_builtin(load_toml(text, f"bot/data/{group}.toml"), f"bot/data/{group}.toml")


def builtin_advisories() -> dict[str, dict[str, tuple[str, str]]]:
    """The shipped known-bad versions: package -> version -> (reason, link)."""
    from importlib import resources

    where = "bot/data/known_bad.toml"
    text = resources.files("bot.data").joinpath("known_bad.toml").read_text(encoding="utf-8")
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for package, entries in load_toml(text, where).items():
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
        raw = load_toml(pinbump_toml, "pinbump.toml")
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
    if "channel" in flags:
        flags["channel"] = Channel(flags["channel"])
    if "group" in flags and flags["group"] not in policy.groups:
        raise ConfigError(f"--group: no group named {flags['group']!r} "
                          f"(defined: {', '.join(sorted(policy.groups))})")
    policy = _split_index_credentials(replace(policy, **flags), "index_url" in flags)
    if policy.channel == Channel.NIGHTLY:
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
