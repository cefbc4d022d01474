"""The index model: built-in data, the target's declarations and the config, per package and
CUDA variant; and the platform/Python check of the install environment."""

from __future__ import annotations

import pytest
from packaging.version import Version

from bot.core.config import builtin_data
from bot.core.environment import Environment
from bot.core.indexmodel import IndexDecl, build_model, cuda_variant, variant_of
from bot.core.models import DistFile

MEMBERS = ("flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache", "nvidia-cutlass-dsl")
PYPI = "https://pypi.org/simple"
FI = "https://flashinfer.ai/whl"


def urls(model: object, package: str) -> list[str]:
    return [r.url for r in model.for_package(package)]  # type: ignore[attr-defined]


def decl(url: str, option: str, *packages: str) -> IndexDecl:
    return IndexDecl(url, option, "requirements/cuda.txt", 3, frozenset(packages))


@pytest.mark.parametrize(("decls", "configured", "base", "package", "expected"), [
    ((), {}, None, "flashinfer-cubin", [PYPI, FI]),
    ((), {}, None, "flashinfer-jit-cache", [f"{FI}/cu129", f"{FI}/cu130"]),
    ((), {}, "", "flashinfer-cubin", [PYPI]),  # FlashInfer's host off
    ((), {}, "http://mirror/fi", "flashinfer-cubin", [PYPI, "http://mirror/fi"]),
    ((decl("https://extra.example/simple", "--extra-index-url", "flashinfer-python"),), {},
     None, "flashinfer-python", [PYPI, "https://extra.example/simple"]),
    ((decl("https://mirror.example/simple", "--index-url", "flashinfer-python"),), {}, None,
     "flashinfer-python", ["https://mirror.example/simple"]),
    ((decl(f"{FI}/cu130", "uv", "flashinfer-cubin"),), {}, None, "flashinfer-cubin",
     [FI, f"{FI}/cu130"]),
    ((decl(f"{FI}/cu$(echo", "--extra-index-url", "flashinfer-jit-cache"),), {}, "http://m",
     "flashinfer-jit-cache", ["http://m/cu129", "http://m/cu130"]),  # the mirror, per variant
    ((), {"flashinfer-jit-cache": ("https://own.example/{variant}",)}, None,
     "flashinfer-jit-cache", ["https://own.example/cu129", "https://own.example/cu130"]),
])
def test_indexes_per_package(decls: tuple[IndexDecl, ...], configured: dict[str, tuple[str]],
                             base: str | None, package: str, expected: list[str]) -> None:
    model = build_model(MEMBERS, builtin_data("flashinfer"), pypi=PYPI, base=base,
                        configured=configured, config_source="pinbump.toml", decls=decls)
    assert urls(model, package) == expected


def test_variants_come_from_the_target_then_the_data() -> None:
    data = builtin_data("flashinfer")
    only = build_model(MEMBERS, data, pypi=PYPI, base=None, configured={}, config_source="x",
                       variants=("cu129",))
    assert urls(only, "flashinfer-jit-cache") == [f"{FI}/cu129"]
    literal = build_model(MEMBERS, data, pypi=PYPI, base=None, configured={},
                          config_source="x",
                          decls=(decl(f"{FI}/cu130", "--index-url", "flashinfer-jit-cache"),))
    assert literal.variants == ("cu130",)
    nightly = build_model(MEMBERS, data, pypi=PYPI, base=None, configured={}, config_source="x",
                          variants=("cu129",), channel="nightly")
    assert urls(nightly, "flashinfer-python") == [f"{FI}/nightly"]
    assert urls(nightly, "flashinfer-jit-cache") == [f"{FI}/nightly/cu129"]
    assert urls(nightly, "nvidia-cutlass-dsl") == [PYPI]  # no nightly index: stable


@pytest.mark.parametrize(("text", "expected"), [
    ("12.9.1", "cu129"), ("13.0", "cu130"), ("13.0.2", "cu130"), ("12", None), ("latest", None)])
def test_cuda_variant(text: str, expected: str | None) -> None:
    assert cuda_variant(text) == expected


@pytest.mark.parametrize(("url", "expected"), [
    (f"{FI}/cu130", (f"{FI}/cu130", "cu130")),
    (f"{FI}/cu$(echo", (f"{FI}/{{variant}}", "*")),
    (f"{FI}/cu${{CU}}", (f"{FI}/{{variant}}", "*")),
    (f"{FI}/", (f"{FI}/", "")),
])
def test_variant_of(url: str, expected: tuple[str, str]) -> None:
    assert variant_of(url) == expected


def wheel(tag: str, requires_python: str | None = None) -> DistFile:
    return DistFile(filename=f"x-1.0-{tag}.whl", url="mem://x", version=Version("1.0"),
                    is_wheel=True, tags=frozenset({tag}), requires_python=requires_python)


def test_every_platform_and_python_needs_a_wheel() -> None:
    env = Environment.for_target(">=3.10,<3.13", platforms=("linux-x86_64", "linux-aarch64"))
    assert env.missing([wheel("py3-none-any")]) == []
    assert env.missing([wheel("cp39-abi3-manylinux_2_28_x86_64")]) == ["Linux aarch64"]
    assert env.missing([wheel("cp310-cp310-manylinux_2_28_x86_64"),
                        wheel("cp310-cp310-manylinux_2_28_aarch64")]) == [
        "Linux x86-64 (Python 3.11, 3.12)", "Linux aarch64 (Python 3.11, 3.12)"]
    assert env.describe() == "Linux x86-64, Linux aarch64, Python 3.10, 3.11, 3.12"


@pytest.mark.parametrize(("name", "provider"), [
    ("flashinfer-jit-cache-sm90a", True), ("flashinfer-jit-cache-sm121a", True),
    ("flashinfer-jit-cache-sm120f", True), ("flashinfer-jit-cache-sm80", True),
    ("flashinfer-jit-cache-sm100a", True), ("flashinfer-jit-cache", False),
    ("flashinfer-jit-cache-cu130", False), ("flashinfer-jit-cache-sm90a-evil", False),
    ("flashinfer-jit-cache-smx", False), ("flashinfer-python", False),
])
def test_jit_cache_providers_are_flashinfers_real_names(name: str, provider: bool) -> None:
    """flashinfer-jit-cache-sm<major><minor>[a|f] (flashinfer-ai/flashinfer#4514, #5096; the
    sources are cited in bot/data/flashinfer.toml); nothing else the shim requires is one."""
    model = build_model(MEMBERS, builtin_data("flashinfer"), pypi=PYPI, base=None,
                        configured={}, config_source="x")
    assert model.is_provider("flashinfer-jit-cache", name) is provider
    assert not model.is_provider("flashinfer-python", name)


def test_a_provider_pattern_that_is_not_a_regex_is_a_config_error() -> None:
    from bot.core.indexmodel import parse_builtin
    from bot.errors import ConfigError

    with pytest.raises(ConfigError, match=r"x\.toml: key 'packages\.a\.providers' is not a "
                                          "regular expression"):
        parse_builtin({"packages": {"a": {"providers": "(sm"}}}, "x.toml")
