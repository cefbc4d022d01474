"""Pick the newest complete and consistent set of a group.

Pure logic over a ``Source`` (the index adapter is passed in): no HTTP, no files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from bot.core.config import Group, Policy
from bot.core.discovery import Target
from bot.core.environment import Environment
from bot.core.indexmodel import IndexModel, IndexRef
from bot.core.models import (
    Change,
    Channel,
    DistFile,
    IndexProblem,
    Pin,
    PinKind,
    Plan,
    Rejection,
    Vocabulary,
)
from bot.core.specs import clause_version, other_clauses, replace_clause, split_requirement
from bot.errors import (
    Conflict,
    IndexError_,
    InputError,
    PinbumpError,
    ResolutionError,
    UnknownPackage,
)


class Source(Protocol):
    """What resolution needs from indexes (``adapters.sources.IndexSource`` is the real one).

    ``releases_on`` raises ``UnknownPackage`` when the index has no such project (404) and
    ``IndexError_`` when it cannot be read (unreachable, failing)."""

    def releases_on(self, package: str, index: IndexRef) -> dict[Version, list[DistFile]]: ...

    def requires(self, package: str, version: Version, files: Sequence[DistFile]
                 ) -> list[Requirement]: ...

    def upload_time(self, file: DistFile) -> datetime | None: ...


class _Hidden:
    """A version uploaded after --as-of: it did not exist yet, so it is not even a rejection."""


HIDDEN = _Hidden()


@dataclass(frozen=True)
class Constraint:
    requirement: Requirement
    owner: str  # "flashinfer-python 0.6.11", "python/pyproject.toml:12", "cap in pinbump.toml"

    def allows(self, version: Version) -> bool:
        return self.requirement.specifier.contains(version, prereleases=True)

    def __str__(self) -> str:
        extras = f"[{','.join(sorted(self.requirement.extras))}]" if self.requirement.extras \
            else ""
        return f"{extras}{self.requirement.specifier} (from {self.owner})"


@dataclass
class Context:
    target: Target
    policy: Policy
    source: Source
    env: Environment
    now: datetime  # the end of --as-of's day, or the present
    as_of: bool = False
    model: IndexModel | None = None
    rejected: list[Rejection] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    problems: dict[tuple[str, str], IndexProblem] = field(default_factory=dict)
    found_on: dict[tuple[str, Version], str] = field(default_factory=dict)
    missing_on: dict[str, set[str]] = field(default_factory=dict)  # package -> index urls
    errors: dict[tuple[str, str], IndexError_] = field(default_factory=dict)
    _merged: dict[tuple[str, str], dict[Version, list[DistFile]]] = field(default_factory=dict)
    not_verified: dict[str, str] = field(default_factory=dict)
    bounds: dict[str, list[Constraint]] = field(default_factory=dict)  # what each choice obeys

    def bounds_on(self, package: str, constraints: Iterable[Constraint]) -> list[Constraint]:
        """The constraints on ``package``, each once."""
        out: dict[str, Constraint] = {}
        for c in constraints:
            if canonicalize_name(c.requirement.name) == package:
                out.setdefault(str(c), c)
        return list(out.values())

    @property
    def group(self) -> Group:
        return self.policy.active_group

    def indexes(self, package: str) -> tuple[IndexRef, ...]:
        if self.model is not None and self.model.for_package(package):
            return self.model.for_package(package)
        return (IndexRef(self.policy.index_for(package), "default index"),)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def fmt_age(self, delta: timedelta) -> str:
        hours = delta.total_seconds() / 3600
        return f"{hours:.0f} hours" if hours < 48 else f"{hours / 24:.1f} days"


# -- screening one version ------------------------------------------------------------------
def _unpublished(ctx: Context, files: Sequence[DistFile]) -> bool:
    """Not yet published on the --as-of day: not even a rejection."""
    installable = [f for f in files if ctx.env.installable(f)]
    uploaded = first_upload(ctx, installable) if installable else None
    return uploaded is not None and uploaded > ctx.now


def _policy_problem(ctx: Context, package: str, version: Version, current: bool) -> str | None:
    """Known bad (the current pin only warns), capped, or a pre-release not allowed."""
    policy = ctx.policy
    bad = policy.known_bad_entry(package, version)
    if bad is not None:
        if not current:
            return f"known bad: {bad[0]} ({bad[1]})"
        ctx.warn(f"{package} {version} (pinned) is known bad: {bad[0]} ({bad[1]}); kept "
                 "until a newer complete set exists (never downgraded)")
    cap = policy.caps.get(package)
    if cap is not None and version >= cap:
        return f"capped below {cap} by {policy.source}"
    if version.is_prerelease and not policy.prereleases_allowed(package):
        return "pre-release (allow with allow-prereleases)"
    return None


def _live(ctx: Context, package: str, version: Version, files: Sequence[DistFile],
          current: bool) -> list[DistFile] | str:
    """The files not yanked; why not when all are (the current pin keeps them, warned)."""
    live = [f for f in files if f.yanked is None]
    if live:
        return live
    why = next((f.yanked for f in files if f.yanked), "")
    if not current:
        return f"yanked{': ' + why if why else ''}"
    ctx.warn(f"{package} {version} (pinned) is yanked{': ' + why if why else ''}; kept "
             "until a newer complete set exists (never downgraded)")
    return list(files)


def _wheels(ctx: Context, live: Sequence[DistFile], current: bool) -> list[DistFile] | str:
    """The wheels installable here; why not when none is, or (but for the current pin) when
    a deployed platform or Python has none."""
    wheels = [f for f in live if ctx.env.installable(f)]
    if not wheels:
        return f"no wheel installable on {ctx.env.describe()}"
    missing = ctx.env.missing(wheels)
    if missing and not current:
        return f"no wheel for {'; '.join(missing)}"
    return wheels


def _age_problem(ctx: Context, wheels: Sequence[DistFile]) -> str | _Hidden | None:
    """Too new for min-release-age, of unknown age where age matters, or not yet uploaded
    on the --as-of day."""
    policy = ctx.policy
    uploaded = first_upload(ctx, wheels)
    if uploaded is None:
        if ctx.as_of or policy.min_release_age_days > 0:
            return "upload time unknown (the index gives neither upload-time nor Last-Modified)"
        return None
    if ctx.as_of and uploaded > ctx.now:
        return HIDDEN
    age = ctx.now - uploaded
    minimum = timedelta(days=policy.min_release_age_days)
    if age < minimum:
        return (f"too new: uploaded {ctx.fmt_age(age)} before "
                f"{'--as-of' if ctx.as_of else 'now'}; minimum release age is "
                f"{policy.min_release_age_days:g} days")
    return None


def screen(ctx: Context, package: str, version: Version, files: Sequence[DistFile],
           *, exempt_age: bool = False, current: bool = False) -> str | _Hidden | None:
    """None when ``package`` ``version`` may be used; else why not (or HIDDEN).

    The current pin (``current``) is exempt from the age, known-bad, yanked and platform
    checks: what is installed today never causes a downgrade; a warning says what is wrong."""
    if ctx.as_of and files and not (current or exempt_age) and _unpublished(ctx, files):
        return HIDDEN  # the current pin is judged below, with its own message
    problem = _policy_problem(ctx, package, version, current)
    if problem is not None:
        return problem
    live = _live(ctx, package, version, files, current)
    if isinstance(live, str):
        return live
    wheels = _wheels(ctx, live, current)
    if isinstance(wheels, str):
        return wheels
    if not (exempt_age or current):
        return _age_problem(ctx, wheels)
    if current and ctx.as_of and package == ctx.group.lead:
        uploaded = first_upload(ctx, wheels)
        if uploaded is not None and uploaded > ctx.now:
            return HIDDEN  # pinned, but not yet published on the --as-of day
    return None


def local_problem(ctx: Context, package: str, version: Version) -> str | None:
    """A local version (0.6.12+evil.example) is never a target, except the CUDA-variant label
    of a package published per variant (flashinfer-jit-cache 0.6.11+cu130)."""
    if version.local is None:
        return None
    if ctx.model is not None and version.local in ctx.model.variants \
            and ctx.model.variant_based(package):
        return None
    return f"local version (+{version.local}): never a target unless configured"


def first_upload(ctx: Context, files: Sequence[DistFile]) -> datetime | None:
    known = [f.upload_time for f in files if f.upload_time is not None]
    if known:
        return min(known)
    return ctx.source.upload_time(best_wheel(ctx.env, files))


def best_wheel(env: Environment, files: Sequence[DistFile]) -> DistFile:
    """The wheel whose metadata stands for the version: pure-Python first, then any platform."""
    wheels = [f for f in files if f.is_wheel and f.yanked is None and env.installable(f)] or \
        [f for f in files if f.is_wheel]
    return sorted(wheels, key=lambda f: (not any(t.endswith("-none-any") for t in f.tags),
                                         f.filename))[0]


# -- the plan -------------------------------------------------------------------------------
def lead_pins_of(target: Target, policy: Policy) -> list[Pin]:
    """The lead's pins; none is an error (checked before the index is asked anything)."""
    group = policy.active_group
    lead_pins = target.pins_of(group.lead)
    if not lead_pins:
        raise InputError(f"{target.root}: no requirement on {group.lead} in any pyproject, "
                         "requirements file, setup.py/setup.cfg, Dockerfile, CI script or "
                         f"versions JSON; nothing to plan for group {group.name!r}")
    return lead_pins


