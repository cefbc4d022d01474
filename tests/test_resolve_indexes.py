"""The resolver over FlashInfer's real publishing layout, in memory: flashinfer-python on PyPI,
flashinfer-cubin on PyPI up to 0.6.13 and on https://flashinfer.ai/whl, flashinfer-jit-cache on
one index per CUDA variant with local versions (0.6.11+cu130), from 0.7.0 a shim whose
provider wheels must exist at the shim's full version. The index model is the shipped one
(``bot/data/flashinfer.toml``) built over the target's own declarations, as ``plan`` builds it.

Rows: which index each version was verified on, what an unreachable or 404 index does, and the
exact rejection for each way a variant or a provider can be incomplete.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from test_resolve_rules import (
    ARM,
    FI,
    LEAD,
    NOW,
    PYPI,
    X86,
    Indexes,
    R,
    changes,
    plan,
    rejected,
    tree,
)

from bot.core.config import Policy, builtin_data
from bot.core.discovery import Target
from bot.core.indexmodel import IndexModel, build_model
from bot.core.models import Plan
from bot.errors import IndexError_, UnknownPackage

CU129, CU130 = f"{FI}/cu129", f"{FI}/cu130"
MEMBERS = ("flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache", "nvidia-cutlass-dsl",
           "quack-kernels")
DOCKERFILE = ("ARG CUDA_VERSION=12.9.1\n"
              "RUN pip install flashinfer-jit-cache==0.6.8.post1+cu129 "
              "--extra-index-url https://flashinfer.ai/whl/cu129\n")


def target(*, jit: bool = True, cuda: str = "12.9.1", cubin: str = "0.6.8.post1") -> Target:
    files = {"requirements/cuda.txt": "flashinfer-python==0.6.8.post1\n"
                                      f"flashinfer-cubin=={cubin}\n"
                                      "nvidia-cutlass-dsl==4.4.2\n"}
    files["pyproject.toml"] = '[project]\nname = "sglang"\nrequires-python = ">=3.10"\n'
    if jit:
        files["docker/Dockerfile"] = DOCKERFILE.replace("12.9.1", cuda)
    return tree(**{k.replace("/", "__").replace(".", "_"): v for k, v in files.items()})


def model_of(t: Target, variants: tuple[str, ...] = ()) -> IndexModel:
    return build_model(MEMBERS, builtin_data("flashinfer"), pypi=PYPI, base=None, configured={},
                       config_source="pinbump.toml", decls=t.indexes,
                       variants=variants or t.cuda_variants)


def jit(version: str, variant: str, *requires: str, **kw: object) -> R:
    return R(f"{version}+{variant}", tuple(requires), tags=(X86, ARM), **kw)  # type: ignore[arg-type]


def layout(**over: object) -> dict[str, dict[str, list[R]]]:
    pages: dict[str, dict[str, list[R]]] = {
        PYPI: {LEAD: [R("0.6.8.post1"), R("0.6.11"), R("0.6.14")],
               "flashinfer-cubin": [R("0.6.8.post1"), R("0.6.11")],
               "nvidia-cutlass-dsl": [R("4.4.2")], "quack-kernels": [R("0.3.0")]},
        FI: {"flashinfer-cubin": [R("0.6.11"), R("0.6.14")]},
        CU129: {"flashinfer-jit-cache": [jit("0.6.8.post1", "cu129"), jit("0.6.11", "cu129"),
                                         jit("0.6.14", "cu129")]},
        CU130: {"flashinfer-jit-cache": [jit("0.6.11", "cu130"), jit("0.6.14", "cu130")]},
    }
    for key, value in over.items():
        url, package = key.rsplit(":", 1)
        pages.setdefault(url, {})[package] = value  # type: ignore[assignment]
    return pages


def run(source: Indexes, t: Target | None = None, policy: Policy | None = None,
        variants: tuple[str, ...] = (), **kw: object) -> Plan:
    t = t or target()
    return plan(source, t, policy, model=model_of(t, variants), **kw)  # type: ignore[arg-type]


def test_each_package_is_verified_where_it_is_published() -> None:
    got = run(Indexes(layout()))
    assert got.lead_target == "0.6.14"
    assert got.found_on == {LEAD: PYPI, "flashinfer-cubin": FI, "flashinfer-jit-cache": CU129,
                            "nvidia-cutlass-dsl": PYPI}
    assert changes(got)["flashinfer-jit-cache"] == ("==0.6.8.post1+cu129", "==0.6.14+cu129")
    assert got.unreachable == [] and got.not_verified == [] and got.hints == []


def test_every_variant_the_target_builds_must_have_the_version() -> None:
    source = Indexes(layout(**{f"{CU130}:flashinfer-jit-cache": [jit("0.6.11", "cu130")]}))
    got = run(source, variants=("cu129", "cu130"))
    assert got.lead_target == "0.6.11"
    assert rejected(got)[(LEAD, "0.6.14")] == (
        "flashinfer-jit-cache 0.6.14+cu130 is not published on https://flashinfer.ai/whl/cu130")
    # the target that builds cu129 only does not need it on cu130
    assert run(Indexes(layout(**{f"{CU130}:flashinfer-jit-cache": [jit("0.6.11", "cu130")]}))
               ).lead_target == "0.6.14"


@pytest.mark.parametrize(("release", "reason"), [
    (jit("0.6.14", "cu129", yanked="bad build"), "flashinfer-jit-cache 0.6.14+cu129: yanked: "
                                                  "bad build"),
    (R("0.6.14+cu129", tags=(X86,)), "flashinfer-jit-cache 0.6.14+cu129: no wheel for Linux "
                                     "aarch64"),
    (jit("0.6.14", "cu129", uploaded=NOW - timedelta(hours=6)),
     "flashinfer-jit-cache 0.6.14+cu129: too new: uploaded 6 hours before now; minimum release "
     "age is 3 days"),
    (jit("0.6.14", "cu130"), "flashinfer-jit-cache 0.6.14+cu129 is not published on "
                             "https://flashinfer.ai/whl/cu129"),
])
def test_a_variant_build_is_screened_like_any_release(release: R, reason: str) -> None:
    rels = [jit("0.6.8.post1", "cu129"), jit("0.6.11", "cu129"), release]
    got = run(Indexes(layout(**{f"{CU129}:flashinfer-jit-cache": rels})))
    assert got.lead_target == "0.6.11"
    assert rejected(got)[(LEAD, "0.6.14")] == reason


def test_a_variant_not_yet_published_on_the_as_of_day() -> None:
    day = NOW - timedelta(days=10)
    rels = [jit("0.6.8.post1", "cu129"), jit("0.6.11", "cu129"),
            jit("0.6.14", "cu129", uploaded=day + timedelta(days=1))]
    lead = [R("0.6.8.post1"), R("0.6.11"), R("0.6.14", uploaded=day - timedelta(days=5))]
    cubin = [R("0.6.11"), R("0.6.14", uploaded=day - timedelta(days=5))]
    got = run(Indexes(layout(**{f"{CU129}:flashinfer-jit-cache": rels, f"{PYPI}:{LEAD}": lead,
                                f"{FI}:flashinfer-cubin": cubin})), now=day, as_of=True)
    assert got.lead_target == "0.6.11"
    assert rejected(got)[(LEAD, "0.6.14")] == (
        f"flashinfer-jit-cache 0.6.14+cu129 was not yet published on {day:%Y-%m-%d}")


def test_an_unreachable_index_is_reported_and_only_what_was_verified_is_used() -> None:
    source = Indexes(layout(), down={FI: "connection refused", CU129: "timed out after 10 s"})
    got = run(source)
    assert got.lead_target == "0.6.11"
    assert rejected(got)[(LEAD, "0.6.14")] == (
        "flashinfer-cubin 0.6.14 not verified: https://flashinfer.ai/whl unreachable and not on "
        "https://pypi.org/simple")
    assert [(p.package, p.url, p.error, p.verified) for p in got.unreachable] == [
        ("flashinfer-cubin", FI, "connection refused",
         "verified on https://pypi.org/simple up to 0.6.11"),
        ("flashinfer-jit-cache", CU129, "timed out after 10 s", "")]
    assert got.not_verified == [
        ("flashinfer-jit-cache", "no CUDA-variant index could be read "
                                 "(https://flashinfer.ai/whl/cu129)")]
    assert got.hints == ["flashinfer-cubin is not on PyPI after 0.6.13; FlashInfer publishes it "
                         "on https://flashinfer.ai/whl"]
    assert got.found_on["flashinfer-cubin"] == PYPI


def test_a_package_missing_from_an_index_it_left_gets_the_hint() -> None:
    """FlashInfer's index not in use (an empty mirror setting): cubin 0.6.14 is on none."""
    t = target()
    model = build_model(MEMBERS, builtin_data("flashinfer"), pypi=PYPI, base="", configured={},
                        config_source="pinbump.toml", decls=(), variants=("cu129",))
    got = plan(Indexes(layout()), t, model=model)
    assert got.lead_target == "0.6.11"
    assert rejected(got)[(LEAD, "0.6.14")] == (
        "flashinfer-cubin 0.6.14 is not published on https://pypi.org/simple")
    assert got.hints == ["flashinfer-cubin is not on PyPI after 0.6.13; FlashInfer publishes it "
                         "on https://flashinfer.ai/whl"]
    assert got.not_verified == [("flashinfer-jit-cache", "flashinfer-jit-cache: not found on "
                                 "https://pypi.org/simple (HTTP 404); set its index in "
                                 "[tool.pinbump.index] to check it")]


