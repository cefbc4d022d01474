"""The resolver's rules, one behaviour per row, over in-memory indexes (several per package,
some down, some 404, FlashInfer's per-CUDA-variant ones), with realistic release histories.

Rows are (what the indexes hold, what the target pins, the policy) -> the exact plan, the exact
rejection reasons and warnings, or the exact error. The behaviours the issue names first:

- a current pin that is rejected (known bad, yanked, too new, missing a platform, clashing
  with the new set) never causes a downgrade;
- the target's own bounds beside its pins (``<0.7``, ``!=0.6.12``, ``<0.5``) survive a bump.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from bot.core.config import Policy, parse_config
from bot.core.discovery import Target, find_pins
from bot.core.environment import Environment
from bot.core.indexmodel import IndexModel, IndexRef
from bot.core.models import DistFile, Plan
from bot.core.resolve import best_wheel, cutoff_for, make_plan
from bot.errors import IndexError_, InputError, ResolutionError, UnknownPackage

NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
OLD = NOW - timedelta(days=60)
PYPI = "https://pypi.org/simple"
FI = "https://flashinfer.ai/whl"
LEAD = "flashinfer-python"
X86 = "cp310-abi3-manylinux_2_28_x86_64"
ARM = "cp310-abi3-manylinux_2_28_aarch64"
NAMES = {"flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache", "nvidia-cutlass-dsl",
         "quack-kernels"}


@dataclass
class R:
    """One release on one index: its wheels' tags, Requires-Dist, upload time, yank."""

    version: str
    requires: tuple[str, ...] = ()
    uploaded: datetime | None = OLD
    yanked: str | None = None
    tags: tuple[str, ...] = ("py3-none-any",)


@dataclass
class Indexes:
    """Index URL -> package -> releases; ``down`` URLs fail as an unreachable index does."""

    pages: dict[str, dict[str, list[R]]]
    down: dict[str, str] = field(default_factory=dict)
    last_modified: dict[str, datetime] = field(default_factory=dict)  # filename -> header
    asked: list[tuple[str, str]] = field(default_factory=list)
    metadata_reads: list[tuple[str, str]] = field(default_factory=list)

    def releases_on(self, package: str, index: IndexRef) -> dict[Version, list[DistFile]]:
        self.asked.append((package, index.url))
        if index.url in self.down:
            raise IndexError_(f"{index.url}: {self.down[index.url]}")
        page = self.pages.get(index.url, {})
        if package not in page:
            raise UnknownPackage(f"{package}: not found on {index.url} (HTTP 404)")
        out: dict[Version, list[DistFile]] = {}
        for r in page[package]:
            for tag in r.tags:
                name = f"{package.replace('-', '_')}-{r.version}-{tag}.whl"
                out.setdefault(Version(r.version), []).append(DistFile(
                    filename=name, url=f"{index.url}/{name}", version=Version(r.version),
                    is_wheel=True, tags=frozenset({tag}), yanked=r.yanked,
                    upload_time=r.uploaded))
        return out

    def requires(self, package: str, version: Version, files: object = ()
                 ) -> list[Requirement]:
        self.metadata_reads.append((package, str(version)))
        for page in self.pages.values():
            for r in page.get(package, []):
                if Version(r.version) == version:
                    return [Requirement(x) for x in r.requires]
        raise AssertionError(f"metadata of {package} {version} asked but not published")

    def upload_time(self, file: DistFile) -> datetime | None:
        return self.last_modified.get(file.filename)


def tree(**files: str) -> Target:
    return find_pins(Path("/t"), {k.replace("__", "/").replace("_", "."): v
                                  for k, v in files.items()}, NAMES)


def pyproject(*pins: str) -> Target:
    deps = "".join(f'  "{p}",\n' for p in pins)
    return find_pins(Path("/t"), {"python/pyproject.toml": f'[project]\nname = "sglang"\n'
                                  f'requires-python = ">=3.10"\ndependencies = [\n{deps}]\n'},
                     NAMES)


PINS = ("flashinfer-python==0.6.8.post1", "flashinfer-cubin==0.6.8.post1",
        "nvidia-cutlass-dsl==4.4.2", "quack-kernels>=0.3.0")


def pypi(**extra: list[R]) -> dict[str, list[R]]:
    page = {
        LEAD: [R("0.6.7"), R("0.6.8.post1", ("nvidia-cutlass-dsl>=4.2",)),
               R("0.6.11", ("nvidia-cutlass-dsl>=4.4",))],
        "flashinfer-cubin": [R("0.6.7"), R("0.6.8.post1"), R("0.6.11")],
        "nvidia-cutlass-dsl": [R("4.4.2"), R("4.5.0")],
        "quack-kernels": [R("0.3.0"), R("0.4.0")],
    }
    for name, rels in extra.items():
        page[name.replace("_", "-")] = rels
    return page


def plan(pages: dict[str, dict[str, list[R]]] | Indexes, target: Target | None = None,
         policy: Policy | None = None, *, model: IndexModel | None = None,
         now: datetime = NOW, as_of: bool = False, env: Environment | None = None) -> Plan:
    source = pages if isinstance(pages, Indexes) else Indexes(pages)
    return make_plan(target or pyproject(*PINS), policy or Policy(), source, now,
                     as_of=as_of, model=model, env=env)


def changes(p: Plan) -> dict[str, tuple[str, str]]:
    return {c.package: (c.specifier_before, c.specifier_after) for c in p.changes}


def rejected(p: Plan) -> dict[tuple[str, str], str]:
    return {(r.package, r.version): r.reason for r in p.rejected}


def config(**raw: object) -> Policy:
    return parse_config({k.replace("_", "-"): v for k, v in raw.items()}, "pinbump.toml")


