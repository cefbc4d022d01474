"""Stub FlashInfer packages and a stub GPU suite for the gate's CPU tests.

The stub ``flashinfer`` finds its kernels the way FlashInfer 0.6 does (``flashinfer/jit/env.py``,
``jit/core.py``): an AOT module ``<name>/<name>.so`` from the ``flashinfer_jit_cache`` package when
it is installed, else it "JIT-builds" ``<workspace>/.cache/flashinfer/<version>/90/cached_ops/
<name>/<name>.so``; cubins from ``flashinfer_cubin/cubins`` when that is installed, else they are
"downloaded" to ``<workspace>/.cache/flashinfer/cubins``. ``aot_layout`` plants a packaging bug:
a loader that looks for AOT modules where the jit-cache package does not put them.
"""

from __future__ import annotations

import json
from pathlib import Path

from servers import StaticIndex
from wheels import build_wheel

FLASHINFER = '''\
import importlib.util
import os
import pathlib

__version__ = "{version}"
_AOT_LAYOUT = "{aot_layout}"


def _workspace():
    base = pathlib.Path(os.environ.get("FLASHINFER_WORKSPACE_BASE", "."))
    return base / ".cache" / "flashinfer"


def load_module(name):
    if importlib.util.find_spec("flashinfer_jit_cache"):
        import flashinfer_jit_cache

        aot = pathlib.Path(flashinfer_jit_cache.get_jit_cache_dir()) / _AOT_LAYOUT.format(
            name=name)
        if aot.exists():
            return aot.read_bytes()
    so = _workspace() / __version__ / "90" / "cached_ops" / name / (name + ".so")
    if not so.exists():
        so.parent.mkdir(parents=True, exist_ok=True)
        so.write_bytes(b"built on the runner")
    return so.read_bytes()


def load_cubin(rel):
    if importlib.util.find_spec("flashinfer_cubin"):
        import flashinfer_cubin

        return (pathlib.Path(flashinfer_cubin.get_cubin_dir()) / rel).read_bytes()
    path = _workspace() / "cubins" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"downloaded")
    return path.read_bytes()
'''

JIT_CACHE = '''\
import pathlib

__version__ = "{version}"


def get_jit_cache_dir():
    return str(pathlib.Path(__file__).parent / "jit_cache")
'''

CUBIN = '''\
import pathlib

__version__ = "{version}"


def get_cubin_dir():
    return str(pathlib.Path(__file__).parent / "cubins")
'''

SUITE_CONFTEST = "import pytest\n"
SUITE_INI = "[pytest]\nmarkers =\n    gpu: needs a GPU\n"
SUITE_TESTS = '''\
import pytest

import flashinfer


@pytest.mark.gpu
def test_norm():
    assert flashinfer.load_module("norm")


@pytest.mark.gpu
def test_fp4():
    assert flashinfer.load_module("fp4_quantization_90")


@pytest.mark.gpu
def test_gemm_cubin():
    assert flashinfer.load_cubin("gemm/kernel_a.cubin")


@pytest.mark.gpu
def test_not_here():
    pytest.skip("needs 2 GPUs of one host, this host has 1")


def test_cpu_self_test():
    raise AssertionError("a CPU self-test must not run in the GPU gate (-m gpu)")
'''


def flashinfer_wheels(directory: Path, version: str, *, aot_layout: str = "{name}/{name}.so",
                      aot: tuple[str, ...] = ("norm",), cubins: tuple[str, ...] = (
                          "gemm/kernel_a.cubin",), variant: str = "cu130") -> list[Path]:
    """flashinfer-python, flashinfer-cubin and flashinfer-jit-cache (``version+variant``)."""
    python = build_wheel(directory, "flashinfer-python", version, files={
        "flashinfer/__init__.py": FLASHINFER.format(version=version, aot_layout=aot_layout)})
    files = {"flashinfer_cubin/__init__.py": CUBIN.format(version=version)}
    files.update({f"flashinfer_cubin/cubins/{c}": "cubin" for c in cubins})
    cubin = build_wheel(directory, "flashinfer-cubin", version, files=files)
    local = f"{version}+{variant}"
    files = {"flashinfer_jit_cache/__init__.py": JIT_CACHE.format(version=local)}
    files.update({f"flashinfer_jit_cache/jit_cache/{m}/{m}.so": "aot module" for m in aot})
    jit = build_wheel(directory, "flashinfer-jit-cache", local, files=files)
    return [python, cubin, jit]


def stub_suite(directory: Path, tests: str = SUITE_TESTS) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "conftest.py").write_text(SUITE_CONFTEST)
    (directory / "pytest.ini").write_text(SUITE_INI)
    (directory / "test_kernels.py").write_text(tests)
    return directory


def simple_index(root: Path, base: str, wheels: list[Path]) -> None:
    """A PEP 503 index in ``root`` (pages linking to ``base``/packages/<file>)."""
    import hashlib
    import shutil

    packages = root / "packages"
    packages.mkdir(parents=True, exist_ok=True)
    by_name: dict[str, list[Path]] = {}
    for wheel in wheels:
        shutil.copy(wheel, packages / wheel.name)
        name = wheel.name.split("-")[0].replace("_", "-").lower()
        by_name.setdefault(name, []).append(wheel)
    for name, files in by_name.items():
        page = root / name
        page.mkdir(parents=True, exist_ok=True)
        links = "".join(
            f'<a href="{base}/packages/{f.name}#sha256='
            f'{hashlib.sha256(f.read_bytes()).hexdigest()}">{f.name}</a>\n' for f in files)
        (page / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>")


def serve_trio(root: Path, base: str) -> None:
    """/pypi: flashinfer-python and flashinfer-cubin; /whl/cu130: flashinfer-jit-cache (and a
    decoy flashinfer-python that must never be installed from there)."""
    tmp = root / "build"
    good = flashinfer_wheels(tmp / "0.6.8.post1", "0.6.8.post1")
    buggy = flashinfer_wheels(tmp / "0.6.11", "0.6.11", aot_layout="aot/{name}.so")
    decoy = flashinfer_wheels(tmp / "decoy", "0.6.11", aot_layout="decoy/{name}.so")
    simple_index(root / "pypi", f"{base}/pypi", [good[0], good[1], buggy[0], buggy[1]])
    simple_index(root / "whl" / "cu130", f"{base}/whl/cu130", [good[2], buggy[2], decoy[0]])


def install_plan(tmp_path: Path, srv: StaticIndex, versions: tuple[str, str]) -> Path:
    """``gpu-gate --install``'s file for the trio ``serve_trio`` serves on ``srv``: baseline
    and candidate at ``versions``, each package from the index it is deployed from."""
    pypi, whl = f"{srv.base}/pypi", f"{srv.base}/whl/cu130"

    def side(version: str) -> list[dict[str, object]]:
        return [{"package": "flashinfer-python", "version": version, "index_urls": [pypi]},
                {"package": "flashinfer-cubin", "version": version, "index_urls": [pypi]},
                {"package": "flashinfer-jit-cache", "version": version, "index_urls": [whl]}]

    plan = tmp_path / "install.json"
    plan.write_text(json.dumps({"baseline": side(versions[0]), "candidate": side(versions[1])}))
    return plan