def test_a_variant_package_with_no_variant_to_check_is_not_verified() -> None:
    t = target()
    model = replace(model_of(t), variants=())
    got = plan(Indexes(layout()), t, model=model)
    assert got.lead_target == "0.6.14"
    assert got.not_verified == [("flashinfer-jit-cache", "no CUDA variant to check")]


def test_no_index_of_the_lead_answering_is_the_index_error() -> None:
    with pytest.raises(IndexError_) as err:
        run(Indexes(layout(), down={PYPI: "HTTP 503"}))
    assert str(err.value) == "https://pypi.org/simple: HTTP 503"
    policy = Policy(package_index={LEAD: (PYPI, "https://mirror.example/simple")})
    t = target()
    model = build_model(MEMBERS, builtin_data("flashinfer"), pypi=PYPI, base=None,
                        configured=policy.package_index, config_source="pinbump.toml",
                        decls=t.indexes, variants=t.cuda_variants)
    with pytest.raises(IndexError_) as err:
        plan(Indexes(layout(), down={PYPI: "HTTP 503", "https://mirror.example/simple":
                                     "connection refused"}), t, policy, model=model)
    assert str(err.value) == (
        "flashinfer-python: no index could be read: https://pypi.org/simple (HTTP 503); "
        "https://mirror.example/simple (connection refused)")


