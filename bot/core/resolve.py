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
from packaging.version import Version

from bot.core.config import Group, Policy
from bot.core.discovery import Target
from bot.core.environment import Environment
from bot.core.models import Change, DistFile, Pin, Plan, Rejection
from bot.core.specs import clause_version, other_clauses, replace_clause, split_requirement
from bot.errors import IndexError_, InputError, ResolutionError, UnknownPackage


class Source(Protocol):
    """What resolution needs from an index (``adapters.sources.IndexSource`` is the real one)."""

    def releases(self, package: str) -> dict[Version, list[DistFile]]: ...

    def requires(self, package: str, version: Version) -> list[Requirement]: ...

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
    rejected: list[Rejection] = field(default_factory=list)
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

    def fmt_age(self, delta: timedelta) -> str:
        hours = delta.total_seconds() / 3600
        return f"{hours:.0f} hours" if hours < 48 else f"{hours / 24:.1f} days"


# -- screening one version ------------------------------------------------------------------
def screen(ctx: Context, package: str, version: Version, files: Sequence[DistFile],
           *, exempt_age: bool = False) -> str | _Hidden | None:
    """None when ``package`` ``version`` may be used; else why not (or HIDDEN)."""
    policy = ctx.policy
    reason = policy.known_bad_reason(package, version)
    if reason is not None:
        return f"known bad: {reason}"
    cap = policy.caps.get(package)
    if cap is not None and version >= cap:
        return f"capped below {cap} by {policy.source}"
    if version.is_prerelease and not policy.prereleases_allowed(package):
        return "pre-release (allow with allow-prereleases)"
    live = [f for f in files if f.yanked is None]
    if not live:
        why = next((f.yanked for f in files if f.yanked), "")
        return f"yanked{': ' + why if why else ''}"
    wheels = [f for f in live if ctx.env.installable(f)]
    if not wheels:
        return f"no wheel installable on {ctx.env.describe()}"
    if exempt_age:
        return None
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
def make_plan(target: Target, policy: Policy, source: Source, now: datetime, *,
              as_of: bool = False, env: Environment | None = None) -> Plan:
    group = policy.active_group
    lead_pins = target.pins_of(group.lead)
    if not lead_pins:
        raise InputError(f"{target.root}: no requirement on {group.lead} in any pyproject*.toml "
                         "or requirements*.txt; nothing to plan for group "
                         f"{group.name!r}")
    env = env or Environment.for_target(target.requires_python(group.lead), policy.python)
    ctx = Context(target=target, policy=policy, source=source, env=env, now=now, as_of=as_of)
    currents = [p.current for p in lead_pins if p.current is not None]
    current = max(currents) if currents else None
    releases = _releases(ctx, group.lead)
    failures: list[str] = []
    for version in sorted(releases, reverse=True):
        if current is not None and version < current:
            break
        is_current = version == current
        reason = screen(ctx, group.lead, version, releases[version], exempt_age=is_current)
        if reason is None:
            reason = _lockstep_problem(ctx, version, exempt_age=is_current)
        chosen: dict[str, Version] | None = None
        if reason is None:
            chosen, reason = _solve_companions(ctx, version)
        if isinstance(reason, _Hidden):
            continue
        if reason is not None:
            ctx.rejected.append(Rejection(group.lead, str(version), reason))
            failures.append(f"{group.lead} {version}: {reason}")
            continue
        assert chosen is not None
        return _build_plan(ctx, version, current, chosen)
    if current is not None and current not in releases:
        failures.append(f"{group.lead} {current} (pinned) is not on "
                        f"{policy.index_for(group.lead)}")
    raise ResolutionError("no complete and consistent set for group "
                          f"{group.name!r}: " + "; ".join(failures or ["no versions"]))


def _releases(ctx: Context, package: str) -> dict[Version, list[DistFile]]:
    """The package's files by version; with --as-of, files uploaded later are left out."""
    releases = ctx.source.releases(package)
    if not ctx.as_of:
        return releases
    out = {}
    for version, files in releases.items():
        kept = [f for f in files if f.upload_time is None or f.upload_time <= ctx.now]
        if kept:
            out[version] = kept
    return out