def make_plan(target: Target, policy: Policy, source: Source, now: datetime, *,
              as_of: bool = False, model: IndexModel | None = None,
              env: Environment | None = None) -> Plan:
    group = policy.active_group
    lead_pins = lead_pins_of(target, policy)
    env = env or Environment.for_target(target.requires_python(group.lead), policy.python,
                                        policy.platforms)
    ctx = Context(target=target, policy=policy, source=source, env=env, now=now, as_of=as_of,
                  model=model)
    currents = [p.current for p in lead_pins if p.current is not None]
    current = max(currents) if currents else None
    own = _own_bounds(ctx)
    releases = _releases(ctx, group.lead)
    conflicts: list[Conflict] = []
    hidden_current: str | None = None
    for version in sorted(releases, reverse=True):
        if current is not None and version < current:
            break
        is_current = version == current
        reason: str | _Hidden | None = local_problem(ctx, group.lead, version)
        if reason is None and not is_current:
            bad = _violated(own, group.lead, version)
            reason = f"excluded by the target's own specifier {bad}" if bad else None
        if reason is None:
            reason = screen(ctx, group.lead, version, releases[version], exempt_age=is_current,
                            current=is_current)
        if reason is None:
            reason = _lockstep_problem(ctx, version, exempt_age=is_current)
        chosen: dict[str, Version] | None = None
        if reason is None:
            chosen, reason = _solve_companions(ctx, version)
        if isinstance(reason, _Hidden):
            if is_current:
                hidden_current = _missing_current(ctx, group.lead, version)
            continue
        if reason is not None:
            ctx.rejected.append(Rejection(group.lead, str(version), reason,
                                          _upload_day(ctx, releases[version])))
            conflicts.append(Conflict(group.lead, str(version), reason))
            continue
        assert chosen is not None
        return _build_plan(ctx, version, current, chosen)
    unavailable = hidden_current
    if current is not None and current not in releases:
        unavailable = _missing_current(ctx, group.lead, current)
    raise ResolutionError(group.name, conflicts, unavailable)