def test_a_pinned_package_no_index_knows_is_an_error_naming_them_all() -> None:
    pages = layout()
    del pages[PYPI]["flashinfer-cubin"], pages[FI]["flashinfer-cubin"]
    with pytest.raises(UnknownPackage) as err:
        run(Indexes(pages))
    assert str(err.value) == (
        "flashinfer-cubin: not found on https://pypi.org/simple, https://flashinfer.ai/whl "
        "(HTTP 404); check the name or set its index in [tool.pinbump.index]")
    del pages[PYPI][LEAD]
    with pytest.raises(UnknownPackage) as err:
        run(Indexes(pages))
    assert str(err.value) == "flashinfer-python: not found on https://pypi.org/simple (HTTP 404)"


def test_a_lockstep_package_the_target_does_not_pin_is_optional() -> None:
    """No jit-cache pin and no CUDA variant of its own: checked on the default variants and
    reported, never blocking."""
    t = target(jit=False)
    got = run(Indexes(layout(**{f"{CU130}:flashinfer-jit-cache": [jit("0.6.11", "cu130")]})), t)
    assert got.lead_target == "0.6.14"
    assert got.not_verified == [
        ("flashinfer-jit-cache", "flashinfer-jit-cache 0.6.14+cu130 is not published on "
                                 "https://flashinfer.ai/whl/cu130; optional here (not pinned)")]
    # once it is published the note is gone
    assert run(Indexes(layout()), t).not_verified == []


