"""Where discovery finds a pin, and where it must not look: table-driven over in-memory trees
(``find_pins`` is pure: relative path -> text in, a ``Target`` out).

Each row is a realistic fragment of a target (SGLang's and vLLM's own shapes: Dockerfile ARGs
tied by their use, CI scripts, ``docker/versions.json``, requirement trees with ``-r``/``-c``,
setup.cfg lists) and the exact pins, lines, index declarations and skipped files it gives.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.core.config import BUILTIN_GROUPS
from bot.core.discovery import (
    Target,
    file_kind,
    find_pins,
    includes_of,
    parse_pyproject,
    parse_requirements,
    pin_files,
    read_pyproject,
    read_requirements,
    skipped_dir,
    tied_package,
)
from bot.errors import InputError

NAMES = set(BUILTIN_GROUPS["flashinfer"].members)
LEAD = "flashinfer-python"


def scan(files: dict[str, str], **kw: object) -> Target:
    return find_pins(Path("/t"), files, NAMES, **kw)  # type: ignore[arg-type]


REQUIREMENT_SECTIONS = ("setup.py", "setup.cfg", "project.", "dependency-groups.")


def pins(target: Target) -> list[tuple[str, str, str, str]]:
    """(where, package, version as written, section) of every pin, in discovery order.

    A pin read from a requirement string is a "requirement" pin; one read from a bare version
    (an ARG default, a shell variable, a JSON value, a clone's branch, a VCS ref) is a
    "literal" pin whose requirement is ``package==<that version>``."""
    out = []
    for p in target.pins:
        if p.section == "requirements" or p.section.startswith(REQUIREMENT_SECTIONS):
            assert (p.kind, p.literal) == ("requirement", ""), p
            out.append((p.where, p.package, str(p.current), p.section))
        else:
            assert p.kind == "literal" and p.requirement == f"{p.package}=={p.literal}", p
            out.append((p.where, p.package, p.literal, p.section))
    return out


def indexes(target: Target) -> list[tuple[str, str, str, list[str]]]:
    return [(d.where, d.option, d.url, sorted(d.packages)) for d in target.indexes]


# -- which files are read, and as what -------------------------------------------------------
@pytest.mark.parametrize(("path", "kind"), [
    ("pyproject.toml", "pyproject"),
    ("python/pyproject_other.toml", "pyproject"),
    ("pyproject.toml.bak", None),
    ("requirements.txt", "requirements"),
    ("requirements-gpu.txt", "requirements"),
    ("constraints-cuda.txt", "requirements"),
    ("requirements/cuda.txt", "requirements"),
    ("requirements/gpu/nightly.txt", "requirements"),
    ("docs/notes.txt", None),
    ("requirements.in", "requirements"),
    ("dev.in", "requirements"),
    ("bot/version.py.in", None),
    ("setup.py", "setup-py"),
    ("tools/setup.py", "setup-py"),
    ("setup.cfg", "setup-cfg"),
    ("Dockerfile", "dockerfile"),
    ("docker/Dockerfile.nightly_torch", "dockerfile"),
    ("docker/cuda.Dockerfile", "dockerfile"),
    ("docker/rocm.dockerfile", "dockerfile"),
    ("dockerfile", None),
    ("scripts/ci/install.sh", "shell"),
    ("scripts/ci/install.bash", "shell"),
    ("docker/versions.json", "json"),
    ("PKG-INFO", None),
    ("pkg/PKG-INFO", None),
    ("README.md", None),
    ("setup.cfg.orig", None),
])
def test_file_kinds(path: str, kind: str | None) -> None:
    assert file_kind(path) == kind


@pytest.mark.parametrize(("name", "skipped"), [
    *[(d, True) for d in (".git", ".hg", ".venv", "venv", "node_modules", "__pycache__",
                          "build", "dist", "site-packages", ".tox", ".nox", ".mypy_cache",
                          ".pytest_cache", ".ruff_cache")],
    (".github", True),  # hidden folders
    ("flashinfer_python.egg-info", True),
    ("docker", False), ("requirements", False), ("python", False), ("builds", False),
    ("egg-info-notes", False), ("distro", False),
])
def test_vendored_generated_and_hidden_folders_are_skipped(name: str, skipped: bool) -> None:
    assert skipped_dir(name) is skipped


def test_pin_files_keeps_order_and_kinds_and_skips_by_any_folder() -> None:
    paths = ["requirements.txt", "a/b/.venv/c/requirements.txt", "python/pyproject.toml",
             "docker/Dockerfile", "x/dist/pyproject.toml", "x/pkg.egg-info/requires.txt",
             "requirements/dev.txt"]
    assert pin_files(paths) == ["requirements.txt", "python/pyproject.toml",
                                "requirements/dev.txt"]
    assert pin_files(paths, ("dockerfile",)) == ["docker/Dockerfile"]
    # the file's own name is not a folder: a file named like a skipped folder is read
    assert pin_files(["build/requirements.txt", "dist.txt", "requirements-build.txt"]) == [
        "requirements-build.txt"]


def test_a_tree_of_every_kind_finds_each_pin_once() -> None:
    pin = "flashinfer-python==0.6.8.post1\n"
    target = scan({
        "python/pyproject.toml": '[project]\ndependencies = ["flashinfer-python==0.6.8.post1"]\n',
        "requirements.txt": pin,
        ".venv/lib/requirements.txt": pin, "build/requirements.txt": pin,
        "pkg.egg-info/requires.txt": pin, "pkg/PKG-INFO": "Requires-Dist: " + pin,
        ".github/requirements.txt": pin, "node_modules/x/Dockerfile": "ARG FLASHINFER_VERSION=1\n",
        "docs/index.md": pin, "notes.txt": pin,
    })
    assert [p.where for p in target.pins] == ["python/pyproject.toml:2", "requirements.txt:1"]


# -- requirements files ----------------------------------------------------------------------
REQUIREMENT_ROWS = [
    # (text, [(line, package, version, frozen prefix)])
    ("flashinfer-python==0.6.11\n", [(1, LEAD, "0.6.11", "")]),
    ("  flashinfer_cubin == 0.6.11   # pinned with the lead\n",
     [(1, "flashinfer-cubin", "0.6.11", "")]),
    ("# flashinfer-python==0.6.1 (a comment)\nflashinfer-python>=0.6.8\n",
     [(2, LEAD, "0.6.8", "")]),
    ("flashinfer-python==0.6.8 \\\n  --hash=sha256:" + "a" * 64 + " \\\n  --hash=sha256:"
     + "b" * 64 + "\nquack-kernels>=0.3\n",
     [(1, LEAD, "0.6.8", "hash-pinned (--hash): regenerate the hashes, e.g. pip-compile "
                         "--generate-hashes"), (4, "quack-kernels", "0.3", "")]),
    ("flashinfer-python==0.6.8 --hash sha256:" + "a" * 64 + "\n",
     [(1, LEAD, "0.6.8", "hash-pinned")]),
    ("flashinfer-python===0.6.8.post1\n", [(1, LEAD, "0.6.8.post1", "arbitrary-equality pin "
                                                                     "(===): edit it by hand")]),
    # an option after the requirement is not part of it
    ("nvidia-cutlass-dsl==4.4.2 --config-settings editable_mode=compat\n",
     [(1, "nvidia-cutlass-dsl", "4.4.2", "")]),
    # a continued requirement, and a dangling continuation at the end of the file
    ("quack-kernels \\\n  >=0.3.0\nnvidia-cutlass-dsl==4.4.2 \\\n",
     [(1, "quack-kernels", "0.3.0", ""), (3, "nvidia-cutlass-dsl", "4.4.2", "")]),
    ("numpy\ntorch==2.9\nflashinfer-python-extras==1.0\n", []),
    ("-e git+https://github.com/flashinfer-ai/flashinfer@v0.6.8.post1#egg=flashinfer-python\n",
     [(1, LEAD, "0.6.8.post1", "")]),
    ("--editable=git+https://github.com/flashinfer-ai/flashinfer@0.6.9#egg=Flashinfer_Python\n",
     [(1, LEAD, "0.6.9", "")]),
    ("--editable git+https://github.com/flashinfer-ai/flashinfer@v0.6.9#egg=flashinfer-python"
     "&subdirectory=python\n", [(1, LEAD, "0.6.9", "")]),
    # a branch, not a version; another project; no egg: nothing
    ("-e git+https://github.com/flashinfer-ai/flashinfer@main#egg=flashinfer-python\n", []),
    ("-e git+https://github.com/flashinfer-ai/flashinfer@v1.x#egg=flashinfer-python\n"
     "quack-kernels>=0.3\n", [(2, "quack-kernels", "0.3", "")]),
    ("-e git+https://github.com/flashinfer-ai/flashinfer@v0.6.9#egg=flashinfer-python\n"
     "quack-kernels>=0.3\n", [(1, LEAD, "0.6.9", ""), (2, "quack-kernels", "0.3", "")]),
    ("-e git+https://github.com/x/torch@v2.9.0#egg=torch\n", []),
    ("-e git+https://github.com/flashinfer-ai/flashinfer@v0.6.9\n", []),
    ("-e ./python\n", []),
    ("--pre\n-r base.txt\n--index-url\nflashinfer-python==0.6.8  # comment #egg=x\n",
     [(4, LEAD, "0.6.8", "")]),
]


@pytest.mark.parametrize(("text", "expected"), REQUIREMENT_ROWS)
def test_requirement_lines(text: str, expected: list[tuple[int, str, str, str]]) -> None:
    found = parse_requirements(text, "requirements/cuda.txt", NAMES)
    assert [(p.line, p.package, str(p.current)) for p in found] == [e[:3] for e in expected]
    for pin, (*_, frozen) in zip(found, expected, strict=True):
        assert pin.file == "requirements/cuda.txt"
        if frozen:
            assert pin.frozen.startswith(frozen)
        else:
            assert pin.frozen == ""


def test_a_vcs_ref_is_a_literal_pin_on_the_ref() -> None:
    (pin,) = parse_requirements(
        "-e git+https://github.com/flashinfer-ai/flashinfer@v0.6.8.post1#egg=Flashinfer_Python\n",
        "requirements.txt", NAMES)
    assert (pin.package, pin.requirement, pin.kind, pin.literal, pin.section) == (
        LEAD, "flashinfer-python==0.6.8.post1", "literal", "0.6.8.post1",
        "requirements (VCS ref)")


@pytest.mark.parametrize(("text", "indexes", "includes"), [
    ("-i https://a.example/simple\n--index-url=https://b.example/simple\n"
     "--extra-index-url https://flashinfer.ai/whl/cu129\n-f https://flashinfer.ai/whl/f.html\n"
     "--find-links=./wheels\n",
     [(1, "--index-url", "https://a.example/simple"),
      (2, "--index-url", "https://b.example/simple"),
      (3, "--extra-index-url", "https://flashinfer.ai/whl/cu129"),
      (4, "--find-links", "https://flashinfer.ai/whl/f.html"), (5, "--find-links", "./wheels")],
     []),
    ("-r base.txt\n-c ../constraints.txt\n--requirement common.in\n--constraint=pins.txt\n"
     "-rshort.txt\n",
     [], [(1, "base.txt"), (2, "../constraints.txt"), (3, "common.in"), (4, "pins.txt"),
          (5, "short.txt")]),
    # an option without a value, or one pinbump does not read, is neither
    ("--index-url\n-r\n--pre\n--trusted-host flashinfer.ai\n-e ./x\n", [], []),
])
def test_index_options_and_included_files(text: str, indexes: list[tuple[int, str, str]],
                                          includes: list[tuple[int, str]]) -> None:
    found = read_requirements(text, "requirements.txt", NAMES)
    assert found.indexes == indexes
    assert found.includes == includes
    assert found.pins == []


def test_included_files_are_relative_to_the_including_file_and_stay_inside_the_tree() -> None:
    files = {
        "requirements/gpu/cuda.txt": "-r ../common.txt\n-c ../../pins/extra.lst\n"
                                     "-r ../../../outside.txt\n-r /etc/passwd\n",
        "requirements.txt": "-r ./requirements/./dev.in\n",
        "docs/requirements-notes.md": "-r docs.txt\n",
    }
    assert includes_of(files, NAMES) == {"requirements/common.txt", "pins/extra.lst",
                                         "requirements/dev.in"}


def test_included_files_are_read_as_requirements_whatever_their_name() -> None:
    target = scan({
        "requirements/cuda.txt": "-r common.txt\n-c ../pins/extra.lst\n-r missing.txt\n"
                                 "-c ../pins/absent.lst\n"
                                 "--extra-index-url https://flashinfer.ai/whl/cu129\n"
                                 "flashinfer-python==0.6.8.post1\n",
        "requirements/common.txt": "nvidia-cutlass-dsl==4.4.2\n",
        "pins/extra.lst": "quack-kernels>=0.3.0\n",
        "pins/unrelated.lst": "flashinfer-cubin==0.6.8.post1\n",
    })
    assert pins(target) == [
        ("requirements/cuda.txt:6", LEAD, "0.6.8.post1", "requirements"),
        ("requirements/common.txt:1", "nvidia-cutlass-dsl", "4.4.2", "requirements"),
        ("pins/extra.lst:1", "quack-kernels", "0.3.0", "requirements"),
    ]
    # the file's index serves its own pins and those of the files it includes (one install)
    assert indexes(target) == [("requirements/cuda.txt:5", "--extra-index-url",
                                "https://flashinfer.ai/whl/cu129",
                                [LEAD, "nvidia-cutlass-dsl", "quack-kernels"])]
    assert target.skipped == (("pins/absent.lst", "named by -r/-c but not found"),
                              ("requirements/missing.txt", "named by -r/-c but not found"))
    assert target.root == Path("/t")


def test_an_index_serves_only_its_own_file_family() -> None:
    target = scan({
        "requirements/cuda.txt": "--extra-index-url https://flashinfer.ai/whl/cu129\n"
                                 "flashinfer-python==0.6.8.post1\n",
        "requirements/rocm.txt": "-i https://rocm.example/simple\nnvidia-cutlass-dsl==4.4.2\n",
    })
    assert indexes(target) == [
        ("requirements/cuda.txt:1", "--extra-index-url", "https://flashinfer.ai/whl/cu129",
         [LEAD]),
        ("requirements/rocm.txt:1", "--index-url", "https://rocm.example/simple",
         ["nvidia-cutlass-dsl"])]


def test_extra_files_named_in_the_config_are_read_as_requirements() -> None:
    target = scan({"deploy/gpu.pins": "flashinfer-python==0.6.8.post1\n",
                   "deploy/other.pins": "flashinfer-python==0.6.1\n"},
                  also=["deploy/gpu.pins", "deploy/absent.pins"])
    assert pins(target) == [("deploy/gpu.pins:1", LEAD, "0.6.8.post1", "requirements")]
    assert target.skipped == (("deploy/absent.pins", "named by -r/-c but not found"),)


# -- files that could hold a pin and were not read -------------------------------------------
def test_undecodable_pin_files_are_an_error_or_listed_as_not_read() -> None:
    with pytest.raises(InputError) as err:
        scan({}, undecodable={"requirements.txt": "invalid start byte at 3"})
    assert str(err.value) == "requirements.txt: not UTF-8 text (invalid start byte at 3)"
    with pytest.raises(InputError, match=r"^python/pyproject.toml: not UTF-8 text \(x\)$"):
        scan({}, undecodable={"python/pyproject.toml": "x"})
    target = scan({"requirements.txt": "flashinfer-python==0.6.8\n"},
                  undecodable={"docker/Dockerfile": "byte 0xff", "ci/run.sh": "byte 0xfe",
                               "logo.png": "binary"},
                  skipped=[("docker/versions.json", "over 2 MB")])
    assert target.skipped == (
        ("ci/run.sh", "not UTF-8 text (byte 0xfe)"),
        ("docker/Dockerfile", "not UTF-8 text (byte 0xff)"),
        ("docker/versions.json", "over 2 MB"),
    )


# -- Dockerfiles and CI scripts ---------------------------------------------------------------
DOCKERFILE = """\
ARG CUDA_VERSION=12.9.1
ARG BASE_CUDA=13.0
ARG FLASHINFER_VERSION='v0.6.8.post1'
ARG FI_CUBIN=0.6.9
ARG CUTLASS_DSL_VERSION="4.4.2"
ARG QUACK_KERNELS_VERSION=latest
ARG PYTHON_VERSION=3.12
ARG MOONCAKE_VERSION=0.3.5
ARG FLASHINFER_JIT_CACHE_VERSION
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu22.04
# RUN pip install flashinfer-python==0.1.0
RUN pip install \\
      flashinfer-cubin==${FI_CUBIN} \\
      --extra-index-url https://flashinfer.ai/whl/cu129 \\
    && pip install nvidia-cutlass-dsl==4.4.2 --index-url https://pypi.example/simple ; \\
    python -m pip install 'quack-kernels>=0.3.0' torch==2.9.0
RUN echo flashinfer-python==0.6.1 > /notes.txt
RUN git clone -b v0.6.8.post1 https://github.com/flashinfer-ai/flashinfer.git
RUN git clone --branch=v0.6.9 https://github.com/other/thing.git
RUN git clone --branch main https://github.com/flashinfer-ai/flashinfer
"""


def test_dockerfile_args_tied_by_use_or_name_run_pins_and_git_clone() -> None:
    target = scan({"docker/Dockerfile": DOCKERFILE})
    assert pins(target) == [
        ("docker/Dockerfile:15", "nvidia-cutlass-dsl", "4.4.2", "dockerfile"),
        ("docker/Dockerfile:16", "quack-kernels", "0.3.0", "dockerfile"),
        ("docker/Dockerfile:18", LEAD, "0.6.8.post1", "dockerfile (git clone --branch)"),
        ("docker/Dockerfile:3", LEAD, "0.6.8.post1", "dockerfile ARG FLASHINFER_VERSION"),
        ("docker/Dockerfile:4", "flashinfer-cubin", "0.6.9", "dockerfile ARG FI_CUBIN"),
        ("docker/Dockerfile:5", "nvidia-cutlass-dsl", "4.4.2",
         "dockerfile ARG CUTLASS_DSL_VERSION"),
    ]
    assert [(p.kind, p.requirement) for p in target.pins][3] == (
        "literal", "flashinfer-python==0.6.8.post1")
    assert target.cuda_variants == ("cu129",)  # only the ARG named CUDA_VERSION
    assert indexes(target) == [
        ("docker/Dockerfile:14", "--extra-index-url", "https://flashinfer.ai/whl/cu129",
         ["flashinfer-cubin"]),
        ("docker/Dockerfile:15", "--index-url", "https://pypi.example/simple",
         ["nvidia-cutlass-dsl"])]


def test_cuda_variants_of_every_dockerfile_once_in_order() -> None:
    target = scan({"docker/Dockerfile.cu13": "ARG CUDA_VERSION=13.0.1\n",
                   "docker/Dockerfile": "arg cuda_version=12.9\n",
                   "docker/Dockerfile.cu129": "ARG CUDA_VERSION=12.9.1\nARG CUDA_VERSION=x\n"})
    assert target.cuda_variants == ("cu130", "cu129")  # in the order the files come
    assert target.pins == ()


def test_an_arg_feeding_several_installs_pins_each_package() -> None:
    target = scan({"Dockerfile": "ARG FLASHINFER_VERSION=0.6.8.post1\n"
                                 "RUN pip install flashinfer-python==${FLASHINFER_VERSION} "
                                 "flashinfer-cubin==$FLASHINFER_VERSION\n"
                                 "RUN pip install flashinfer-jit-cache==${FLASHINFER_VERSION} "
                                 "--extra-index-url https://flashinfer.ai/whl/cu129\n"})
    assert pins(target) == [
        ("Dockerfile:1", "flashinfer-cubin", "0.6.8.post1", "dockerfile ARG FLASHINFER_VERSION"),
        ("Dockerfile:1", "flashinfer-jit-cache", "0.6.8.post1",
         "dockerfile ARG FLASHINFER_VERSION"),
        ("Dockerfile:1", LEAD, "0.6.8.post1", "dockerfile ARG FLASHINFER_VERSION")]
    assert indexes(target) == [("Dockerfile:3", "--extra-index-url",
                                "https://flashinfer.ai/whl/cu129", ["flashinfer-jit-cache"])]


def test_an_index_option_of_a_command_installing_nothing_of_the_group_is_not_ours() -> None:
    target = scan({"Dockerfile": "RUN pip install torch --index-url https://download.example/"
                                 "whl/cu129 && pip install flashinfer-python==0.6.8\n"})
    assert indexes(target) == []
    assert pins(target) == [("Dockerfile:1", LEAD, "0.6.8", "dockerfile")]


SCRIPT = """\
#!/bin/bash
set -euo pipefail
export FLASHINFER_VERSION=0.6.8.post1
readonly CUTLASS_DSL_VERSION="v4.4.2"
declare -x FI='0.6.9'
PYTHON_VERSION=3.12
FLASHINFER_CUBIN_VERSION=$FLASHINFER_VERSION
QUACK_KERNELS_VERSION=0.3.0  # with the lead
# FLASHINFER_JIT_CACHE_VERSION=0.1.0
pip install flashinfer-cubin==${FI} --extra-index-url=https://flashinfer.ai/whl/
python -m pip install nvidia-cutlass-dsl==${CUTLASS_DSL_VERSION} -i https://pypi.example/simple
uv pip install "flashinfer-jit-cache==0.6.8.post1+cu129" -f https://flashinfer.ai/whl/f.html
"""


def test_ci_script_assignments_and_install_lines() -> None:
    target = scan({"scripts/ci/cuda/install.sh": SCRIPT})
    assert pins(target) == [
        ("scripts/ci/cuda/install.sh:12", "flashinfer-jit-cache", "0.6.8.post1+cu129", "shell"),
        ("scripts/ci/cuda/install.sh:3", LEAD, "0.6.8.post1", "shell FLASHINFER_VERSION"),
        ("scripts/ci/cuda/install.sh:4", "nvidia-cutlass-dsl", "4.4.2",
         "shell CUTLASS_DSL_VERSION"),
        ("scripts/ci/cuda/install.sh:5", "flashinfer-cubin", "0.6.9", "shell FI"),
        ("scripts/ci/cuda/install.sh:8", "quack-kernels", "0.3.0", "shell QUACK_KERNELS_VERSION"),
    ]
    assert indexes(target) == [
        ("scripts/ci/cuda/install.sh:10", "--extra-index-url", "https://flashinfer.ai/whl/",
         ["flashinfer-cubin"]),
        ("scripts/ci/cuda/install.sh:11", "--index-url", "https://pypi.example/simple",
         ["nvidia-cutlass-dsl"]),
        ("scripts/ci/cuda/install.sh:12", "--find-links", "https://flashinfer.ai/whl/f.html",
         ["flashinfer-jit-cache"])]


def test_a_script_variable_pins_what_that_script_installs_with_it() -> None:
    """Two scripts use FLASHINFER_VERSION for different packages: each script's assignment
    pins what that script installs; a Dockerfile ARG of the same name pins its own; an unused
    one pins what its name says."""
    target = scan({
        "docker/Dockerfile": "ARG FLASHINFER_VERSION=0.6.8\n"
                             "RUN pip install flashinfer-python==${FLASHINFER_VERSION}\n",
        "ci/a.sh": "FLASHINFER_VERSION=0.6.8\n"
                   "pip install flashinfer-cubin==${FLASHINFER_VERSION}\n",
        "ci/c.sh": "FLASHINFER_VERSION=0.6.7\n",
    })
    assert [(p.where, p.package) for p in target.pins] == [
        ("docker/Dockerfile:1", LEAD),
        ("ci/a.sh:1", "flashinfer-cubin"),
        ("ci/c.sh:1", LEAD),
    ]


# -- versions JSON ---------------------------------------------------------------------------
VERSIONS_JSON = """\
{
  "variable": {
    "FLASHINFER_VERSION": {
      "default": "v0.6.8.post1"
    },
    "CUTLASS_DSL_VERSION": "4.4.2",
    "QUACK_KERNELS_VERSION": {"default": "0.3.0"},
    "PYTHON_VERSION": {"default": "3.12"},
    "FLASHINFER_CUBIN_VERSION": "latest",
    "FLASHINFER_JIT_CACHE_VERSION": {
      "description": "no default here",
      "type": "string"
    },
    "FI": "0.6.9"
  }
}
"""


def test_versions_json_values_under_arg_names() -> None:
    target = scan({"docker/versions.json": VERSIONS_JSON})
    assert pins(target) == [
        ("docker/versions.json:4", LEAD, "0.6.8.post1", "json FLASHINFER_VERSION"),
        ("docker/versions.json:6", "nvidia-cutlass-dsl", "4.4.2", "json CUTLASS_DSL_VERSION"),
        ("docker/versions.json:7", "quack-kernels", "0.3.0", "json QUACK_KERNELS_VERSION"),
    ]


def test_versions_json_keys_tied_by_a_dockerfiles_use() -> None:
    target = scan({"docker/Dockerfile": "ARG FI\nRUN pip install flashinfer-cubin==${FI}\n",
                   "docker/versions.json": VERSIONS_JSON})
    assert ("docker/versions.json:14", "flashinfer-cubin", "0.6.9", "json FI") in pins(target)
    # a JSON file that names no ARG and no *_VERSION is not looked into
    assert scan({"package.json": '{"FI": "0.6.9", "flashinfer": "0.6.8"}\n'}).pins == ()
    assert [p.where for p in scan({"docker/Dockerfile": "RUN pip install flashinfer-cubin==$FI\n",
                                   "v.json": '{"FI": "0.6.9"}'}).pins] == ["v.json:1"]


def test_a_default_too_far_below_its_key_is_not_taken() -> None:
    far = '{"FLASHINFER_VERSION": {\n' + '  "a": 1,\n' * 7 + '  "default": "0.6.8"\n}}\n'
    near = '{"FLASHINFER_VERSION": {\n' + '  "a": 1,\n' * 6 + '  "default": "0.6.8"\n}}\n'
    closed = '{"FLASHINFER_VERSION": {"a": 1},\n "X": {"default": "0.6.8"}}\n'
    assert scan({"v.json": far}).pins == ()
    assert [p.where for p in scan({"v.json": near}).pins] == ["v.json:8"]
    assert scan({"v.json": closed}).pins == ()
    # the default is looked for below the key, never above it
    above = ('{"CUDA_VERSION": {"default": "12.9.1"},\n "FLASHINFER_VERSION": {\n'
             '   "default": "0.6.8.post1"}}\n')
    assert pins(scan({"docker/versions.json": above})) == [
        ("docker/versions.json:3", LEAD, "0.6.8.post1", "json FLASHINFER_VERSION")]


def test_only_json_naming_an_arg_or_a_version_variable_is_read() -> None:
    assert scan({"config.json": '{"FLASHINFERVERSION": "0.6.8"}\n'}).pins == ()
    assert pins(scan({"config.json": '{"FLASHINFERVERSION": "0.6.8", "X_VERSION": 1}\n'})) == [
        ("config.json:1", LEAD, "0.6.8", "json FLASHINFERVERSION")]


# -- setup.py and setup.cfg -------------------------------------------------------------------
def test_setup_py_literal_requirement_strings() -> None:
    text = ('from setuptools import setup\n\nsetup(\n    name="flashinfer-python",\n'
            '    version="0.6.8",\n'
            '    install_requires=[\n        "flashinfer-python==0.6.8.post1",\n'
            '        "torch",\n        " Quack_Kernels>=0.3",\n    ],\n'
            '    extras_require={"gpu": ["flashinfer-cubin==0.6.8.post1"]},\n'
            '    description="""flashinfer-cubin==0.1\nmore""",\n'
            '    long_description="-flashinfer-cubin==0.2",\n)\n')
    target = scan({"setup.py": text})
    assert pins(target) == [("setup.py:7", LEAD, "0.6.8.post1", "setup.py"),
                            ("setup.py:9", "quack-kernels", "0.3", "setup.py"),
                            ("setup.py:11", "flashinfer-cubin", "0.6.8.post1", "setup.py")]
    assert scan({"setup.py": "setup(install_requires=['flashinfer-python==0.6.8'\n"}).pins == ()


def test_setup_cfg_requirement_lines() -> None:
    text = ("[metadata]\nname = sglang\nversion = 0.6.8\n\n[options]\n"
            "install_requires =\n    nvidia-cutlass-dsl==4.4.2  # keep\n    requests\n"
            "    flashinfer-python==not a version\n"
            "[options.extras_require]\nq = quack-kernels>=0.3.0\n"
            "gpu =flashinfer-cubin==0.6.8.post1\n")
    target = scan({"sub/setup.cfg": text})
    assert pins(target) == [
        ("sub/setup.cfg:7", "nvidia-cutlass-dsl", "4.4.2", "setup.cfg"),
        ("sub/setup.cfg:11", "quack-kernels", "0.3.0", "setup.cfg"),
        ("sub/setup.cfg:12", "flashinfer-cubin", "0.6.8.post1", "setup.cfg")]


# -- pyproject ----------------------------------------------------------------------------------
def test_pyproject_lines_for_every_quoting_and_repeats() -> None:
    text = ("[project]\nname = 'x'\nrequires-python = '>=3.10'\ndependencies = [\n"
            "  'flashinfer-python==0.6.8',\n  \"flashinfer-cubin==0.6.8\",\n"
            "  '''nvidia-cutlass-dsl==4.4.2''',\n]\n"
            "[project.optional-dependencies]\na = ['flashinfer-python==0.6.8']\n"
            "b = ['flashinfer-python==0.6.8']\n"
            "[dependency-groups]\nc = ['flashinfer-python==0.6.8', 'quack-kernels>=0.3']\n")
    toml = parse_pyproject(text, "python/pyproject.toml", NAMES)
    assert [(p.line, p.package, p.section) for p in toml.pins] == [
        (5, LEAD, "project.dependencies"), (6, "flashinfer-cubin", "project.dependencies"),
        (7, "nvidia-cutlass-dsl", "project.dependencies"),
        (10, LEAD, "project.optional-dependencies.a"),
        (11, LEAD, "project.optional-dependencies.b"),
        (13, LEAD, "dependency-groups.c"), (13, "quack-kernels", "dependency-groups.c")]
    assert toml.requires_python == ">=3.10"


@pytest.mark.parametrize(("text", "requires_python", "config"), [
    ('[project]\nrequires-python = ">=3.9"\n[tool.pinbump]\nmin-release-age = 7\n', ">=3.9",
     {"min-release-age": 7}),
    ("[project]\nrequires-python = 3\n", None, None),
    ('[tool.other]\nx = 1\n', None, None),
    ('[tool.pinbump.index]\nflashinfer-cubin = "https://flashinfer.ai/whl"\n', None,
     {"index": {"flashinfer-cubin": "https://flashinfer.ai/whl"}}),
])
def test_requires_python_and_tool_config(text: str, requires_python: str | None,
                                         config: dict[str, object] | None) -> None:
    toml = parse_pyproject(text, "pyproject.toml", NAMES)
    assert toml.requires_python == requires_python
    assert toml.tool_config == config
    if config and "index" in config:  # plain data, not the parser's objects
        assert type(toml.tool_config["index"]) is dict  # type: ignore[index]
    assert scan({"pyproject.toml": text}).tomls[0].tool_config == config


@pytest.mark.parametrize(("text", "message"), [
    ('[project]\ndependencies = [\n  "x",\n  "y"\n  "z"\n]\n',
     "pyproject.toml:5: malformed TOML: Unexpected character: '\"' (column 2)"),
    ('[project.optional-dependencies]\nsrt = 1.5\n',
     "pyproject.toml:2: [project.optional-dependencies.srt] must be an array of requirement "
     "strings, got a number"),
    ('[project.optional-dependencies]\nsrt = true\n',
     "pyproject.toml:2: [project.optional-dependencies.srt] must be an array of requirement "
     "strings, got a boolean"),
    ("[project]\n'dependencies' = 3\n",
     "pyproject.toml:2: [project.dependencies] must be an array of requirement strings, got an "
     "integer"),
    ('[project]\nname = "x"\n\n  [project.optional-dependencies]\n  a = [["flashinfer"]]\n',
     "pyproject.toml:5: [project.optional-dependencies.a] must hold requirement strings, got "
     "an array ['flashinfer']"),
    ('[project]\ndependencies = [{name = "' + "f" * 80 + '"}]\n',
     "pyproject.toml:2: [project.dependencies] must hold requirement strings, got a table "
     "{'name': '" + "f" * 47 + "..."),
    ('[project]\ndependencies = ["flashinfer_python[cu13]=0.6.8"]\n',
     "pyproject.toml:2: invalid requirement 'flashinfer_python[cu13]=0.6.8': Expected "),
    ('[project]\ndependencies = ["Flashinfer.Python @ "]\n',
     "pyproject.toml:2: invalid requirement 'Flashinfer.Python @ ': Expected "),
])
def test_pyproject_errors_are_one_line_naming_file_and_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_pyproject(text, "pyproject.toml", NAMES)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_invalid_requirements_of_other_projects_are_ignored() -> None:
    text = '[project]\ndependencies = ["torch=2.9", "flashinfer-python==0.6.8", "==1", ""]\n'
    toml = parse_pyproject(text, "pyproject.toml", NAMES)
    assert [(p.line, p.package) for p in toml.pins] == [(2, LEAD)]


UV = """\
[project]
name = "x"
dependencies = ["flashinfer-python==0.6.8.post1", "flashinfer-cubin==0.6.8.post1"]

[[tool.uv.index]]
name = "flashinfer-cu130"
url = "https://flashinfer.ai/whl/cu130"
explicit = true

[[tool.uv.index]]
url = 'https://mirror.example/simple'
default = true

[[tool.uv.index]]
name = "extra"
url = "https://extra.example/simple"

[[tool.uv.index]]
url = "https://second.example/simple"

[[tool.uv.index]]
name = "nightly"
url = 'https://flashinfer.ai/whl/nightly/cu130'
explicit = true

[[tool.uv.index]]
name = "broken"

[tool.uv.sources]
flashinfer-cubin = { index = "flashinfer-cu130" }
Flashinfer_JIT_Cache = [{ index = "flashinfer-cu130", marker = "sys_platform == 'linux'" },
                        { index = "unknown" }, "not a table"]
torch = { git = "https://github.com/pytorch/pytorch" }
quack-kernels = { index = "nightly" }
"""


def test_uv_indexes_and_sources() -> None:
    target = scan({"python/pyproject.toml": UV})
    assert indexes(target) == [
        ("python/pyproject.toml:7", "uv", "https://flashinfer.ai/whl/cu130",
         ["flashinfer-cubin"]),
        ("python/pyproject.toml:7", "uv", "https://flashinfer.ai/whl/cu130",
         ["flashinfer-jit-cache"]),
        ("python/pyproject.toml:23", "uv", "https://flashinfer.ai/whl/nightly/cu130",
         ["quack-kernels"]),
        ("python/pyproject.toml:11", "uv-default", "https://mirror.example/simple",
         ["flashinfer-cubin", LEAD]),
        ("python/pyproject.toml:16", "--extra-index-url", "https://extra.example/simple",
         ["flashinfer-cubin", LEAD]),
        ("python/pyproject.toml:19", "--extra-index-url", "https://second.example/simple",
         ["flashinfer-cubin", LEAD]),
    ]


@pytest.mark.parametrize("tool", [
    "[tool]\nuv = 3\n", "[tool.uv]\nsources = 3\n", "[tool.uv]\nindex = []\n",
    '[tool.uv]\nindex = ["https://x.example/simple"]\n',
    '[tool.uv.sources]\nflashinfer-cubin = { index = "x" }\n', "tool = 1\n"])
def test_uv_without_a_usable_index_declares_nothing(tool: str) -> None:
    text = '[project]\ndependencies = ["flashinfer-python==0.6.8"]\n' if not \
        tool.startswith("tool =") else ""
    assert scan({"pyproject.toml": text + tool}).indexes == ()


# -- version variables --------------------------------------------------------------------
@pytest.mark.parametrize(("variable", "package"), [
    ("FLASHINFER_VERSION", LEAD),
    ("flashinfer_version", LEAD),
    ("FLASHINFERVERSION", LEAD),
    ("FLASHINFER_PYTHON_VERSION", LEAD),
    ("FLASHINFER_CUBIN_VERSION", "flashinfer-cubin"),
    ("FLASHINFER_JIT_CACHE_VERSION", "flashinfer-jit-cache"),
    ("JIT_CACHE_VERSION", "flashinfer-jit-cache"),
    ("CUTLASS_DSL_VERSION", "nvidia-cutlass-dsl"),
    ("NVIDIA_CUTLASS_DSL_VERSION", "nvidia-cutlass-dsl"),
    ("QUACK_KERNELS_VERSION", "quack-kernels"),
    ("PYTHON_VERSION", None),  # not flashinfer-python's
    ("CUBIN_VERSION", None),  # one word: too vague
    ("CUDA_VERSION", None),
    ("VERSION", None),
    ("_VERSION", None),
    ("FLASHINFER_VERSIONS", None),
    ("FLASHINFER", None),
    ("TORCH_VERSION", None),
])
def test_which_package_a_version_variable_names(variable: str, package: str | None) -> None:
    assert tied_package(variable, NAMES, LEAD) == package


def test_an_ambiguous_variable_names_no_package() -> None:
    members = ["acme-core", "acme-gpu-kernels", "other-gpu-kernels"]
    assert tied_package("GPU_KERNELS_VERSION", members, "acme-core") is None
    assert tied_package("ACME_GPU_KERNELS_VERSION", members, "acme-core") == "acme-gpu-kernels"
    assert tied_package("ACME_VERSION", members, "acme-core") == "acme-core"
    assert tied_package("OTHER_GPU_KERNELS_VERSION", iter(members), "acme-core") == \
        "other-gpu-kernels"


# -- the target ---------------------------------------------------------------------------------
def test_requires_python_comes_from_the_pyproject_that_pins_the_package() -> None:
    target = scan({
        "a/pyproject.toml": '[project]\nrequires-python = ">=3.9"\n',
        "b/pyproject.toml": '[project]\nrequires-python = ">=3.11"\n'
                            'dependencies = ["flashinfer-python==0.6.8"]\n',
        "c/pyproject.toml": '[project]\ndependencies = ["flashinfer-cubin==0.6.8"]\n',
    })
    assert target.requires_python(LEAD) == ">=3.11"
    assert target.requires_python("flashinfer-cubin") == ">=3.9"  # its own has none: any
    assert target.requires_python("quack-kernels") == ">=3.9"
    assert scan({"requirements.txt": "flashinfer-python==0.6.8\n"}).requires_python(LEAD) is None
    assert [p.where for p in target.pins_of(LEAD)] == ["b/pyproject.toml:3"]


def test_the_lead_defaults_to_flashinfer_python_else_the_first_name() -> None:
    clone = "RUN git clone --branch v1.2.3 https://github.com/acme/acme.git\n" \
            "RUN git clone --branch v0.6.8 https://github.com/flashinfer-ai/flashinfer.git\n"
    assert [(p.package, p.line) for p in scan({"Dockerfile": clone}).pins] == [(LEAD, 2)]
    other = find_pins(Path("/t"), {"Dockerfile": clone}, {"zeta", "acme"})
    assert [(p.package, p.line) for p in other.pins] == [("acme", 1)]
    named = find_pins(Path("/t"), {"Dockerfile": clone}, {"zeta", "acme"}, lead="zeta")
    assert named.pins == ()


def test_continued_run_lines_give_each_pin_and_index_its_own_line() -> None:
    target = scan({"docker/Dockerfile": (
        "FROM base AS build\n"
        "ARG FLASHINFER_CUBIN_VERSION\n"
        "ARG FLASHINFER_VERSION=0.6.8.post1\n"
        "RUN pip uninstall -y flashinfer-cubin && \\\n"
        "    pip install flashinfer-cubin==0.6.8.post1\n"
        "RUN pip install torch==2.9.0 --extra-index-url https://download.pytorch.org/whl/cu129 "
        "&& \\\n"
        "    pip install flashinfer-jit-cache==0.6.8.post1 "
        "--extra-index-url https://flashinfer.ai/whl/cu129\n"
        "RUN git clone \\\n"
        "      --branch v0.6.8.post1 https://github.com/flashinfer-ai/flashinfer.git\n")})
    assert pins(target) == [
        ("docker/Dockerfile:5", "flashinfer-cubin", "0.6.8.post1", "dockerfile"),
        ("docker/Dockerfile:7", "flashinfer-jit-cache", "0.6.8.post1", "dockerfile"),
        ("docker/Dockerfile:9", LEAD, "0.6.8.post1", "dockerfile (git clone --branch)"),
        ("docker/Dockerfile:3", LEAD, "0.6.8.post1", "dockerfile ARG FLASHINFER_VERSION"),
    ]
    assert indexes(target) == [("docker/Dockerfile:7", "--extra-index-url",
                                "https://flashinfer.ai/whl/cu129", ["flashinfer-jit-cache"])]


def test_an_arg_pins_only_what_its_own_dockerfile_installs_with_it() -> None:
    target = scan({
        "docker/Dockerfile": "ARG FI=0.6.9\nRUN pip install flashinfer-cubin==${FI}\n",
        "docker/Dockerfile.rocm": "ARG FI=0.6.1\nRUN echo $FI\n",
    })
    assert pins(target) == [("docker/Dockerfile:1", "flashinfer-cubin", "0.6.9",
                             "dockerfile ARG FI")]


def test_an_install_line_naming_other_projects_first() -> None:
    target = scan({"ci.sh": "pip install torch==2.9.0 numpy==2.1 flashinfer-python==0.6.8.post1\n"})
    assert pins(target) == [("ci.sh:1", LEAD, "0.6.8.post1", "shell")]


def test_already_parsed_pyprojects_are_not_parsed_again() -> None:
    """The workspace parses each pyproject once; discovery uses that parse, never the text."""
    parsed = read_pyproject('[project]\ndependencies = ["flashinfer-python==0.6.8"]\n',
                            "pyproject.toml")
    target = find_pins(Path("/t"), {"pyproject.toml": "not TOML ["}, NAMES, pyprojects=[parsed])
    assert [p.where for p in target.pins] == ["pyproject.toml:2"]


def test_an_include_outside_the_target_is_listed_not_dropped() -> None:
    """-r/-c naming a file above the root or by an absolute path is never read, and is
    listed where it is written (a pin there is not bumped: say so); a folder whose name
    starts with two dots is inside the target and read."""
    target = scan({
        "requirements/gpu/cuda.txt": "-r ../../../outside.txt\n-c /etc/passwd\n"
                                     "-r ../../..notes/pins.txt\n",
        "..notes/pins.txt": "flashinfer-python==0.6.8\n",
    })
    assert pins(target) == [("..notes/pins.txt:1", LEAD, "0.6.8", "requirements")]
    assert target.skipped == (
        ("requirements/gpu/cuda.txt:1", "-r/-c names a file outside the target (not read)"),
        ("requirements/gpu/cuda.txt:2", "-r/-c names a file outside the target (not read)"))
