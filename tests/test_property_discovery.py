"""Property tests: whatever a target's files hold (requirement lines, TOML, Dockerfiles, CI
scripts, versions JSON, setup.cfg, pinbump.toml), loading the workspace (config, discovery of
every pin, the install environment) ends in a clean result or a ``PinbumpError``, never
another exception.

(Index pages, versions and metadata through the index client and the resolver:
``test_property_index.py``.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tomlkit
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bot.core.workspace import HeldFiles, Workspace, build_workspace
from bot.errors import PinbumpError

BOUNDED = settings(max_examples=150, deadline=2000, database=None,
                   suppress_health_check=[HealthCheck.too_slow])
ROOT = Path("/nonexistent/target")  # discovery is pure: nothing is read from here

NAMES = st.sampled_from(["flashinfer-python", "flashinfer_python", "Flashinfer.Python",
                         "flashinfer-cubin", "flashinfer-jit-cache", "nvidia-cutlass-dsl",
                         "quack-kernels", "torch", "x"])
VERSIONS = st.sampled_from(["0.6.8.post1", "0.6.11", "4.4.2", "0.6.11+cu130", "1" * 600,
                            "", "v0.6.8", "0.6.*", "latest"]) | st.text(max_size=8)
OPS = st.sampled_from(["==", ">=", "<=", "~=", "!=", "===", "<", ">", "", " == ", "=="])
EXTRAS = st.sampled_from(["", "[cu13]", "[", "[a,b]", "[]"])
MARKERS = st.sampled_from(["", "; python_version >= '3.10'", "; platform_machine == 'x86_64'",
                           "; extra == 'x'", "; (", ";"])
OPTIONS = st.sampled_from([
    "--extra-index-url https://flashinfer.ai/whl/", "-i https://pypi.org/simple",
    "--index-url", "--find-links ./wheels", "-r other.txt", "-c constraints.txt", "-r",
    "-e git+https://github.com/flashinfer-ai/flashinfer@v0.6.8.post1#egg=flashinfer-python",
    "--hash=sha256:" + "0" * 64, "\\", "# FlashInfer should be updated together", "--pre",
    "--extra-index-url=-r/etc/passwd", "--index-url https://u:p@idx.example/simple"])


@st.composite
def requirement_lines(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 3)) == 0:
        return draw(OPTIONS | st.text(max_size=30))
    line = (draw(NAMES) + draw(EXTRAS) + draw(OPS) + draw(VERSIONS) + draw(MARKERS))
    if draw(st.booleans()):
        line += " --hash=sha256:" + "a" * 64
    return line


REQUIREMENTS = st.lists(requirement_lines(), max_size=6).map("\n".join)
TOML_VALUES = st.recursive(
    st.booleans() | st.integers(-5, 5) | st.text(max_size=10) | requirement_lines(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["dependencies", "optional-dependencies", "dependency-groups",
                         "requires-python", "name", "index", "sources", "include-group",
                         "x"]), inner, max_size=3),
    max_leaves=10)


@st.composite
def pyprojects(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 5)) == 0:
        return draw(st.text(max_size=60))  # not TOML at all, or barely
    project = draw(st.dictionaries(st.sampled_from(
        ["dependencies", "optional-dependencies", "requires-python", "name"]), TOML_VALUES,
        max_size=3))
    doc: dict[str, Any] = {"project": project}
    if draw(st.booleans()):
        doc["dependency-groups"] = draw(TOML_VALUES)
    if draw(st.booleans()):
        doc["tool"] = {"uv": {"index": draw(TOML_VALUES), "sources": draw(TOML_VALUES)},
                       "pinbump": draw(CONFIGS)}
    try:
        return tomlkit.dumps(doc)
    except Exception:  # tomlkit refuses some generated shapes (e.g. mixed arrays): keep it TOML
        return tomlkit.dumps({"project": {"dependencies": ["flashinfer-python==0.6.8.post1"]}})


CONFIGS = st.dictionaries(st.sampled_from(
    ["group", "index-url", "index", "min-release-age", "platforms", "cuda-variants",
     "known-bad", "cap", "files", "exclude", "runner-labels", "required-checks", "python",
     "allow-prereleases", "dockerfile-args", "strict", "x"]),
    TOML_VALUES, max_size=4)
DOCKERFILES = st.lists(st.sampled_from([
    "ARG FLASHINFER_VERSION=0.6.8.post1", "ARG FLASHINFER_VERSION", "ARG CUDA_VERSION=12.9.1",
    "ARG MOONCAKE_VERSION=4.4.2", "ENV FI=${FLASHINFER_VERSION}",
    "RUN pip install flashinfer-python==${FLASHINFER_VERSION} "
    "--extra-index-url https://flashinfer.ai/whl/cu$(echo $CUDA_VERSION | cut -d. -f1,2 | tr -d .)",
    "RUN git clone --branch v0.6.8.post1 https://github.com/flashinfer-ai/flashinfer",
    "RUN pip install flashinfer-cubin==0.6.8.post1 \\", "  && true", "ARG =", "ARG X=${"])
    | st.text(max_size=30), max_size=6).map("\n".join)
JSONS = st.recursive(st.none() | st.booleans() | st.integers() | VERSIONS,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                         st.sampled_from(["FLASHINFER_VERSION", "default", "x"]), inner,
                         max_size=3), max_leaves=8).map(json.dumps) | st.text(max_size=20)
SHELL = st.lists(st.sampled_from([
    "FLASHINFER_VERSION=0.6.8.post1", "export FLASHINFER_VERSION=0.6.8.post1",
    "pip install flashinfer-cubin==${FLASHINFER_VERSION} --extra-index-url "
    "https://flashinfer.ai/whl/", "pip install 'flashinfer-jit-cache==0.6.8.post1+cu129'"])
    | st.text(max_size=30), max_size=4).map("\n".join)
SETUP_CFG = st.lists(requirement_lines(), max_size=3).map(
    lambda lines: "[options]\ninstall_requires =\n" + "".join(f"    {x}\n" for x in lines))


@st.composite
def trees(draw: st.DrawFn) -> dict[str, str]:
    files = {"python/pyproject.toml": draw(pyprojects())}
    optional = {
        "requirements/cuda.txt": REQUIREMENTS, "requirements/common.in": REQUIREMENTS,
        "constraints.txt": REQUIREMENTS, "docker/Dockerfile": DOCKERFILES,
        "docker/versions.json": JSONS, "scripts/ci/install.sh": SHELL, "setup.cfg": SETUP_CFG,
        "pinbump.toml": CONFIGS.map(lambda c: _toml_or_text(c)),
    }
    for path, strategy in optional.items():
        if draw(st.booleans()):
            files[path] = draw(strategy)
    return files


def _toml_or_text(config: dict[str, Any]) -> str:
    try:
        return tomlkit.dumps(config)
    except Exception:  # a shape tomlkit cannot write: an empty config instead
        return ""


def load(files: dict[str, str]) -> Workspace:
    raw = {path: text.encode("utf-8", "surrogatepass") for path, text in files.items()}
    return build_workspace(ROOT, HeldFiles(raw), {})


@BOUNDED
@given(files=trees())
def test_any_target_tree_loads_cleanly_or_is_a_pinbump_error(files: dict[str, str]) -> None:
    try:
        ws = load(files)
    except PinbumpError as exc:
        message = str(exc)
        assert message and "\n" not in message.strip(), message  # one line
        event("PinbumpError")
        return
    event(f"loaded, {min(len(ws.target.pins), 3)}+ pins")
    for pin in ws.target.pins:  # every pin found names a real place in the tree
        assert pin.file in files


def test_generated_trees_reach_both_outcomes() -> None:
    """The strategies are not vacuous: a known-good tree loads with pins, a known-bad one is a
    PinbumpError (so the property above exercises both branches)."""
    good = load({"python/pyproject.toml": tomlkit.dumps(
        {"project": {"dependencies": ["flashinfer-python==0.6.8.post1"]}}),
        "docker/Dockerfile": "ARG FLASHINFER_VERSION=0.6.8.post1\n"})
    assert any(p.package == "flashinfer-python" for p in good.target.pins)
    try:
        load({"python/pyproject.toml": "[project\n"})
    except PinbumpError as exc:
        assert "python/pyproject.toml" in str(exc)
    else:
        raise AssertionError("malformed TOML must be a PinbumpError")


def test_a_uv_index_that_is_not_an_array_of_tables_is_one_line() -> None:
    """Found by the property above: ``[tool.uv] index = true`` was a TypeError traceback."""
    try:
        load({"python/pyproject.toml": "[project]\n\n[tool.uv]\nindex = true\n"})
    except PinbumpError as exc:
        assert str(exc) == ("python/pyproject.toml: [tool.uv] index must be an array of tables "
                            "([[tool.uv.index]]), got a boolean; fix the file")
    else:
        raise AssertionError("a wrongly typed [tool.uv] index must be a PinbumpError")
