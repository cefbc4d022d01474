"""Table-driven tests of the pure resolver, over an in-memory source."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from bot.core.config import Policy, parse_config
from bot.core.discovery import Target, parse_pyproject
from bot.core.indexmodel import IndexRef
from bot.core.models import DistFile
from bot.core.resolve import make_plan
from bot.errors import ResolutionError, UnknownPackage

NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
OLD = NOW - timedelta(days=60)


@dataclass
class Rel:
    version: str
    requires: tuple[str, ...] = ()
    uploaded: datetime = OLD
    yanked: str | None = None
    tag: str = "py3-none-any"


@dataclass
class MemorySource:
    packages: dict[str, list[Rel]]
    metadata_reads: list[tuple[str, str]] = field(default_factory=list)

    def _rel(self, package: str, version: Version) -> Rel:
        return next(r for r in self.packages[package] if Version(r.version) == version)

    def releases_on(self, package: str, index: IndexRef) -> dict[Version, list[DistFile]]:
        if package not in self.packages:
            raise UnknownPackage(f"{package}: not found on {index.url} (HTTP 404)")
        return self.releases(package)

    def releases(self, package: str) -> dict[Version, list[DistFile]]:
        out: dict[Version, list[DistFile]] = {}
        for r in self.packages.get(package, []):
            f = DistFile(filename=f"{package}-{r.version}-{r.tag}.whl", url=f"mem://{package}",
                         version=Version(r.version), is_wheel=True, tags=frozenset({r.tag}),
                         yanked=r.yanked, upload_time=r.uploaded)
            out.setdefault(Version(r.version), []).append(f)
        return out

    def requires(self, package: str, version: Version, files: object = ()
                 ) -> list[Requirement]:
        self.metadata_reads.append((package, str(version)))
        return [Requirement(x) for x in self._rel(package, version).requires]

    def upload_time(self, file: DistFile) -> datetime | None:
        return file.upload_time


def target(*pins: str) -> Target:
    deps = ",\n".join(f'  "{p}"' for p in pins)
    text = f'[project]\nrequires-python = ">=3.10"\ndependencies = [\n{deps}\n]\n'
    toml = parse_pyproject(text, "python/pyproject.toml",
                           {"flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache",
                            "nvidia-cutlass-dsl", "quack-kernels"})
    return Target(root=Path("/t"), tomls=[toml], pins=toml.pins)


PINS = ("flashinfer_python==0.6.8.post1", "flashinfer_cubin==0.6.8.post1",
        "nvidia-cutlass-dsl==4.4.2", "quack-kernels>=0.3.0")


def base() -> dict[str, list[Rel]]:
    return {
        "flashinfer-python": [Rel("0.6.8.post1", ("nvidia-cutlass-dsl>=4.2",)),
                              Rel("0.6.11", ("nvidia-cutlass-dsl>=4.4",))],
        "flashinfer-cubin": [Rel("0.6.8.post1"), Rel("0.6.11")],
        "nvidia-cutlass-dsl": [Rel("4.4.2"), Rel("4.5.0")],
        "quack-kernels": [Rel("0.3.0"), Rel("0.4.0")],
        "flashinfer-jit-cache": [Rel("0.6.8.post1"), Rel("0.6.11")],
    }


def plan_of(packages: dict[str, list[Rel]], pins: tuple[str, ...] = PINS,
            policy: Policy | None = None, now: datetime = NOW):
    return make_plan(target(*pins), policy or Policy(), MemorySource(packages), now)


def changes(plan) -> dict[str, tuple[str, str]]:
    return {c.package: (c.specifier_before, c.specifier_after) for c in plan.changes}


def rejected(plan) -> dict[tuple[str, str], str]:
    return {(r.package, r.version): r.reason for r in plan.rejected}


def with_(packages: dict[str, list[Rel]], package: str, *rels: Rel) -> dict[str, list[Rel]]:
    return {**packages, package: [*packages[package], *rels]}


CASES = [
    # (id, packages, policy, expected changes, expected rejections (substring))
    ("plain bump", base(), None,
     {"flashinfer-python": ("==0.6.8.post1", "==0.6.11"),
      "flashinfer-cubin": ("==0.6.8.post1", "==0.6.11"),
      "nvidia-cutlass-dsl": ("==4.4.2", "==4.5.0")}, {}),
    ("lockstep missing: previous complete version",
     with_(base(), "flashinfer-python", Rel("0.6.12")), None,
     {"flashinfer-python": ("==0.6.8.post1", "==0.6.11")},
     {("flashinfer-python", "0.6.12"): "flashinfer-cubin 0.6.12 is not published"}),
    ("yanked lead",
     with_(with_(base(), "flashinfer-python", Rel("0.6.12", yanked="bad wheel")),
           "flashinfer-cubin", Rel("0.6.12")), None,
     {"flashinfer-python": ("==0.6.8.post1", "==0.6.11")},
     {("flashinfer-python", "0.6.12"): "yanked: bad wheel"}),
    ("yanked lockstep",
     with_(with_(base(), "flashinfer-python", Rel("0.6.12")),
           "flashinfer-cubin", Rel("0.6.12", yanked="")), None,
     {"flashinfer-python": ("==0.6.8.post1", "==0.6.11")},
     {("flashinfer-python", "0.6.12"): "flashinfer-cubin 0.6.12: yanked"}),
    ("pre-release",
     with_(with_(base(), "flashinfer-python", Rel("0.7.0rc1")), "flashinfer-cubin",
           Rel("0.7.0rc1")), None,
     {"flashinfer-python": ("==0.6.8.post1", "==0.6.11")},
     {("flashinfer-python", "0.7.0rc1"): "pre-release"}),
    ("pre-release allowed",
     with_(with_(base(), "flashinfer-python", Rel("0.7.0rc1")), "flashinfer-cubin",
           Rel("0.7.0rc1")), parse_config({"allow-prereleases": True}, "pinbump.toml"),
     {"flashinfer-python": ("==0.6.8.post1", "==0.7.0rc1")}, {}),
    ("too new",
     with_(with_(base(), "flashinfer-python", Rel("0.6.12", uploaded=NOW - timedelta(days=1))),
           "flashinfer-cubin", Rel("0.6.12")), None,
     {"flashinfer-python": ("==0.6.8.post1", "==0.6.11")},
     {("flashinfer-python", "0.6.12"): "too new: uploaded 24 hours before now; minimum "
                                       "release age is 3 days"}),
    ("too new allowed with age 0",
     with_(with_(base(), "flashinfer-python", Rel("0.6.12", uploaded=NOW - timedelta(days=1))),
           "flashinfer-cubin", Rel("0.6.12")), parse_config({"min-release-age": 0}, "x.toml"),
     {"flashinfer-python": ("==0.6.8.post1", "==0.6.12")}, {}),
    ("known bad",
     base(), parse_config({"known-bad": {"flashinfer-python": {"0.6.11": "fusion hangs"}}},
                          "pinbump.toml"),
     {"nvidia-cutlass-dsl": ("==4.4.2", "==4.5.0")},
     {("flashinfer-python", "0.6.11"): "known bad: fusion hangs"}),
    ("capped companion stays below cap",
     base(), parse_config({"cap": {"nvidia-cutlass-dsl": "4.5"}}, "pinbump.toml"),
     {"flashinfer-python": ("==0.6.8.post1", "==0.6.11")},
     {("nvidia-cutlass-dsl", "4.5.0"): "capped below 4.5"}),
    ("floor raised as far as the lead requires",
     {**base(), "flashinfer-python": [Rel("0.6.8.post1"),
                                       Rel("0.6.11", ("quack-kernels>=0.4.0",))],
      "quack-kernels": [Rel("0.3.0"), Rel("0.4.0"), Rel("0.5.0")]}, None,
     {"flashinfer-python": ("==0.6.8.post1", "==0.6.11"),
      "quack-kernels": (">=0.3.0", ">=0.4.0")}, {}),
    ("companion requirement on another companion moves the exact pin",
     {**base(), "quack-kernels": [Rel("0.3.0", ("nvidia-cutlass-dsl>=4.5",))]}, None,
     {"nvidia-cutlass-dsl": ("==4.4.2", "==4.5.0")}, {}),
    ("newest companion excluded by the lead's upper bound",
     {**base(), "flashinfer-python": [Rel("0.6.8.post1"),
                                       Rel("0.6.11", ("nvidia-cutlass-dsl>=4.4,<4.5",))]},
     None, {"nvidia-cutlass-dsl": None},
     {("nvidia-cutlass-dsl", "4.5.0"): "excluded by <4.5,>=4.4 (from flashinfer-python 0.6.11)"}),
    ("extra-only requirement applies when the target asks for the extra",
     {**base(), "flashinfer-python": [Rel("0.6.8.post1"), Rel(
         "0.6.11", ('nvidia-cutlass-dsl[cu13]>=4.5; extra == "cu13"',))],
      "nvidia-cutlass-dsl": [Rel("4.4.2"), Rel("4.5.0"), Rel("4.6.0", uploaded=NOW)]},
     None, {"nvidia-cutlass-dsl": ("==4.4.2", "==4.5.0")},
     {("nvidia-cutlass-dsl", "4.6.0"): "too new"}),
]


@pytest.mark.parametrize(("packages", "policy", "expected", "rejects"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_resolution(packages, policy, expected, rejects) -> None:
    pins = PINS
    if any("extra ==" in r for rel in packages["flashinfer-python"] for r in rel.requires):
        pins = ("flashinfer_python[cu13]==0.6.8.post1", *PINS[1:])
    plan = plan_of(packages, pins, policy)
    got = changes(plan)
    for package, change in expected.items():
        assert got.get(package) == change, (package, got)
    for key, fragment in rejects.items():
        assert fragment in rejected(plan).get(key, ""), (key, rejected(plan))


def test_no_consistent_set_names_the_conflict() -> None:
    packages = {**base(), "flashinfer-python": [Rel("0.6.8.post1", ("nvidia-cutlass-dsl>=4.6",)),
                                                Rel("0.6.11", ("nvidia-cutlass-dsl>=4.6",))]}
    with pytest.raises(ResolutionError) as err:
        plan_of(packages)
    message = str(err.value)
    assert err.value.exit_code == 2
    assert "nvidia-cutlass-dsl: no version satisfies >=4.6 (from flashinfer-python 0.6.11)" \
        in message
    assert "flashinfer-python 0.6.8.post1:" in message
    # the error carries the conflicts as data, newest candidate first
    assert [(c.package, c.version) for c in err.value.conflicts] == [
        ("flashinfer-python", "0.6.11"), ("flashinfer-python", "0.6.8.post1")]
    assert "nvidia-cutlass-dsl: no version satisfies >=4.6" in err.value.conflicts[0].reason
    assert err.value.group == "flashinfer" and err.value.unavailable is None


def test_nothing_newer_is_no_change() -> None:
    packages = {**base(), "flashinfer-python": [Rel("0.6.8.post1")],
                "nvidia-cutlass-dsl": [Rel("4.4.2")]}
    plan = plan_of(packages)
    assert plan.changes == [] and plan.lead_target == "0.6.8.post1"
    assert ("quack-kernels", ">=0.3.0", "floor still satisfies the set") in plan.unchanged


def test_as_of_hides_later_uploads_and_measures_age_from_that_day() -> None:
    packages = with_(with_(base(), "flashinfer-python", Rel("0.6.12", uploaded=NOW)),
                     "flashinfer-cubin", Rel("0.6.12", uploaded=NOW))
    day = NOW - timedelta(days=1)
    plan = make_plan(target(*PINS), Policy(), MemorySource(packages), day, as_of=True)
    assert plan.lead_target == "0.6.11"
    assert ("flashinfer-python", "0.6.12") not in rejected(plan)


def test_optional_lockstep_not_on_index_is_not_verified() -> None:
    packages = base()
    del packages["flashinfer-jit-cache"]

    class Missing(MemorySource):
        def releases(self, package: str) -> dict[Version, list[DistFile]]:
            if package == "flashinfer-jit-cache":
                from bot.errors import UnknownPackage
                raise UnknownPackage("flashinfer-jit-cache: not found on the index (HTTP 404)")
            return super().releases(package)

    plan = make_plan(target(*PINS), Policy(), Missing(packages), NOW)
    assert plan.lead_target == "0.6.11"
    assert plan.not_verified and plan.not_verified[0][0] == "flashinfer-jit-cache"
    assert "not found" in plan.not_verified[0][1]


def test_metadata_is_read_only_for_candidates() -> None:
    packages = base()
    packages["nvidia-cutlass-dsl"] += [Rel(f"4.5.{i}") for i in range(1, 40)]
    source = MemorySource(packages)
    make_plan(target(*PINS), Policy(), source, NOW)
    assert len(source.metadata_reads) <= 6, source.metadata_reads


def test_reasons_name_the_constraints() -> None:
    plan = plan_of(base())
    reasons = {c.package: c.reason for c in plan.changes}
    assert reasons["nvidia-cutlass-dsl"] == \
        "newest version satisfying >=4.4 (from flashinfer-python 0.6.11)"
    assert reasons["flashinfer-cubin"] == "lockstep with flashinfer-python 0.6.11"
    packages = {**base(), "flashinfer-python": [Rel("0.6.8.post1"),
                                                Rel("0.6.11", ("quack-kernels>=0.4.0",))]}
    floor = next(c for c in plan_of(packages).changes if c.package == "quack-kernels")
    assert floor.reason == ("floor raised as far as the set requires: >=0.4.0 (from "
                            "flashinfer-python 0.6.11)")


# -- cases whose answer differs from the plain bump (each fails on a resolver that ignores the
# rule it names) ---------------------------------------------------------------------------
def test_companions_mutual_requirements_keep_an_exact_pin_back() -> None:
    """Plain bump: quack 0.4.0 and cutlass 4.5.0; but quack 0.4.0 requires cutlass<4.5, which
    the lead's set moved to 4.5.0: quack stays at 0.3.0."""
    packages = {**base(), "quack-kernels": [Rel("0.3.0"),
                                            Rel("0.4.0", ("nvidia-cutlass-dsl<4.5",))],
                "flashinfer-python": [Rel("0.6.8.post1"),
                                      Rel("0.6.11", ("nvidia-cutlass-dsl>=4.5",))]}
    pins = (*PINS[:3], "quack-kernels==0.3.0")
    plan = plan_of(packages, pins)
    assert changes(plan)["nvidia-cutlass-dsl"] == ("==4.4.2", "==4.5.0")
    assert "quack-kernels" not in changes(plan)
    assert rejected(plan)[("quack-kernels", "0.4.0")] == (
        "requires nvidia-cutlass-dsl<4.5 but the set has nvidia-cutlass-dsl 4.5.0")