def _upload_day(ctx: Context, files: Sequence[DistFile]) -> datetime | None:
    """When a rejected version was uploaded (PEP 700, else its wheel's Last-Modified)."""
    wheels = [f for f in files if f.is_wheel]
    if not wheels:
        return _uploaded(files)
    try:
        return first_upload(ctx, wheels)
    except PinbumpError:
        return None


def _uploaded(files: Sequence[DistFile]) -> datetime | None:
    known = [f.upload_time for f in files if f.upload_time is not None]
    return min(known) if known else None


def _own_bounds(ctx: Context) -> list[Constraint]:
    """The target's own bounds on the lead beside its pin (<0.7, !=0.6.12): they survive."""
    out = []
    for pin in ctx.target.pins_of(ctx.group.lead):
        rest = other_clauses(split_requirement(pin.requirement)[1])
        if rest:
            out.append(Constraint(Requirement(f"{ctx.group.lead}{rest}"), pin.where))
    cap = ctx.policy.caps.get(ctx.group.lead)
    if cap is not None:
        out.append(Constraint(Requirement(f"{ctx.group.lead}<{cap}"),
                              f"cap in {ctx.policy.source}"))
    return out


def _missing_current(ctx: Context, package: str, current: Version) -> str:
    everything = _merged(ctx, package, ctx.indexes(package))
    files = everything.get(current)
    where = ", ".join(r.url for r in ctx.indexes(package))
    if ctx.as_of and files:
        uploaded = _uploaded(files) or first_upload(ctx, [f for f in files if f.is_wheel]
                                                    or files)
        when = f" (uploaded {uploaded:%Y-%m-%d})" if uploaded else ""
        return (f"{package} {current} (pinned) was not yet published on "
                f"{ctx.now:%Y-%m-%d}{when}; choose a later --as-of")
    return f"{package} {current} (pinned) is not on {where}"


def _fetch(ctx: Context, package: str, ref: IndexRef) -> dict[Version, list[DistFile]] | None:
    """One index's releases; an unreachable index is recorded (never silent) and gives None;
    a 404 gives {} (the package is simply not there)."""
    try:
        return ctx.source.releases_on(package, ref)
    except UnknownPackage as exc:
        ctx.missing_on.setdefault(package, set()).add(ref.url)
        ctx.errors[(package, ref.url)] = exc
        return {}
    except IndexError_ as exc:
        detail = str(exc)
        detail = detail.split(": ", 1)[1] if detail.startswith(("http", ref.url)) else detail
        ctx.problems[(package, ref.url)] = IndexProblem(package, ref.url, detail, "")
        ctx.errors[(package, ref.url)] = exc
        return None