def test_a_lockstep_package_only_a_literal_pins_is_not_verified_when_no_index_has_it() -> None:
    pages = layout()
    del pages[PYPI]["flashinfer-cubin"], pages[FI]["flashinfer-cubin"]
    t = tree(requirements_txt="flashinfer-python==0.6.8.post1\n",
             pyproject_toml='[project]\nrequires-python = ">=3.10"\n',
             docker__Dockerfile="ARG FLASHINFER_CUBIN_VERSION=0.6.8.post1\n")
    got = plan(Indexes(pages), t, model=model_of(t, ("cu129",)))
    assert got.lead_target == "0.6.14"
    assert dict(got.not_verified)["flashinfer-cubin"] == (
        "flashinfer-cubin: not found on https://pypi.org/simple, https://flashinfer.ai/whl "
        "(HTTP 404); set its index in [tool.pinbump.index] to check it")
    assert changes(got)["flashinfer-cubin"] == ("==0.6.8.post1", "==0.6.14")
    assert next(c.reason for c in got.changes if c.package == "flashinfer-cubin") == \
        "moves with flashinfer-python 0.6.14 (not verified: see below)"


# -- the 0.7 shim and its provider wheels ---------------------------------------------------
SM90, SM100 = "flashinfer-jit-cache-sm90", "flashinfer-jit-cache-sm100"


def shim(*requires: str, provider: dict[str, list[R]] | None = None) -> Indexes:
    pages = layout(**{f"{PYPI}:{LEAD}": [R("0.6.8.post1"), R("0.6.11"), R("0.7.0")],
                      f"{FI}:flashinfer-cubin": [R("0.6.11"), R("0.7.0")],
                      f"{CU129}:flashinfer-jit-cache": [jit("0.6.8.post1", "cu129"),
                                                        jit("0.6.11", "cu129"),
                                                        jit("0.7.0", "cu129", *requires)]})
    pages[CU129].update(provider if provider is not None else {
        SM90: [jit("0.7.0", "cu129")], SM100: [jit("0.7.0", "cu129")]})
    return Indexes(pages)


FULL = ("flashinfer-jit-cache-sm90==0.7.0+cu129", "flashinfer-jit-cache-sm100==0.7.0+cu129",
        "nvidia-cuda-runtime>=12")


@pytest.mark.parametrize(("requires", "provider", "reason"), [
    (FULL, None, None),
    (("flashinfer-jit-cache-sm90>=0.7.0",), None,
     "flashinfer-jit-cache 0.7.0+cu129: provider flashinfer-jit-cache-sm90 is required as "
     ">=0.7.0, not at the shim's full version 0.7.0+cu129"),
    (("flashinfer-jit-cache-sm90",), None,
     "flashinfer-jit-cache 0.7.0+cu129: provider flashinfer-jit-cache-sm90 is required as any, "
     "not at the shim's full version 0.7.0+cu129"),
    (("flashinfer-jit-cache-sm90==0.7.0",), None,
     "flashinfer-jit-cache 0.7.0+cu129: provider flashinfer-jit-cache-sm90 is required as "
     "==0.7.0, not at the shim's full version 0.7.0+cu129"),
    (FULL, {SM90: [jit("0.7.0", "cu129")]},
     "flashinfer-jit-cache 0.7.0+cu129: provider flashinfer-jit-cache-sm100: "
     "flashinfer-jit-cache-sm100: not found on https://flashinfer.ai/whl/cu129 (HTTP 404)"),
    (FULL, {SM90: [jit("0.7.0", "cu129")], SM100: [jit("0.6.99", "cu129")]},
     "flashinfer-jit-cache 0.7.0+cu129: provider flashinfer-jit-cache-sm100 0.7.0+cu129 is not "
     "published on https://flashinfer.ai/whl/cu129"),
    (FULL, {SM90: [jit("0.7.0", "cu129")], SM100: [R("0.7.0+cu129", tags=(X86,))]},
     "flashinfer-jit-cache 0.7.0+cu129: provider flashinfer-jit-cache-sm100 0.7.0+cu129 has no "
     "wheel for Linux aarch64"),
    # a provider only x86-64 installs needs only the x86-64 wheel
    (("flashinfer-jit-cache-sm90==0.7.0+cu129; platform_machine == 'x86_64'",),
     {SM90: [R("0.7.0+cu129", tags=(X86,))]}, None),
    # a provider for another system is not looked at
    (("flashinfer-jit-cache-sm90==0.7.0+cu129; sys_platform == 'win32'",), {}, None),
])
def test_the_shims_providers_must_exist_at_its_full_version(
        requires: tuple[str, ...], provider: dict[str, list[R]] | None, reason: str | None
) -> None:
    got = run(shim(*requires, provider=provider))
    if reason is None:
        assert got.lead_target == "0.7.0"
        assert changes(got)["flashinfer-jit-cache"] == ("==0.6.8.post1+cu129", "==0.7.0+cu129")
    else:
        assert got.lead_target == "0.6.11"
        assert rejected(got)[(LEAD, "0.7.0")] == reason