def _lockstep_problem(ctx: Context, version: Version, *, exempt_age: bool) -> str | None:
    for package in ctx.group.lockstep:
        used = bool(ctx.target.pins_of(package)) or ctx.policy.has_own_index(package)
        index = ctx.policy.index_for(package)
        try:
            releases = _releases(ctx, package)
        except (UnknownPackage, IndexError_) as exc:
            if used:
                raise
            ctx.not_verified[package] = (f"{exc}. Optional here (not pinned, no index "
                                         "configured): set [tool.pinbump.index] to check it")
            continue
        files = releases.get(version)
        if not used:
            if files is None or screen(ctx, package, version, files, exempt_age=True):
                ctx.not_verified[package] = (f"{package} {version} is not installable from "
                                             f"{index}; optional here (not pinned)")
            else:
                ctx.not_verified.pop(package, None)
            continue
        if files is None:
            return f"{package} {version} is not published on {index}"
        reason = screen(ctx, package, version, files, exempt_age=exempt_age)
        if isinstance(reason, _Hidden):
            return f"{package} {version} was not yet published at --as-of"
        if reason:
            return f"{package} {version}: {reason}"
    return None


@dataclass
class _Slot:
    """A companion the target pins: how it is pinned and what bounds the target itself sets."""

    package: str
    mode: str  # "exact" | "floor" | "other"
    current: Version | None
    own: list[Constraint]


def _slots(ctx: Context) -> list[_Slot]:
    slots = []
    for package in ctx.group.companions:
        pins = ctx.target.pins_of(package)
        if not pins:
            continue
        exact = [p.exact for p in pins if p.exact is not None]
        floors = [p.floor for p in pins if p.floor is not None]
        mode = "exact" if exact else "floor" if floors else "other"
        own = []
        for pin in pins:
            rest = other_clauses(split_requirement(pin.requirement)[1])
            spec = rest if mode != "other" else split_requirement(pin.requirement)[1]
            if spec:
                own.append(Constraint(Requirement(f"{package}{spec}"), pin.where))
        cap = ctx.policy.caps.get(package)
        if cap is not None:
            own.append(Constraint(Requirement(f"{package}<{cap}"), f"cap in {ctx.policy.source}"))
        current = max(exact) if exact else (max(floors) if floors else None)
        slots.append(_Slot(package, mode, current, own))
    return slots


def _extras(ctx: Context, package: str) -> frozenset[str]:
    return frozenset(e for p in ctx.target.pins_of(package) for e in p.parsed.extras)


def _active(ctx: Context, package: str, version: Version) -> list[Constraint]:
    """Requires-Dist of ``package`` ``version`` on members of the group, active here."""
    members = set(ctx.group.members)
    owner = f"{package} {version}"
    extras = _extras(ctx, package)
    return [Constraint(r, owner) for r in ctx.source.requires(package, version)
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
        constraints += _active(ctx, package, version)
    for package, version in chosen.items():
        bad = _violated(constraints, package, version)
        if bad:
            return None, f"{package} {version} conflicts with {bad}"
    slots = _slots(ctx)
    exact = [s for s in slots if s.mode == "exact"]
    rejections: list[Rejection] = []
    result = _assign(ctx, exact, 0, chosen, constraints, rejections)
    if isinstance(result, str):
        return None, result
    chosen, constraints = result
    for slot in slots:
        if slot.mode == "exact":
            continue
        problem = _check_floor(ctx, slot, chosen, constraints)
        if isinstance(problem, str):
            return None, problem
        chosen[slot.package] = problem
    ctx.rejected.extend(rejections)
    return chosen, None


def _candidates(ctx: Context, package: str, exempt: Version | None
                ) -> Iterator[tuple[Version, str | None]]:
    releases = _releases(ctx, package)
    for version in sorted(releases, reverse=True):
        reason = screen(ctx, package, version, releases[version], exempt_age=version == exempt)
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
    for version, reason in _candidates(ctx, slot.package, slot.current):
        if reason is None:
            bad = _violated(bounds, slot.package, version)
            if bad:
                reason = f"excluded by {bad}"
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
    op = "==" if clause_version(spec, "==") else ">=" if clause_version(spec, ">=") else None
    return replace_clause(spec, op, str(version)) if op else spec


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
        by_spec: dict[str, list[Pin]] = {}
        for pin in pins:
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
    return plan


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
        return f"lockstep with {group.lead} {target}"
    slot = next(s for s in _slots(ctx) if s.package == package)
    obeys = "; ".join(str(c) for c in ctx.bounds.get(package, []))
    if slot.mode == "floor":
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