def _merged(ctx: Context, package: str, refs: Sequence[IndexRef]) -> dict[Version,
                                                                             list[DistFile]]:
    key = (package, "|".join(r.url for r in refs))
    if key not in ctx._merged:
        out: dict[Version, list[DistFile]] = {}
        for ref in refs:
            found = _fetch(ctx, package, ref)
            for version, files in (found or {}).items():
                if version not in out:
                    ctx.found_on.setdefault((package, version), ref.url)
                out.setdefault(version, []).extend(files)
        ctx._merged[key] = out
    return ctx._merged[key]


def _releases(ctx: Context, package: str, refs: Sequence[IndexRef] | None = None
              ) -> dict[Version, list[DistFile]]:
    """The package's files by version on its indexes; with --as-of, files uploaded later are
    left out. No index answering at all (every one unreachable) is an error here."""
    refs = tuple(refs) if refs is not None else ctx.indexes(package)
    releases = _merged(ctx, package, refs)
    if all((package, r.url) in ctx.problems for r in refs):
        if len(refs) == 1:
            raise ctx.errors[(package, refs[0].url)]
        raise IndexError_(f"{package}: no index could be read: "
                          + "; ".join(f"{r.url} ({ctx.problems[(package, r.url)].error})"
                                      for r in refs))
    if all(r.url in ctx.missing_on.get(package, set()) for r in refs):
        if len(refs) == 1:
            raise ctx.errors[(package, refs[0].url)]
        raise UnknownPackage(f"{package}: not found on {', '.join(r.url for r in refs)} "
                             "(HTTP 404); check the name or set its index in "
                             "[tool.pinbump.index]")
    return _after_as_of(ctx, releases)


def _after_as_of(ctx: Context, releases: dict[Version, list[DistFile]]
                 ) -> dict[Version, list[DistFile]]:
    if not ctx.as_of:
        return releases
    out = {}
    for version, files in releases.items():
        kept = [f for f in files if f.upload_time is None or f.upload_time <= ctx.now]
        if kept:
            out[version] = kept
    return out


def _used(ctx: Context, package: str) -> bool:
    return bool(ctx.target.pins_of(package)) or ctx.policy.has_own_index(package) or any(
        package in d.packages for d in ctx.target.indexes)


def _unreachable(ctx: Context, package: str, refs: Sequence[IndexRef]) -> list[str]:
    return [r.url for r in refs if (package, r.url) in ctx.problems]


def _lockstep_problem(ctx: Context, version: Version, *, exempt_age: bool) -> str | None:
    for package in ctx.group.lockstep:
        refs = ctx.indexes(package)
        used = _used(ctx, package)
        if ctx.model is not None and ctx.model.variant_based(package):
            problem = _variant_problem(ctx, package, version, exempt_age=exempt_age)
        else:
            problem = _plain_problem(ctx, package, version, refs, exempt_age=exempt_age)
        if problem is None:
            if not used:
                ctx.not_verified.pop(package, None)
            continue
        if not used:
            ctx.not_verified[package] = problem.removeprefix("!") + "; optional here (not pinned)"
            continue
        if problem.startswith("!"):  # nothing could be read: reported, never blocking
            ctx.not_verified[package] = problem[1:]
            continue
        return problem
    return None


def _plain_problem(ctx: Context, package: str, version: Version, refs: Sequence[IndexRef],
                   *, exempt_age: bool) -> str | None:
    where = ", ".join(r.url for r in refs)
    try:
        releases = _releases(ctx, package, refs)
    except UnknownPackage:
        if any(p.kind == PinKind.REQUIREMENT for p in ctx.target.pins_of(package)):
            raise  # the target pins a package no index knows: a wrong name or index
        return f"!{package}: not found on {where} (HTTP 404); set its index in " \
               "[tool.pinbump.index] to check it"
    except IndexError_ as exc:
        return f"!{exc}"
    files = releases.get(version)
    if files is None:
        down = _unreachable(ctx, package, refs)
        if down:
            return (f"{package} {version} not verified: {', '.join(down)} unreachable and "
                    f"not on {', '.join(r.url for r in refs if r.url not in down)}")
        raw = _merged(ctx, package, refs).get(version)
        if raw and ctx.as_of:
            return f"{package} {version} was not yet published on {ctx.now:%Y-%m-%d}"
        return f"{package} {version} is not published on {where}"
    reason = screen(ctx, package, version, files, exempt_age=exempt_age, current=exempt_age)
    if isinstance(reason, _Hidden):
        return f"{package} {version} was not yet published on {ctx.now:%Y-%m-%d}"
    if reason:
        return f"{package} {version}: {reason}"
    return None