def test_a_provider_index_that_fails_names_the_provider() -> None:
    source = shim(*FULL)

    class Failing(Indexes):
        def releases_on(self, package, index):  # type: ignore[no-untyped-def]
            if package == SM100:
                raise IndexError_(f"{index.url}: HTTP 500")
            return super().releases_on(package, index)

    got = run(Failing(source.pages))
    assert rejected(got)[(LEAD, "0.7.0")] == (
        "flashinfer-jit-cache 0.7.0+cu129: provider flashinfer-jit-cache-sm100: "
        "https://flashinfer.ai/whl/cu129: HTTP 500")


def test_rejections_carry_the_day_the_lead_version_was_uploaded() -> None:
    when = NOW - timedelta(days=20)
    pages = layout(**{f"{PYPI}:{LEAD}": [R("0.6.8.post1"), R("0.6.11"),
                                          R("0.6.14", uploaded=when)],
                      f"{FI}:flashinfer-cubin": [R("0.6.11")]})
    got = run(Indexes(pages))
    (r,) = [r for r in got.rejected if (r.package, r.version) == (LEAD, "0.6.14")]
    assert r.uploaded == when
    assert isinstance(r.uploaded, datetime)


@pytest.mark.parametrize("how", ["uv source", "pinbump.toml index"])
def test_a_lockstep_package_the_target_points_at_an_index_is_used_not_optional(how: str) -> None:
    """No jit-cache pin, but the target routes it to FlashInfer's cu130 index (a uv source) or
    the config gives it an index: the target installs it, so a missing build blocks."""
    cu130 = [jit("0.6.11", "cu130")]
    files = {"requirements.txt": "flashinfer-python==0.6.8.post1\nflashinfer-cubin==0.6.8.post1\n"
                                 "nvidia-cutlass-dsl==4.4.2\n",
             "pyproject.toml": '[project]\nname = "x"\nrequires-python = ">=3.10"\n'}
    policy = None
    if how == "uv source":
        files["pyproject.toml"] += ('[[tool.uv.index]]\nname = "fi"\nurl = "' + CU130 + '"\n'
                                    'explicit = true\n[tool.uv.sources]\n'
                                    'flashinfer-jit-cache = { index = "fi" }\n')
    else:
        policy = Policy(package_index={"flashinfer-jit-cache": (CU130,)})
    t = tree(**{k.replace("/", "__").replace(".", "_"): v for k, v in files.items()})
    model = build_model(MEMBERS, builtin_data("flashinfer"), pypi=PYPI, base=None,
                        configured=policy.package_index if policy else {},
                        config_source="pinbump.toml", decls=t.indexes, variants=("cu130",))
    got = plan(Indexes(layout(**{f"{CU130}:flashinfer-jit-cache": cu130})), t, policy,
               model=model)
    assert got.lead_target == "0.6.11"
    assert rejected(got)[(LEAD, "0.6.14")] == (
        "flashinfer-jit-cache 0.6.14+cu130 is not published on https://flashinfer.ai/whl/cu130")


@pytest.mark.parametrize("current", [jit("0.6.8.post1", "cu129", yanked="bad build"),
                                     R("0.6.8.post1+cu129", tags=(X86,))])
def test_the_current_variant_build_is_kept_when_nothing_newer_is_complete(current: R) -> None:
    rels = [jit("0.6.7", "cu129"), current]
    pages = layout(**{f"{CU129}:flashinfer-jit-cache": rels,
                      f"{PYPI}:{LEAD}": [R("0.6.7"), R("0.6.8.post1"), R("0.6.11")]})
    got = run(Indexes(pages))
    assert got.lead_target == "0.6.8.post1"
    assert "flashinfer-jit-cache" not in changes(got)
    assert rejected(got)[(LEAD, "0.6.11")] == (
        "flashinfer-jit-cache 0.6.11+cu129 is not published on https://flashinfer.ai/whl/cu129")