# -- a rejected current pin never causes a downgrade ----------------------------------------
KEPT = "kept until a newer complete set exists (never downgraded)"
DOWNGRADE_CASES = [
    # (id, lead releases, cubin releases, policy, warnings)
    ("known bad current, nothing newer complete",
     [R("0.6.7"), R("0.6.8.post1"), R("0.6.11")], [R("0.6.7"), R("0.6.8.post1")],
     config(known_bad={LEAD: {"0.6.8.post1": "hangs on GB200"}}),
     [f"flashinfer-python 0.6.8.post1 (pinned) is known bad: hangs on GB200 (pinbump.toml); "
      f"{KEPT}"]),
    ("yanked current with a reason",
     [R("0.6.7"), R("0.6.8.post1", yanked="broken wheel"), R("0.6.11")],
     [R("0.6.7"), R("0.6.8.post1")], None,
     [f"flashinfer-python 0.6.8.post1 (pinned) is yanked: broken wheel; {KEPT}"]),
    ("yanked current without a reason",
     [R("0.6.7"), R("0.6.8.post1", yanked=""), R("0.6.11")],
     [R("0.6.7"), R("0.6.8.post1")], None,
     [f"flashinfer-python 0.6.8.post1 (pinned) is yanked; {KEPT}"]),
    ("current too new for the minimum release age",
     [R("0.6.7"), R("0.6.8.post1", uploaded=NOW - timedelta(hours=2)), R("0.6.11")],
     [R("0.6.7"), R("0.6.8.post1")], None, []),
    ("current lacks the aarch64 wheel",
     [R("0.6.7", tags=(X86, ARM)), R("0.6.8.post1", tags=(X86,)), R("0.6.11", tags=(X86, ARM))],
     [R("0.6.7"), R("0.6.8.post1")], None, []),
    ("current with an unknown upload time",
     [R("0.6.7"), R("0.6.8.post1", uploaded=None), R("0.6.11")],
     [R("0.6.7"), R("0.6.8.post1")], None, []),
]


@pytest.mark.parametrize(("lead", "cubin", "policy", "warnings"),
                         [c[1:] for c in DOWNGRADE_CASES], ids=[c[0] for c in DOWNGRADE_CASES])
def test_a_rejected_current_lead_is_kept_never_downgraded(
        lead: list[R], cubin: list[R], policy: Policy | None, warnings: list[str]) -> None:
    source = Indexes({PYPI: pypi(flashinfer_python=lead, flashinfer_cubin=cubin)})
    got = plan(source, policy=policy)
    assert (got.lead_current, got.lead_target) == ("0.6.8.post1", "0.6.8.post1")
    assert LEAD not in changes(got) and "flashinfer-cubin" not in changes(got)
    assert got.warnings == warnings
    # 0.6.11 is turned down for its missing cubin; 0.6.7 is never even considered
    assert rejected(got)[(LEAD, "0.6.11")] == \
        "flashinfer-cubin 0.6.11 is not published on https://pypi.org/simple"
    assert (LEAD, "0.6.7") not in rejected(got)
    assert (LEAD, "0.6.7") not in source.metadata_reads
    assert (LEAD, "already the newest complete and consistent version") in [
        (p, why) for p, _, why in got.unchanged]


def test_a_current_lead_no_set_can_keep_is_an_error_never_a_downgrade() -> None:
    """The pinned 0.6.8.post1 needs a cutlass that does not exist: the plan fails, it does
    not fall back to 0.6.7 (which would work)."""
    lead = [R("0.6.7"), R("0.6.8.post1", ("nvidia-cutlass-dsl>=9",)),
            R("0.6.11", ("nvidia-cutlass-dsl>=9",))]
    with pytest.raises(ResolutionError) as err:
        plan({PYPI: pypi(flashinfer_python=lead)})
    assert [(c.package, c.version) for c in err.value.conflicts] == [
        (LEAD, "0.6.11"), (LEAD, "0.6.8.post1")]
    assert err.value.conflicts[1].reason == (
        "nvidia-cutlass-dsl: no version satisfies >=9 (from flashinfer-python 0.6.8.post1)")


def test_an_exact_companion_the_new_set_rejects_is_not_moved_down() -> None:
    """cutlass 4.5.0 (pinned) requires flashinfer-python<0.6.11; 4.4.2 would fit 0.6.11.
    Moving cutlass back to 4.4.2 to bump the lead is a downgrade: the lead stays instead."""
    page = pypi(nvidia_cutlass_dsl=[R("4.4.2"), R("4.5.0", ("flashinfer-python<0.6.11",))])
    got = plan({PYPI: page}, pyproject(PINS[0], PINS[1], "nvidia-cutlass-dsl==4.5.0"))
    assert got.lead_target == "0.6.8.post1" and changes(got) == {}
    assert rejected(got)[(LEAD, "0.6.11")] == (
        "nvidia-cutlass-dsl: no version satisfies >=4.4 (from flashinfer-python 0.6.11)")


def test_an_exact_companion_the_set_excludes_moves_down_with_the_reason() -> None:
    """The new lead requires cutlass<4.5: the pinned 4.5.0 is excluded by the set itself, so
    4.4.2 is the answer (not a downgrade by choice)."""
    lead = [R("0.6.8.post1"), R("0.6.11", ("nvidia-cutlass-dsl<4.5",))]
    got = plan({PYPI: pypi(flashinfer_python=lead)},
               pyproject(PINS[0], PINS[1], "nvidia-cutlass-dsl==4.5.0"))
    assert changes(got)["nvidia-cutlass-dsl"] == ("==4.5.0", "==4.4.2")
    assert rejected(got)[("nvidia-cutlass-dsl", "4.5.0")] == (
        "excluded by <4.5 (from flashinfer-python 0.6.11)")
    reason = next(c.reason for c in got.changes if c.package == "nvidia-cutlass-dsl")
    assert reason == "newest version satisfying <4.5 (from flashinfer-python 0.6.11)"


def test_a_known_bad_exact_companion_pin_is_kept_with_a_warning() -> None:
    page = pypi(nvidia_cutlass_dsl=[R("4.4.2"), R("4.5.0")])
    got = plan({PYPI: page}, pyproject(PINS[0], PINS[1], "nvidia-cutlass-dsl==4.5.0"),
               config(known_bad={"nvidia-cutlass-dsl": {"4.5.0": "wrong results"}}))
    assert "nvidia-cutlass-dsl" not in changes(got)
    assert got.warnings == [
        f"nvidia-cutlass-dsl 4.5.0 (pinned) is known bad: wrong results (pinbump.toml); {KEPT}"]
    assert ("nvidia-cutlass-dsl", "==4.5.0",
            "already the newest version satisfying >=4.4 (from flashinfer-python 0.6.11)") \
        in got.unchanged