def _variant_problem(ctx: Context, package: str, version: Version, *, exempt_age: bool
                     ) -> str | None:
    """Every CUDA variant the target installs has ``package`` at ``version`` (a local label
    ``+cuXYZ`` allowed), with wheels for every platform, and, from 0.7 on, every provider
    wheel the shim names at the shim's full version on the same index."""
    assert ctx.model is not None
    refs_all = ctx.indexes(package)
    verified = 0
    for variant in ctx.model.variants:
        refs = [r for r in refs_all if r.variant == variant]
        if not refs:
            continue
        try:
            releases = _releases(ctx, package, refs)
        except UnknownPackage:
            return f"{package} {version}: not on the {variant} index {refs[0].url}"
        except IndexError_:
            continue  # reported per package; this variant stays not verified
        matches = {v: f for v, f in releases.items()
                   if Version(v.public) == version and v.local in (None, variant)}
        if not matches:
            if ctx.as_of and any(Version(v.public) == version and v.local in (None, variant)
                                 for v in _merged(ctx, package, refs)):
                return f"{package} {version}+{variant} was not yet published on " \
                       f"{ctx.now:%Y-%m-%d}"
            return f"{package} {version}+{variant} is not published on {refs[0].url}"
        full = max(matches)
        files = matches[full]
        reason = screen(ctx, package, full, files, exempt_age=exempt_age, current=exempt_age)
        if isinstance(reason, _Hidden):
            return f"{package} {full} was not yet published on {ctx.now:%Y-%m-%d}"
        if reason:
            return f"{package} {full}: {reason}"
        problem = _provider_pins_problem(ctx, package, full, files, refs)
        if problem:
            return problem
        ctx.found_on.setdefault((package, version), refs[0].url)
        verified += 1
    if not verified:
        down = sorted({r.url for r in refs_all if (package, r.url) in ctx.problems})
        return "!" + (f"no CUDA-variant index could be read ({', '.join(down)})"
                      if down else "no CUDA variant to check")
    return None


def _provider_problem(ctx: Context, package: str, full: Version, files: Sequence[DistFile],
                      refs: Sequence[IndexRef]) -> str | None:
    """From jit-cache 0.7 on: every provider the shim pins is published at the shim's full
    version on the same index, with a wheel for the platform. The shim is one wheel per CPU
    platform whose Requires-Dist names that platform's providers (aarch64 has more), so each
    platform's own shim metadata is read."""
    model = ctx.model
    if model is None or not model.providers.get(package):
        return None
    for platform in ctx.env.platforms:
        shims = ctx.env.on_platform(files, platform)
        if not shims:
            continue  # no shim wheel for it: the platform check names that
        for req in ctx.source.requires(package, full, shims):
            name = canonicalize_name(req.name)
            if not model.is_provider(package, name) or not ctx.env.applies_on(req, platform):
                continue
            problem = _one_provider(ctx, package, full, name, req, platform, refs)
            if problem:
                return problem
    return None


def _one_provider(ctx: Context, package: str, full: Version, name: str, req: Requirement,
                  platform: str, refs: Sequence[IndexRef]) -> str | None:
    pinned = [s.version for s in req.specifier if s.operator in ("==", "===")]
    if not pinned or Version(pinned[0]) != full or str(Version(pinned[0])) != str(full):
        return (f"{package} {full}: provider {name} is required as {req.specifier or 'any'}"
                f", not at the shim's full version {full}")
    try:
        releases = _releases(ctx, name, refs)
    except (UnknownPackage, IndexError_) as exc:
        return f"{package} {full}: provider {name}: {exc}"
    provided = releases.get(full)
    if not provided:
        return f"{package} {full}: provider {name} {full} is not published on {refs[0].url}"
    lacking = [m for m in ctx.env.missing(provided)
               if m.startswith(_platform_name(platform))]
    if lacking:
        return f"{package} {full}: provider {name} {full} has no wheel for " \
               f"{'; '.join(lacking)}"
    return None


def _platform_name(platform: str) -> str:
    from bot.core.environment import describe_platform

    return describe_platform(platform)


class PinMode(Vocabulary):
    """How the target pins a companion, hence how its bump is written."""

    EXACT = "exact"  # ==X somewhere
    FLOOR = "floor"  # >=X, no ==
    OTHER = "other"  # neither: its whole specifier is the target's own bound


@dataclass
class _Slot:
    """A companion the target pins: how it is pinned and what bounds the target itself sets."""

    package: str
    mode: PinMode
    current: Version | None
    own: list[Constraint]