@pytest.mark.parametrize(("lead_pin", "cutlass"), [
    ("flashinfer_python[cu13]==0.6.8.post1", None),  # the cu13 extra caps cutlass below 4.5
    ("flashinfer_python==0.6.8.post1", ("==4.4.2", "==4.5.0")),
])
def test_an_extra_the_target_asks_for_changes_the_answer(lead_pin: str,
                                                         cutlass: tuple[str, str] | None) -> None:
    packages = {**base(), "flashinfer-python": [Rel("0.6.8.post1"), Rel(
        "0.6.11", ("nvidia-cutlass-dsl>=4.4", 'nvidia-cutlass-dsl<4.5; extra == "cu13"'))]}
    plan = plan_of(packages, (lead_pin, *PINS[1:]))
    assert plan.lead_target == "0.6.11"
    assert changes(plan).get("nvidia-cutlass-dsl") == cutlass


@pytest.mark.parametrize("policy_or_yank", ["known-bad", "yanked"])
def test_a_bad_current_pin_is_kept_never_downgraded(policy_or_yank: str) -> None:
    """0.6.8.post1 is known bad (or yanked) and nothing newer is complete: the plan keeps it
    with a warning instead of failing or going back to 0.6.7."""
    yanked = "broken wheel" if policy_or_yank == "yanked" else None
    packages = {**base(), "flashinfer-python": [Rel("0.6.7"), Rel("0.6.8.post1", yanked=yanked),
                                                Rel("0.6.11")],
                "flashinfer-cubin": [Rel("0.6.7"), Rel("0.6.8.post1")]}
    policy = parse_config({"known-bad": {"flashinfer-python": {"0.6.8.post1": "hangs"}}},
                          "pinbump.toml") if policy_or_yank == "known-bad" else None
    plan = plan_of(packages, PINS, policy)
    assert plan.lead_target == "0.6.8.post1"
    assert "flashinfer-python" not in changes(plan)
    assert plan.warnings and "never downgraded" in plan.warnings[0]
    assert rejected(plan)[("flashinfer-python", "0.6.11")].startswith(
        "flashinfer-cubin 0.6.11 is not published")