# -- the target's own bounds survive a bump -------------------------------------------------
def test_own_bounds_on_the_lead_survive_and_exclude() -> None:
    lead = [R("0.6.8"), R("0.6.11"), R("0.6.12"), R("0.7.0")]
    cubin = [R("0.6.8"), R("0.6.11"), R("0.6.12"), R("0.7.0")]
    got = plan({PYPI: pypi(flashinfer_python=lead, flashinfer_cubin=cubin)},
               pyproject("flashinfer-python>=0.6.8,!=0.6.12,<0.7", "flashinfer-cubin==0.6.8",
                         *PINS[2:]))
    assert got.lead_target == "0.6.11"
    assert changes(got)[LEAD] == (">=0.6.8,!=0.6.12,<0.7", ">=0.6.11,!=0.6.12,<0.7")
    assert changes(got)["flashinfer-cubin"] == ("==0.6.8", "==0.6.11")
    assert rejected(got)[(LEAD, "0.7.0")] == (
        "excluded by the target's own specifier !=0.6.12,<0.7 (from python/pyproject.toml:5)")
    assert rejected(got)[(LEAD, "0.6.12")] == (
        "excluded by the target's own specifier !=0.6.12,<0.7 (from python/pyproject.toml:5)")
    reason = next(c.reason for c in got.changes if c.package == LEAD)
    assert reason == ("newest version with flashinfer-cubin published at the same version; "
                      "2 newer version(s) rejected")


def test_a_cap_in_the_config_bounds_the_lead_like_its_own_specifier() -> None:
    lead = [R("0.6.8.post1"), R("0.6.11"), R("0.6.12")]
    cubin = [R("0.6.8.post1"), R("0.6.11"), R("0.6.12")]
    got = plan({PYPI: pypi(flashinfer_python=lead, flashinfer_cubin=cubin)},
               policy=config(cap={LEAD: "0.6.12"}))
    assert got.lead_target == "0.6.11"
    assert rejected(got)[(LEAD, "0.6.12")] == (
        "excluded by the target's own specifier <0.6.12 (from cap in pinbump.toml)")


@pytest.mark.parametrize(("quack_pin", "lead_requires", "after", "reason"), [
    # the floor rises as far as the lead requires; the own cap beside it stays
    ("quack-kernels>=0.3.0,<0.5", "quack-kernels>=0.4", ">=0.4.0,<0.5",
     "floor raised as far as the set requires: >=0.4 (from flashinfer-python 0.6.11); <0.5 "
     "(from python/pyproject.toml:8)"),
    # still satisfied: unchanged
    ("quack-kernels>=0.3.0,<0.5", "quack-kernels>=0.3", None,
     "floor still satisfies the set: >=0.3 (from flashinfer-python 0.6.11); <0.5 (from "
     "python/pyproject.toml:8)"),
    # a range pin without == or >=: its whole specifier is the target's bound, nothing edited
    ("quack-kernels<0.5", "quack-kernels>=0.3", None,
     "newest version satisfying >=0.3 (from flashinfer-python 0.6.11); <0.5 (from "
     "python/pyproject.toml:8)"),
    ("quack-kernels~=0.3.0", "quack-kernels>=0.3", None,
     "newest version satisfying >=0.3 (from flashinfer-python 0.6.11); ~=0.3.0 (from "
     "python/pyproject.toml:8)"),
])
def test_own_bounds_on_a_companion_survive(quack_pin: str, lead_requires: str,
                                           after: str | None, reason: str) -> None:
    lead = [R("0.6.8.post1"), R("0.6.11", (lead_requires,))]
    quack = [R("0.3.0"), R("0.3.1", yanked="bad"), R("0.4.0"), R("0.4.2"), R("0.5.0")]
    got = plan({PYPI: pypi(flashinfer_python=lead, quack_kernels=quack)},
               pyproject(*PINS[:3], quack_pin))
    before = quack_pin[len("quack-kernels"):]
    if after is None:
        assert "quack-kernels" not in changes(got)
        assert ("quack-kernels", before, reason) in got.unchanged
    else:
        assert changes(got)["quack-kernels"] == (before, after)
        assert next(c.reason for c in got.changes if c.package == "quack-kernels") == reason


def test_a_floor_the_set_excludes_rises_to_the_lowest_acceptable_release() -> None:
    """0.4.0 is yanked and 0.4.1 too new: the floor rises to 0.4.2, not to the newest 0.5.0."""
    lead = [R("0.6.8.post1"), R("0.6.11", ("quack-kernels>=0.4",))]
    quack = [R("0.3.0"), R("0.4.0", yanked="bad"), R("0.4.1", uploaded=NOW - timedelta(days=1)),
             R("0.4.2"), R("0.5.0")]
    got = plan({PYPI: pypi(flashinfer_python=lead, quack_kernels=quack)})
    assert changes(got)["quack-kernels"] == (">=0.3.0", ">=0.4.2")


def test_a_floor_no_release_can_satisfy_rejects_the_lead_version() -> None:
    lead = [R("0.6.8.post1"), R("0.6.11", ("quack-kernels>=0.5",))]
    got = plan({PYPI: pypi(flashinfer_python=lead)},
               pyproject(*PINS[:3], "quack-kernels>=0.3.0,<0.5"))
    assert got.lead_target == "0.6.8.post1"
    assert rejected(got)[(LEAD, "0.6.11")] == (
        "quack-kernels: no version at or above 0.3.0 satisfies >=0.5 (from flashinfer-python "
        "0.6.11); <0.5 (from python/pyproject.toml:8)")


def test_a_floor_whose_every_release_clashes_with_the_set() -> None:
    lead = [R("0.6.8.post1"), R("0.6.11")]
    quack = [R("0.2.0"), R("0.3.0", ("flashinfer-python<0.6.9",)),
             R("0.4.0", ("flashinfer-python<0.6.9",))]
    got = plan({PYPI: pypi(flashinfer_python=lead, quack_kernels=quack)})
    assert got.lead_target == "0.6.8.post1"
    assert rejected(got)[(LEAD, "0.6.11")] == (
        "quack-kernels: no version at or above 0.3.0 is compatible with flashinfer-python "
        "0.6.11, flashinfer-cubin 0.6.11, nvidia-cutlass-dsl 4.5.0")


def test_an_unpinned_floor_companion_takes_the_newest_compatible_release() -> None:
    lead = [R("0.6.8.post1"), R("0.6.11")]
    quack = [R("0.3.0"), R("0.4.0", ("flashinfer-python<0.6.9",)), R("0.5.0rc1")]
    got = plan({PYPI: pypi(flashinfer_python=lead, quack_kernels=quack)},
               pyproject(*PINS[:3], "quack-kernels"))
    assert ("quack-kernels", "(any)", "newest release (nothing in the set constrains it)") \
        in got.unchanged