def companion_currents(target: Target, group: Group) -> dict[str, Version | None]:
    """Each pinned companion's current version (its highest exact pin, else its highest
    floor, else None): the resolver walks a companion's releases newest first down to it."""
    out: dict[str, Version | None] = {}
    for package in group.companions:
        pins = target.pins_of(package)
        if pins:
            exact = [p.exact for p in pins if p.exact is not None]
            floors = [p.floor for p in pins if p.floor is not None]
            out[package] = max(exact) if exact else (max(floors) if floors else None)
    return out


def _slots(ctx: Context) -> list[_Slot]:
    slots = []
    currents = companion_currents(ctx.target, ctx.group)
    for package in ctx.group.companions:
        pins = ctx.target.pins_of(package)
        if not pins:
            continue
        exact = [p.exact for p in pins if p.exact is not None]
        floors = [p.floor for p in pins if p.floor is not None]
        mode = PinMode.EXACT if exact else PinMode.FLOOR if floors else PinMode.OTHER
        own = []
        for pin in pins:
            rest = other_clauses(split_requirement(pin.requirement)[1])
            spec = rest if mode != PinMode.OTHER else split_requirement(pin.requirement)[1]
            if spec:
                own.append(Constraint(Requirement(f"{package}{spec}"), pin.where))
        cap = ctx.policy.caps.get(package)
        if cap is not None:
            own.append(Constraint(Requirement(f"{package}<{cap}"), f"cap in {ctx.policy.source}"))
        slots.append(_Slot(package, mode, currents[package], own))
    return slots


def _extras(ctx: Context, package: str) -> frozenset[str]:
    return frozenset(e for p in ctx.target.pins_of(package) for e in p.parsed.extras)


def _active(ctx: Context, package: str, version: Version) -> list[Constraint]:
    """Requires-Dist of ``package`` ``version`` on members of the group, active here."""
    members = set(ctx.group.members)
    owner = f"{package} {version}"
    extras = _extras(ctx, package)
    files = _releases(ctx, package).get(version, [])
    return [Constraint(r, owner) for r in ctx.source.requires(package, version, files)
            if canonicalize_name(r.name) in members and ctx.env.applies(r, extras)]


def _violated(constraints: Iterable[Constraint], package: str, version: Version
              ) -> Constraint | None:
    return next((c for c in constraints if canonicalize_name(c.requirement.name) == package
                 and not c.allows(version)), None)


def _solve_companions(ctx: Context, lead_version: Version
                      ) -> tuple[dict[str, Version] | None, str | None]:
    group = ctx.group
    chosen: dict[str, Version] = {group.lead: lead_version}
    for package in group.lockstep:
        if ctx.target.pins_of(package):
            chosen[package] = lead_version
    constraints: list[Constraint] = []
    for package, version in chosen.items():
        if ctx.model is not None and ctx.model.variant_based(package):
            continue  # checked per variant (its Requires-Dist names only its providers)
        if package != group.lead and version not in _releases_safe(ctx, package, version):
            continue  # verified elsewhere or not verified (reported)
        constraints += _active(ctx, package, version)
    for package, version in chosen.items():
        bad = _violated(constraints, package, version)
        if bad:
            return None, f"{package} {version} conflicts with {bad}"
    slots = _slots(ctx)
    exact = [s for s in slots if s.mode == PinMode.EXACT]
    rejections: list[Rejection] = []
    result = _assign(ctx, exact, 0, chosen, constraints, rejections)
    if isinstance(result, str):
        return None, result
    chosen, constraints = result
    for slot in slots:
        if slot.mode == PinMode.EXACT:
            continue
        problem = _check_floor(ctx, slot, chosen, constraints)
        if isinstance(problem, str):
            return None, problem
        chosen[slot.package] = problem
    ctx.rejected.extend(rejections)
    return chosen, None


def _releases_safe(ctx: Context, package: str, version: Version) -> set[Version]:
    try:
        return {version} & set(_releases(ctx, package))
    except IndexError_:
        return set()


def _candidates(ctx: Context, package: str, exempt: Version | None
                ) -> Iterator[tuple[Version, str | None]]:
    releases = _releases(ctx, package)
    for version in sorted(releases, reverse=True):
        reason = local_problem(ctx, package, version) or screen(
            ctx, package, version, releases[version], exempt_age=version == exempt,
            current=version == exempt)
        if isinstance(reason, _Hidden):
            continue
        yield version, reason