def test_a_yanked_companion_pin_is_not_downgraded() -> None:
    packages = {**base(), "nvidia-cutlass-dsl": [Rel("4.4.2"), Rel("4.5.0", yanked="bad")]}
    plan = plan_of(packages, (*PINS[:2], "nvidia-cutlass-dsl==4.5.0", PINS[3]))
    assert "nvidia-cutlass-dsl" not in changes(plan)  # plain resolution: 4.5.0 -> 4.4.2
    assert any("nvidia-cutlass-dsl 4.5.0 (pinned) is yanked" in w for w in plan.warnings)


def test_the_targets_own_bounds_survive_the_bump() -> None:
    """Plain bump: 0.7.0. The target says <0.7 and !=0.6.12: 0.6.11, bounds kept."""
    packages = {**base(), "flashinfer-python": [Rel("0.6.8"), Rel("0.6.11"), Rel("0.6.12"),
                                                Rel("0.7.0")],
                "flashinfer-cubin": [Rel("0.6.8"), Rel("0.6.11"), Rel("0.6.12"), Rel("0.7.0")]}
    plan = plan_of(packages, ("flashinfer-python>=0.6.8,<0.7,!=0.6.12",
                              "flashinfer-cubin>=0.6.8,<0.7,!=0.6.12", *PINS[2:]))
    assert plan.lead_target == "0.6.11"
    assert changes(plan)["flashinfer-python"] == (">=0.6.8,<0.7,!=0.6.12",
                                                  ">=0.6.11,<0.7,!=0.6.12")
    assert rejected(plan)[("flashinfer-python", "0.7.0")].startswith(
        "excluded by the target's own specifier")
    assert rejected(plan)[("flashinfer-python", "0.6.12")].startswith(
        "excluded by the target's own specifier")


def test_a_local_version_is_never_a_target() -> None:
    packages = {**base(), "flashinfer-python": [*base()["flashinfer-python"],
                                                Rel("0.6.12+evil.example")],
                "flashinfer-cubin": [*base()["flashinfer-cubin"], Rel("0.6.12+evil.example")]}
    plan = plan_of(packages)
    assert plan.lead_target == "0.6.11"
    assert rejected(plan)[("flashinfer-python", "0.6.12+evil.example")] == (
        "local version (+evil.example): never a target unless configured")


def test_shipped_advisories_reject_with_their_source() -> None:
    from bot.core.config import builtin_advisories

    packages = {**base(), "flashinfer-python": [*base()["flashinfer-python"], Rel("0.6.14")],
                "flashinfer-cubin": [*base()["flashinfer-cubin"], Rel("0.6.14")]}
    plan = plan_of(packages, policy=Policy(advisories=builtin_advisories()))
    assert plan.lead_target == "0.6.11"
    assert rejected(plan)[("flashinfer-python", "0.6.14")] == (
        "known bad: GB300 TRTLLM_GEN_BMM cubin hang; fixed in 0.6.15 (pinbump advisory, "
        "https://github.com/flashinfer-ai/flashinfer/issues/3971)")