def test_a_companion_none_of_whose_versions_fit_names_what_it_must_satisfy() -> None:
    lead = [R("0.6.8.post1"), R("0.6.11", ("nvidia-cutlass-dsl>=4.6",))]
    got = plan({PYPI: pypi(flashinfer_python=lead)})
    assert rejected(got)[(LEAD, "0.6.11")] == (
        "nvidia-cutlass-dsl: no version satisfies >=4.6 (from flashinfer-python 0.6.11)")
    got = plan({PYPI: pypi(flashinfer_python=lead)},
               pyproject(*PINS[:2], "nvidia-cutlass-dsl==4.4.2,<4.5"))
    assert rejected(got)[(LEAD, "0.6.11")] == (
        "nvidia-cutlass-dsl: no version satisfies >=4.6 (from flashinfer-python 0.6.11); <4.5 "
        "(from python/pyproject.toml:7)")


def test_the_lead_conflicting_with_its_own_lockstep_metadata() -> None:
    cubin = [R("0.6.8.post1"), R("0.6.11", ("flashinfer-python<0.6.11",))]
    got = plan({PYPI: pypi(flashinfer_cubin=cubin)})
    assert got.lead_target == "0.6.8.post1"
    assert rejected(got)[(LEAD, "0.6.11")] == (
        "flashinfer-python 0.6.11 conflicts with <0.6.11 (from flashinfer-cubin 0.6.11)")


# -- how each pin is rewritten --------------------------------------------------------------
def test_pins_of_one_package_move_together_each_spelling_once() -> None:
    target = tree(python__pyproject_toml='[project]\ndependencies = '
                  '["flashinfer-python==0.6.8.post1"]\n[project.optional-dependencies]\n'
                  'cu13 = ["flashinfer-python[cu13]==0.6.8.post1"]\n',
                  requirements_txt="flashinfer-python==0.6.8.post1\nflashinfer-cubin==0.6.8.post1\n"
                  "flashinfer-cubin==0.6.8.post1 --hash=sha256:" + "0" * 64 + "\n",
                  docker__Dockerfile="ARG FLASHINFER_VERSION=0.6.8.post1\n",
                  setup_cfg="[options]\ninstall_requires =\n    flashinfer-python>=0.6.8\n")
    got = plan({PYPI: pypi()}, target)
    moved = [(c.package, c.specifier_before, c.specifier_after, c.files) for c in got.changes]
    assert moved == [
        (LEAD, "==0.6.8.post1", "==0.6.11", ["python/pyproject.toml:2", "python/pyproject.toml:4",
                                             "requirements.txt:1", "docker/Dockerfile:1"]),
        (LEAD, ">=0.6.8", ">=0.6.11", ["setup.cfg:3"]),
        ("flashinfer-cubin", "==0.6.8.post1", "==0.6.11", ["requirements.txt:2"]),
    ]
    assert [(c.current, c.target) for c in got.changes] == [
        ("0.6.8.post1", "0.6.11"), ("0.6.8", "0.6.11"), ("0.6.8.post1", "0.6.11")]
    assert ("flashinfer-cubin", "==0.6.8.post1 at requirements.txt:3",
            "not edited: hash-pinned (--hash): regenerate the hashes, e.g. pip-compile "
            "--generate-hashes") in got.unchanged


def test_a_local_label_written_in_the_pin_is_kept() -> None:
    page = pypi(flashinfer_jit_cache=[R("0.6.8.post1"), R("0.6.11")])
    got = plan({PYPI: page}, pyproject(*PINS, "flashinfer-jit-cache==0.6.8.post1+cu129"))
    assert changes(got)["flashinfer-jit-cache"] == ("==0.6.8.post1+cu129", "==0.6.11+cu129")
    assert next(c.reason for c in got.changes if c.package == "flashinfer-jit-cache") == \
        "lockstep with flashinfer-python 0.6.11"


# -- screening one candidate ----------------------------------------------------------------
SCREEN_CASES = [
    # (id, the 0.6.12 release of the lead, policy, the rejection of 0.6.12 or None: chosen)
    ("yanked with a reason", R("0.6.12", yanked="broken metadata"), None,
     "yanked: broken metadata"),
    ("yanked without a reason", R("0.6.12", yanked=""), None, "yanked"),
    ("pre-release", R("0.7.0rc1"), None, "pre-release (allow with allow-prereleases)"),
    ("pre-release allowed for the lead and cubin", R("0.7.0rc1"),
     config(allow_prereleases=[LEAD, "flashinfer-cubin"]), None),
    ("pre-release allowed for another package", R("0.7.0rc1"),
     config(allow_prereleases=["quack-kernels"]), "pre-release (allow with allow-prereleases)"),
    ("dev release", R("0.7.0.dev3"), None, "pre-release (allow with allow-prereleases)"),
    ("too new, in hours", R("0.6.12", uploaded=NOW - timedelta(hours=30)), None,
     "too new: uploaded 30 hours before now; minimum release age is 3 days"),
    ("too new, in days", R("0.6.12", uploaded=NOW - timedelta(hours=84)), config(
        min_release_age=7), "too new: uploaded 3.5 days before now; minimum release age is 7 days"),
    ("too new, fractional minimum", R("0.6.12", uploaded=NOW - timedelta(hours=47)), config(
        min_release_age=2.5), "too new: uploaded 47 hours before now; minimum release age is "
                              "2.5 days"),
    ("just old enough", R("0.6.12", uploaded=NOW - timedelta(days=3)), None, None),
    ("upload time unknown", R("0.6.12", uploaded=None), None,
     "upload time unknown (the index gives neither upload-time nor Last-Modified)"),
    ("upload time unknown, no minimum age", R("0.6.12", uploaded=None),
     config(min_release_age=0), None),
    ("known bad in the config", R("0.6.12"),
     config(known_bad={LEAD: {"0.6.12": "GB300 hang"}}), "known bad: GB300 hang (pinbump.toml)"),
    ("only an aarch64 wheel", R("0.6.12", tags=(ARM,)), None,
     "no wheel installable on Linux x86-64, Linux aarch64, Python 3.10, 3.11, 3.12, 3.13, 3.14"
     if False else "no wheel for Linux x86-64"),
    ("only a Windows wheel", R("0.6.12", tags=("cp310-abi3-win_amd64",)), None,
     "no wheel installable on Linux x86-64, Linux aarch64, Python 3.10, 3.11, 3.12, 3.13, 3.14"),
    ("one Python only", R("0.6.12", tags=("cp312-cp312-manylinux_2_28_x86_64",
                                          "cp312-cp312-manylinux_2_28_aarch64")), None,
     "no wheel for Linux x86-64 (Python 3.10, 3.11, 3.13, 3.14); Linux aarch64 (Python 3.10, "
     "3.11, 3.13, 3.14)"),
    ("every platform", R("0.6.12", tags=(X86, ARM)), None, None),
    ("a local version", R("0.6.12+evil.example"), None,
     "local version (+evil.example): never a target unless configured"),
]