def _assign(ctx: Context, slots: list[_Slot], i: int, chosen: dict[str, Version],
            constraints: list[Constraint], rejections: list[Rejection]
            ) -> tuple[dict[str, Version], list[Constraint]] | str:
    """Backtracking over the exact pins, newest first."""
    if i == len(slots):
        return chosen, constraints
    slot = slots[i]
    bounds = constraints + slot.own
    local: list[Rejection] = []
    current_ok = slot.current is not None and not _violated(bounds, slot.package, slot.current)
    for version, reason in _candidates(ctx, slot.package, slot.current):
        if reason is None:
            bad = _violated(bounds, slot.package, version)
            if bad:
                reason = f"excluded by {bad}"
        if reason is None and current_ok and slot.current is not None \
                and version < slot.current:
            reason = (f"older than the current pin {slot.current}, which the set still "
                      "allows (never a downgrade)")
        own: list[Constraint] = []
        if reason is None:
            own = _active(ctx, slot.package, version)
            clash = next(((n, v, c) for n, v in chosen.items()
                          if (c := _violated(own, n, v))), None)
            if clash:
                reason = f"requires {clash[2].requirement} but the set has {clash[0]} {clash[1]}"
        if reason is not None:
            local.append(Rejection(slot.package, str(version), reason))
            continue
        result = _assign(ctx, slots, i + 1, {**chosen, slot.package: version},
                         constraints + own, rejections)
        if not isinstance(result, str):
            rejections.extend(local)
            ctx.bounds[slot.package] = ctx.bounds_on(slot.package, bounds)
            return result
        local.append(Rejection(slot.package, str(version), result))
    wanted = "; ".join(str(c) for c in bounds
                       if canonicalize_name(c.requirement.name) == slot.package)
    return f"{slot.package}: no version satisfies {wanted or 'the policy'}"


def _check_floor(ctx: Context, slot: _Slot, chosen: dict[str, Version],
                 constraints: list[Constraint]) -> Version | str:
    """A floor stays when still satisfied, else rises to the lowest acceptable version.

    Returns the (possibly raised) floor, or why no version at or above it fits the set.
    Versions are screened lazily: a long release history costs only what is looked at.
    """
    bounds = constraints + slot.own
    package = slot.package
    floor = slot.current
    ctx.bounds[package] = ctx.bounds_on(package, bounds)
    wanted = "; ".join(str(c) for c in bounds if canonicalize_name(c.requirement.name) == package)
    if floor is not None and _violated(bounds, package, floor):
        releases = _releases(ctx, package)
        raised = next((v for v in sorted(releases) if v >= floor
                       and not _violated(bounds, package, v)
                       and screen(ctx, package, v, releases[v], exempt_age=False) is None), None)
        if raised is None:
            return f"{package}: no version at or above {floor} satisfies {wanted}"
        floor = raised
    for version, reason in _candidates(ctx, package, slot.current):  # newest first
        if floor is not None and version < floor:
            break
        if reason is not None or _violated(bounds, package, version):
            continue
        own = _active(ctx, package, version)
        if not any(_violated(own, n, v) for n, v in chosen.items()):
            return floor if floor is not None else version
    return (f"{package}: no version{f' at or above {floor}' if floor else ''} is "
            "compatible with " + ", ".join(f"{n} {v}" for n, v in chosen.items()))


# -- turning the choice into changes -------------------------------------------------------
def _new_spec(pin: Pin, version: Version) -> str:
    spec = split_requirement(pin.requirement)[1]
    exact = clause_version(spec, "==")
    if exact is not None and exact.endswith(".*"):
        return spec  # a wildcard (==4.4.*) is a bound the target set: it survives as written
    op = "==" if exact else ">=" if clause_version(spec, ">=") else None
    if op is None:
        return spec
    written = clause_version(spec, op) or ""
    local = written.split("+", 1)[1] if "+" in written else ""
    new = str(version) if version.local or not local else f"{version}+{local}"
    return replace_clause(spec, op, new)