@pytest.mark.parametrize(("release", "policy", "reason"), [c[1:] for c in SCREEN_CASES],
                         ids=[c[0] for c in SCREEN_CASES])
def test_screening_a_candidate(release: R, policy: Policy | None, reason: str | None) -> None:
    lead = [R("0.6.8.post1", tags=(X86, ARM)), R("0.6.11", tags=(X86, ARM)), release]
    cubin = [R("0.6.8.post1"), R("0.6.11"), R(release.version)]
    got = plan({PYPI: pypi(flashinfer_python=lead, flashinfer_cubin=cubin)}, policy=policy)
    if reason is None:
        assert got.lead_target == release.version
        assert (LEAD, release.version) not in rejected(got)
    else:
        assert got.lead_target == "0.6.11"
        assert rejected(got)[(LEAD, release.version)] == reason
        assert reason not in str(got.warnings)


@pytest.mark.parametrize(("cubin", "reason"), [
    (R("0.6.12", yanked="bad"), "flashinfer-cubin 0.6.12: yanked: bad"),
    (R("0.6.12", uploaded=NOW - timedelta(hours=5)),
     "flashinfer-cubin 0.6.12: too new: uploaded 5 hours before now; minimum release age is 3 "
     "days"),
    (R("0.6.12", tags=(X86,)), "flashinfer-cubin 0.6.12: no wheel for Linux aarch64"),
    (R("0.6.13"), "flashinfer-cubin 0.6.12 is not published on https://pypi.org/simple"),
])
def test_screening_the_lockstep_package(cubin: R, reason: str) -> None:
    lead = [R("0.6.8.post1"), R("0.6.11"), R("0.6.12")]
    got = plan({PYPI: pypi(flashinfer_python=lead,
                           flashinfer_cubin=[R("0.6.8.post1"), R("0.6.11"), cubin])})
    assert got.lead_target == "0.6.11"
    assert rejected(got)[(LEAD, "0.6.12")] == reason


def test_a_capped_companion_stays_below_the_cap() -> None:
    got = plan({PYPI: pypi()}, policy=config(cap={"nvidia-cutlass-dsl": "4.5"}))
    assert "nvidia-cutlass-dsl" not in changes(got)
    assert rejected(got)[("nvidia-cutlass-dsl", "4.5.0")] == "capped below 4.5 by pinbump.toml"


def test_rejections_say_when_the_version_was_uploaded() -> None:
    when = NOW - timedelta(days=10)
    lead = [R("0.6.8.post1"), R("0.6.11"), R("0.6.12", uploaded=when, yanked="x")]
    source = Indexes({PYPI: pypi(flashinfer_python=lead)},
                     last_modified={})
    got = plan(source)
    (r,) = [r for r in got.rejected if r.version == "0.6.12"]
    assert r.uploaded == when


def test_the_upload_time_falls_back_to_the_wheels_last_modified() -> None:
    lead = [R("0.6.8.post1"), R("0.6.11"), R("0.6.12", uploaded=None)]
    cubin = [R("0.6.8.post1"), R("0.6.11"), R("0.6.12")]
    source = Indexes({PYPI: pypi(flashinfer_python=lead, flashinfer_cubin=cubin)},
                     last_modified={"flashinfer_python-0.6.12-py3-none-any.whl":
                                    NOW - timedelta(hours=20)})
    got = plan(source)
    assert rejected(got)[(LEAD, "0.6.12")] == (
        "too new: uploaded 20 hours before now; minimum release age is 3 days")
    source.last_modified["flashinfer_python-0.6.12-py3-none-any.whl"] = NOW - timedelta(days=4)
    assert plan(Indexes(source.pages, last_modified=source.last_modified)).lead_target == "0.6.12"


def test_the_wheel_that_stands_for_a_version() -> None:
    env = Environment.for_target(">=3.10", platforms=("linux-x86_64",))

    def f(name: str, tag: str, yanked: str | None = None, wheel: bool = True) -> DistFile:
        return DistFile(name, "mem://" + name, Version("1"), wheel, frozenset({tag}),
                        yanked=yanked)
    x86, arm, pure = (f("b-x86.whl", X86), f("a-arm.whl", ARM), f("z-pure.whl", "py3-none-any"))
    assert best_wheel(env, [x86, arm, pure]) is pure  # pure-Python first
    assert best_wheel(env, [arm, x86]) is x86  # then one that installs here
    assert best_wheel(env, [f("c.whl", X86), x86]) is x86  # then by name
    assert best_wheel(env, [f("p.whl", "py3-none-any", yanked=""), x86]) is x86  # live first
    assert best_wheel(env, [arm, f("sdist.tar.gz", "", wheel=False)]) is arm  # any wheel at all


# -- --as-of --------------------------------------------------------------------------------
def test_as_of_hides_what_was_not_yet_uploaded_and_ages_from_that_day() -> None:
    day = cutoff_for("2026-11-20", NOW)
    assert day == datetime(2026, 11, 20, 23, 59, 59, 999999, tzinfo=timezone.utc)
    assert cutoff_for(None, NOW) == NOW and cutoff_for("", NOW) == NOW
    lead = [R("0.6.8.post1"), R("0.6.11", uploaded=datetime(2026, 11, 16, tzinfo=timezone.utc)),
            R("0.6.12", uploaded=datetime(2026, 11, 19, tzinfo=timezone.utc)),
            R("0.6.13", uploaded=datetime(2026, 11, 21, tzinfo=timezone.utc))]
    cubin = [R("0.6.8.post1"), R("0.6.11"), R("0.6.12"), R("0.6.13")]
    got = plan({PYPI: pypi(flashinfer_python=lead, flashinfer_cubin=cubin)}, now=day, as_of=True)
    assert got.lead_target == "0.6.11"
    assert rejected(got) == {(LEAD, "0.6.12"): "too new: uploaded 48 hours before --as-of; "
                                                "minimum release age is 3 days"} or \
        rejected(got)[(LEAD, "0.6.12")].startswith("too new: uploaded 2.0 days before --as-of")
    assert (LEAD, "0.6.13") not in rejected(got)