def _build_plan(ctx: Context, lead_version: Version, current: Version | None,
                chosen: dict[str, Version]) -> Plan:
    group = ctx.group
    plan = Plan(group=group.name, lead=group.lead,
                lead_current=str(current) if current else "",
                lead_target=str(lead_version))
    newer_rejected = sum(1 for r in ctx.rejected if r.package == group.lead)
    for package in group.members:
        pins = ctx.target.pins_of(package)
        if not pins or package not in chosen:
            continue
        target = chosen[package]
        by_spec: dict[str, list[Pin]]
        frozen = [p for p in pins if p.frozen]
        for pin in frozen:
            if pin.current != target:
                plan.unchanged.append((package, f"{split_requirement(pin.requirement)[1]} at "
                                       f"{pin.where}", f"not edited: {pin.frozen}"))
        by_spec = {}
        for pin in pins:
            if not pin.frozen:
                by_spec.setdefault(split_requirement(pin.requirement)[1], []).append(pin)
        for spec, same in by_spec.items():
            after = _new_spec(same[0], target)
            pin_current = same[0].current
            why = _reason(ctx, package, target, pin_current, newer_rejected)
            if after == spec:
                plan.unchanged.append((package, spec or "(any)", why))
                continue
            plan.changes.append(Change(
                package=package, current=str(pin_current or ""), target=str(target),
                specifier_before=spec, specifier_after=after, pins=tuple(same), reason=why))
    plan.rejected = _dedupe(ctx.rejected)
    plan.not_verified = sorted(ctx.not_verified.items())
    plan.warnings = list(ctx.warnings)
    plan.skipped = list(ctx.target.skipped)
    plan.platforms = ctx.env.describe()
    plan.channel = ctx.model.channel if ctx.model else Channel.STABLE
    for package, version in chosen.items():
        where = ctx.found_on.get((package, version))
        if where:
            plan.found_on[package] = where
    plan.unreachable = [_verified_elsewhere(ctx, p) for p in ctx.problems.values()]
    plan.hints = _hints(ctx)
    return plan


def _verified_elsewhere(ctx: Context, problem: IndexProblem) -> IndexProblem:
    """What the other indexes of the package did show: "verified on URL up to 0.6.13"."""
    seen: dict[str, Version] = {}
    for (package, version), url in ctx.found_on.items():
        if package == problem.package and (url not in seen or version > seen[url]):
            seen[url] = version
    text = "; ".join(f"verified on {url} up to {v}" for url, v in sorted(seen.items()))
    return IndexProblem(problem.package, problem.url, problem.error, text)


def _hints(ctx: Context) -> list[str]:
    """The fix, when a lockstep package is missing from an index it left (cubin after
    0.6.13 is on FlashInfer's index, not PyPI) and that index is not in use."""
    out: list[str] = []
    if ctx.model is None:
        return out
    for package in ctx.group.lockstep:
        hint = ctx.model.hints.get(package)
        missing = [r for r in ctx.rejected if r.package == ctx.group.lead
                   and f"{package} " in r.reason and ("not published" in r.reason
                                                       or "not verified" in r.reason)]
        if hint and missing:
            out.append(hint)
    return out


def _reason(ctx: Context, package: str, target: Version, current: Version | None,
            newer_rejected: int) -> str:
    group = ctx.group
    if package == group.lead:
        if current == target:
            return "already the newest complete and consistent version"
        tail = f"; {newer_rejected} newer version(s) rejected" if newer_rejected else ""
        lock = [p for p in group.lockstep if ctx.target.pins_of(p)]
        return ("newest version with " + (", ".join(lock) + " published at the same version"
                                          if lock else "a consistent set") + tail)
    if package in group.lockstep:
        if package in ctx.not_verified:
            return f"moves with {group.lead} {target} (not verified: see below)"
        return f"lockstep with {group.lead} {target}"
    slot = next(s for s in _slots(ctx) if s.package == package)
    obeys = "; ".join(str(c) for c in ctx.bounds.get(package, []))
    if slot.mode == PinMode.FLOOR:
        if current == target:
            return "floor still satisfies the set" + (f": {obeys}" if obeys else "")
        return f"floor raised as far as the set requires: {obeys}" if current else \
            "lowest version the set allows"
    if not obeys:
        return "newest release (nothing in the set constrains it)"
    if current == target:
        return f"already the newest version satisfying {obeys}"
    return f"newest version satisfying {obeys}"


def _dedupe(items: list[Rejection]) -> list[Rejection]:
    seen: set[tuple[str, str]] = set()
    out = []
    for r in items:
        if (r.package, r.version) not in seen:
            seen.add((r.package, r.version))
            out.append(r)
    return out


def cutoff_for(as_of: str | None, present: datetime) -> datetime:
    """The end of --as-of's day in UTC, or the present."""
    if not as_of:
        return present
    day = datetime.strptime(as_of, "%Y-%m-%d").replace(tzinfo=present.tzinfo)
    return day + timedelta(days=1) - timedelta(microseconds=1)


def _provider_pins_problem(ctx: Context, package: str, full: Version,
                           files: Sequence[DistFile], refs: Sequence[IndexRef]) -> str | None:
    """``_provider_problem``, where a provider pinned in the shim's Requires-Dist (the
    index's text) by what is no version (``==0.7.*``, ``===anything``) is a reason to reject
    the shim, never a crash."""
    try:
        return _provider_problem(ctx, package, full, files, refs)
    except InvalidVersion as exc:
        return f"{package} {full}: a provider's pin in its Requires-Dist is no version ({exc})"