def test_as_of_before_the_pinned_version_existed() -> None:
    lead = [R("0.6.8.post1", uploaded=datetime(2026, 11, 25, tzinfo=timezone.utc)),
            R("0.6.11", ("nvidia-cutlass-dsl>=9",))]
    day = cutoff_for("2026-11-20", NOW)
    with pytest.raises(ResolutionError) as err:
        plan({PYPI: pypi(flashinfer_python=lead)}, now=day, as_of=True)
    assert err.value.unavailable == (
        "flashinfer-python 0.6.8.post1 (pinned) was not yet published on 2026-11-20 "
        "(uploaded 2026-11-25); choose a later --as-of")


def test_a_pinned_version_no_index_has() -> None:
    lead = [R("0.6.7"), R("0.6.11", ("nvidia-cutlass-dsl>=9",))]
    with pytest.raises(ResolutionError) as err:
        plan({PYPI: pypi(flashinfer_python=lead)})
    assert err.value.unavailable == \
        "flashinfer-python 0.6.8.post1 (pinned) is not on https://pypi.org/simple"
    assert str(err.value).endswith(err.value.unavailable)


def test_a_lockstep_version_not_yet_published_on_the_as_of_day() -> None:
    lead = [R("0.6.8.post1"), R("0.6.11", uploaded=datetime(2026, 11, 10, tzinfo=timezone.utc))]
    cubin = [R("0.6.8.post1"), R("0.6.11", uploaded=datetime(2026, 11, 22, tzinfo=timezone.utc))]
    got = plan({PYPI: pypi(flashinfer_python=lead, flashinfer_cubin=cubin)},
               now=cutoff_for("2026-11-20", NOW), as_of=True)
    assert got.lead_target == "0.6.8.post1"
    assert rejected(got)[(LEAD, "0.6.11")] == \
        "flashinfer-cubin 0.6.11 was not yet published on 2026-11-20"


# -- nothing to plan ------------------------------------------------------------------------
def test_no_pin_of_the_lead_is_an_input_error_before_any_index_is_asked() -> None:
    source = Indexes({PYPI: pypi()})
    with pytest.raises(InputError) as err:
        plan(source, pyproject("flashinfer-cubin==0.6.8.post1"))
    assert str(err.value) == (
        "/t: no requirement on flashinfer-python in any pyproject, requirements file, "
        "setup.py/setup.cfg, Dockerfile, CI script or versions JSON; nothing to plan for group "
        "'flashinfer'")
    assert source.asked == []


def test_the_highest_of_several_lead_pins_is_the_current_one() -> None:
    target = tree(requirements_txt="flashinfer-python==0.6.7\n",
                  docker__Dockerfile="ARG FLASHINFER_VERSION=0.6.8.post1\n"
                                     "RUN pip install flashinfer-cubin==0.6.8.post1\n")
    got = plan({PYPI: pypi()}, target)
    assert (got.lead_current, got.lead_target) == ("0.6.8.post1", "0.6.11")
    assert (LEAD, "0.6.7") not in rejected(got)


# -- --as-of with only the wheels' Last-Modified to go by ------------------------------------
DAY = datetime(2026, 11, 20, 23, 59, 59, 999999, tzinfo=timezone.utc)  # cutoff_for 2026-11-20
AFTER = datetime(2026, 11, 25, tzinfo=timezone.utc)


def last_modified(package: str, version: str, when: datetime,
                  tag: str = "py3-none-any") -> dict[str, datetime]:
    return {f"{package.replace('-', '_')}-{version}-{tag}.whl": when}


@pytest.mark.parametrize(("release", "when", "reason"), [
    # not yet uploaded that day: not even a rejection, yanked or not
    (R("0.6.12", uploaded=None), AFTER, None),
    (R("0.6.12", uploaded=None, yanked="broken"), AFTER, None),
    # uploaded in the day's last microsecond: it existed
    (R("0.6.12", uploaded=None), DAY, "too new: uploaded 0 hours before --as-of; minimum "
                                      "release age is 3 days"),
    (R("0.6.12", uploaded=None, yanked="broken"), DAY - timedelta(days=5), "yanked: broken"),
    (R("0.6.12", uploaded=None), DAY - timedelta(days=5), "chosen"),
    # neither upload-time nor Last-Modified: unknown, so never chosen for a replayed day
    (R("0.6.12", uploaded=None), None, "upload time unknown (the index gives neither "
                                       "upload-time nor Last-Modified)"),
    (R("0.6.12", uploaded=None, tags=("cp310-abi3-win_amd64",)), AFTER,
     "no wheel installable on Linux x86-64, Linux aarch64, Python 3.10, 3.11, 3.12, 3.13, 3.14"),
])
def test_as_of_judges_a_version_by_its_wheels_last_modified(
        release: R, when: datetime | None, reason: str | None) -> None:
    lead = [R("0.6.8.post1"), R("0.6.11"), release]
    cubin = [R("0.6.8.post1"), R("0.6.11"), R("0.6.12")]
    tag = release.tags[0]
    source = Indexes({PYPI: pypi(flashinfer_python=lead, flashinfer_cubin=cubin)},
                     last_modified=last_modified(LEAD, "0.6.12", when, tag) if when else {})
    got = plan(source, now=DAY, as_of=True)
    if reason == "chosen":
        assert got.lead_target == "0.6.12"
    elif reason is None:
        assert got.lead_target == "0.6.11" and (LEAD, "0.6.12") not in rejected(got)
    else:
        assert got.lead_target == "0.6.11"
        assert rejected(got)[(LEAD, "0.6.12")] == reason


def test_without_as_of_a_version_dated_after_now_is_too_new_not_hidden() -> None:
    lead = [R("0.6.8.post1"), R("0.6.11"), R("0.6.12", uploaded=None)]
    cubin = [R("0.6.8.post1"), R("0.6.11"), R("0.6.12")]
    source = Indexes({PYPI: pypi(flashinfer_python=lead, flashinfer_cubin=cubin)},
                     last_modified=last_modified(LEAD, "0.6.12", NOW + timedelta(hours=3)))
    got = plan(source)
    assert rejected(got)[(LEAD, "0.6.12")] == (
        "too new: uploaded -3 hours before now; minimum release age is 3 days")


def test_as_of_before_the_pinned_lead_was_uploaded_by_its_last_modified() -> None:
    lead = [R("0.6.8.post1", uploaded=None), R("0.6.11", ("nvidia-cutlass-dsl>=9",))]
    source = Indexes({PYPI: pypi(flashinfer_python=lead)},
                     last_modified=last_modified(LEAD, "0.6.8.post1", AFTER))
    with pytest.raises(ResolutionError) as err:
        plan(source, now=DAY, as_of=True)
    assert err.value.unavailable == (
        "flashinfer-python 0.6.8.post1 (pinned) was not yet published on 2026-11-20 "
        "(uploaded 2026-11-25); choose a later --as-of")
    # the same pin on a day it existed is kept
    source.last_modified.update(last_modified(LEAD, "0.6.8.post1", DAY - timedelta(days=9)))
    assert plan(source, now=DAY, as_of=True).lead_target == "0.6.8.post1"


def test_as_of_keeps_a_pinned_companion_dated_after_the_day() -> None:
    """cutlass 4.5.0 is pinned; its Last-Modified is after the replayed day (re-uploaded):
    the pin is kept, never moved down to 4.4.2."""
    page = pypi(nvidia_cutlass_dsl=[R("4.4.2"), R("4.5.0", uploaded=None)])
    source = Indexes({PYPI: page}, last_modified=last_modified("nvidia-cutlass-dsl", "4.5.0",
                                                               AFTER))
    got = plan(source, pyproject(*PINS[:2], "nvidia-cutlass-dsl==4.5.0", PINS[3]), now=DAY,
               as_of=True)
    assert got.lead_target == "0.6.11"
    assert "nvidia-cutlass-dsl" not in changes(got)


def test_a_half_day_minimum_age_still_needs_an_upload_time() -> None:
    lead = [R("0.6.8.post1"), R("0.6.11"), R("0.6.12", uploaded=None)]
    cubin = [R("0.6.8.post1"), R("0.6.11"), R("0.6.12")]
    got = plan({PYPI: pypi(flashinfer_python=lead, flashinfer_cubin=cubin)},
               policy=config(min_release_age=0.5))
    assert rejected(got)[(LEAD, "0.6.12")] == (
        "upload time unknown (the index gives neither upload-time nor Last-Modified)")


# -- the whole plan, field by field ---------------------------------------------------------
def test_the_plan_of_a_plain_bump_field_by_field() -> None:
    lead = [R("0.6.8.post1", ("nvidia-cutlass-dsl>=4.2",)),
            R("0.6.11", ("nvidia-cutlass-dsl>=4.4", "quack-kernels>=0.3")),
            R("0.6.12", yanked="metadata broken")]
    target = tree(python__pyproject_toml='[project]\nrequires-python = ">=3.10"\ndependencies = '
                  '["flashinfer-python==0.6.8.post1", "flashinfer-cubin==0.6.8.post1", '
                  '"nvidia-cutlass-dsl==4.4.2", "quack-kernels", "quack-kernels>=0.3.0"]\n')
    target = Target(target.root, target.tomls, target.pins,
                    skipped=(("docker/big.json", "over 2 MB"),))
    got = plan({PYPI: pypi(flashinfer_python=lead)}, target)
    assert (got.group, got.lead, got.lead_current, got.lead_target) == (
        "flashinfer", LEAD, "0.6.8.post1", "0.6.11")
    assert [(c.package, c.current, c.target, c.specifier_before, c.specifier_after, c.files,
             c.reason) for c in got.changes] == [
        (LEAD, "0.6.8.post1", "0.6.11", "==0.6.8.post1", "==0.6.11", ["python/pyproject.toml:3"],
         "newest version with flashinfer-cubin published at the same version; 1 newer "
         "version(s) rejected"),
        ("flashinfer-cubin", "0.6.8.post1", "0.6.11", "==0.6.8.post1", "==0.6.11",
         ["python/pyproject.toml:3"], "lockstep with flashinfer-python 0.6.11"),
        ("nvidia-cutlass-dsl", "4.4.2", "4.5.0", "==4.4.2", "==4.5.0", ["python/pyproject.toml:3"],
         "newest version satisfying >=4.4 (from flashinfer-python 0.6.11)"),
    ]
    assert got.unchanged == [
        ("quack-kernels", "(any)", "lowest version the set allows"),
        ("quack-kernels", ">=0.3.0", "floor still satisfies the set: >=0.3 (from "
                                     "flashinfer-python 0.6.11)")]
    assert [(r.package, r.version, r.reason) for r in got.rejected] == [
        (LEAD, "0.6.12", "yanked: metadata broken")]
    assert got.skipped == [("docker/big.json", "over 2 MB")]
    assert got.platforms == "Linux x86-64, Linux aarch64, Python 3.10, 3.11, 3.12, 3.13, 3.14"
    assert got.channel == "stable"
    assert got.found_on == {p: PYPI for p in (LEAD, "flashinfer-cubin", "nvidia-cutlass-dsl",
                                              "quack-kernels")}  # no model: the default index
    assert (got.warnings, got.hints, got.unreachable) == ([], [], [])
    # jit-cache is not pinned here and no index has it: noted, never blocking
    assert got.not_verified == [
        ("flashinfer-jit-cache", "flashinfer-jit-cache: not found on https://pypi.org/simple "
                                 "(HTTP 404); set its index in [tool.pinbump.index] to check it; "
                                 "optional here (not pinned)")]


def test_a_lead_moving_alone_and_a_companion_nothing_constrains() -> None:
    got = plan({PYPI: pypi(flashinfer_python=[R("0.6.8.post1"), R("0.6.11")])},
               pyproject("flashinfer-python==0.6.8.post1", "nvidia-cutlass-dsl==4.4.2"))
    assert [(c.package, c.reason) for c in got.changes] == [
        (LEAD, "newest version with a consistent set"),
        ("nvidia-cutlass-dsl", "newest release (nothing in the set constrains it)")]


def test_a_bound_only_pin_of_the_lead_moves_nothing_and_says_why() -> None:
    got = plan({PYPI: pypi()}, pyproject("flashinfer-python<0.7", *PINS[1:]))
    assert (got.lead_current, got.lead_target) == ("", "0.6.11")
    assert (LEAD, "<0.7", "newest version with flashinfer-cubin published at the same version") \
        in got.unchanged


# -- companions: which pins take part, and what each mode may do ----------------------------
def test_a_companion_without_a_pin_does_not_stop_the_next_one() -> None:
    lead = [R("0.6.8.post1"), R("0.6.11", ("quack-kernels>=0.4",))]
    got = plan({PYPI: pypi(flashinfer_python=lead)}, pyproject(*PINS[:2], PINS[3]))
    assert changes(got) == {LEAD: ("==0.6.8.post1", "==0.6.11"),
                            "flashinfer-cubin": ("==0.6.8.post1", "==0.6.11"),
                            "quack-kernels": (">=0.3.0", ">=0.4.0")}


def test_a_wildcard_pin_is_a_bound_that_survives() -> None:
    page = pypi(nvidia_cutlass_dsl=[R("4.4.2"), R("4.4.3"), R("4.5.0")])
    got = plan({PYPI: page}, pyproject(*PINS[:2], "nvidia-cutlass-dsl==4.4.*", PINS[3]))
    assert "nvidia-cutlass-dsl" not in changes(got)
    assert ("nvidia-cutlass-dsl", "==4.4.*", "newest version satisfying >=4.4 (from "
            "flashinfer-python 0.6.11); ==4.4.* (from python/pyproject.toml:7)") in got.unchanged


def test_a_capped_companion_names_the_cap_among_its_bounds() -> None:
    got = plan({PYPI: pypi()}, policy=config(cap={"nvidia-cutlass-dsl": "4.5"}))
    assert ("nvidia-cutlass-dsl", "==4.4.2", "already the newest version satisfying >=4.4 (from "
            "flashinfer-python 0.6.11); <4.5 (from cap in pinbump.toml)") in got.unchanged


def test_an_exact_companion_steps_back_when_the_next_one_has_no_version_with_it() -> None:
    """Every quack release requires cutlass<4.5: cutlass 4.5.0 is turned down for it (and
    the reason recorded), 4.4.2 is kept."""
    quack = [R("0.3.0", ("nvidia-cutlass-dsl<4.5",)), R("0.4.0", ("nvidia-cutlass-dsl<4.5",))]
    got = plan({PYPI: pypi(quack_kernels=quack)}, pyproject(*PINS[:3], "quack-kernels==0.3.0"))
    assert got.lead_target == "0.6.11"
    assert changes(got)["quack-kernels"] == ("==0.3.0", "==0.4.0")
    assert "nvidia-cutlass-dsl" not in changes(got)
    assert rejected(got)[("nvidia-cutlass-dsl", "4.5.0")] == (
        "quack-kernels: no version satisfies the policy")


def test_a_floor_whose_own_release_is_yanked_is_kept() -> None:
    got = plan({PYPI: pypi(quack_kernels=[R("0.3.0", yanked="bad")])})
    assert got.lead_target == "0.6.11" and "quack-kernels" not in changes(got)
    assert got.warnings == [f"quack-kernels 0.3.0 (pinned) is yanked: bad; {KEPT}"]
    # a floor the set still allows is not raised past its own (yanked) release
    got = plan({PYPI: pypi(quack_kernels=[R("0.3.0", yanked="bad"), R("0.3.1")])})
    assert "quack-kernels" not in changes(got)


def test_a_raised_floor_skips_known_bad_releases() -> None:
    lead = [R("0.6.8.post1"), R("0.6.11", ("quack-kernels>=0.4",))]
    quack = [R("0.3.0"), R("0.4.0"), R("0.4.1"), R("0.5.0")]
    got = plan({PYPI: pypi(flashinfer_python=lead, quack_kernels=quack)},
               policy=config(known_bad={"quack-kernels": {"0.4.0": "wrong results"}}))
    assert changes(got)["quack-kernels"] == (">=0.3.0", ">=0.4.1")


def test_a_range_pin_companion_must_fit_its_own_range() -> None:
    """quack<0.4: 0.4.0 would fit the set but not the target's range; 0.3.0 clashes with the
    new lead, so the new lead is turned down."""
    lead = [R("0.6.8.post1"), R("0.6.11")]
    quack = [R("0.3.0", ("flashinfer-python<0.6.9",)), R("0.4.0")]
    got = plan({PYPI: pypi(flashinfer_python=lead, quack_kernels=quack)},
               pyproject(*PINS[:3], "quack-kernels<0.4"))
    assert got.lead_target == "0.6.8.post1"
    assert rejected(got)[(LEAD, "0.6.11")] == (
        "quack-kernels: no version is compatible with flashinfer-python 0.6.11, flashinfer-cubin "
        "0.6.11, nvidia-cutlass-dsl 4.5.0")


def test_after_an_unchanged_spec_the_next_spec_of_the_package_still_moves() -> None:
    got = plan({PYPI: pypi()}, pyproject("flashinfer-python<0.7", "flashinfer-python==0.6.8.post1",
                                         *PINS[1:]))
    assert changes(got)[LEAD] == ("==0.6.8.post1", "==0.6.11")
    assert (LEAD, "<0.7", "newest version with flashinfer-cubin published at the same version") \
        in got.unchanged


@pytest.mark.parametrize(("cubin", "policy", "warnings"), [
    (R("0.6.8.post1", yanked="bad wheel"), None,
     [f"flashinfer-cubin 0.6.8.post1 (pinned) is yanked: bad wheel; {KEPT}"]),
    (R("0.6.8.post1", uploaded=NOW - timedelta(hours=1)), None, []),
    (R("0.6.8.post1"), config(known_bad={"flashinfer-cubin": {"0.6.8.post1": "hangs"}}),
     [f"flashinfer-cubin 0.6.8.post1 (pinned) is known bad: hangs (pinbump.toml); {KEPT}"]),
])
def test_the_current_leads_rejected_lockstep_pin_is_kept_never_downgraded(
        cubin: R, policy: Policy | None, warnings: list[str]) -> None:
    """cubin 0.6.11 is missing, so 0.6.8.post1 stays; its own cubin being yanked, too new or
    known bad does not turn the current set down (nor send it back to 0.6.7)."""
    got = plan({PYPI: pypi(flashinfer_cubin=[R("0.6.7"), cubin])}, policy=policy)
    assert got.lead_target == "0.6.8.post1" and "flashinfer-cubin" not in changes(got)
    assert got.warnings == warnings
