from __future__ import annotations

from pathlib import Path

import pytest

from bot.adapters.tree import discover
from bot.core.config import BUILTIN_GROUPS
from bot.core.discovery import parse_pyproject, parse_requirements
from bot.errors import InputError

NAMES = set(BUILTIN_GROUPS["flashinfer"].members)

PYPROJECT = '''\
[project]
name = "sglang"
requires-python = ">=3.10"
dependencies = [
  "requests",
  "flashinfer_python==0.6.8.post1", # keep it aligned with jit-cache version in Dockerfile
  'Flashinfer-Cubin == 0.6.8.post1',
  "nvidia-cutlass-dsl==4.4.2 ; platform_machine == 'x86_64'",
]

[project.optional-dependencies]
blackwell = ["flashinfer_python[cu13]==0.6.12", "torch"]

[dependency-groups]
test = [{include-group = "lint"}, "quack-kernels>=0.3.0"]
lint = ["ruff"]
'''


def test_pyproject_pins_sections_spellings_and_lines() -> None:
    toml = parse_pyproject(PYPROJECT, "python/pyproject.toml", NAMES)
    got = [(p.package, p.requirement, p.line, p.section) for p in toml.pins]
    assert got == [
        ("flashinfer-python", "flashinfer_python==0.6.8.post1", 6, "project.dependencies"),
        ("flashinfer-cubin", "Flashinfer-Cubin == 0.6.8.post1", 7, "project.dependencies"),
        ("nvidia-cutlass-dsl", "nvidia-cutlass-dsl==4.4.2 ; platform_machine == 'x86_64'", 8,
         "project.dependencies"),
        ("flashinfer-python", "flashinfer_python[cu13]==0.6.12", 12,
         "project.optional-dependencies.blackwell"),
        ("quack-kernels", "quack-kernels>=0.3.0", 15, "dependency-groups.test"),
    ]
    assert toml.requires_python == ">=3.10"
    assert [str(p.current) for p in toml.pins] == ["0.6.8.post1", "0.6.8.post1", "4.4.2",
                                                    "0.6.12", "0.3.0"]


@pytest.mark.parametrize(("text", "expected"), [
    ("flashinfer-python==0.6.11\n", [("flashinfer-python", 1)]),
    ("# comment\n\n-r base.txt\nflashinfer_cubin==0.6.11  # pinned\n", [("flashinfer-cubin", 4)]),
    ("--index-url https://example.invalid/simple\nnumpy\n", []),
    ("nvidia-cutlass-dsl \\\n  ==4.4.2\nquack-kernels>=0.3\n",
     [("nvidia-cutlass-dsl", 1), ("quack-kernels", 3)]),
    ("flashinfer-python[cu13]==0.6.12; python_version >= '3.10'\n", [("flashinfer-python", 1)]),
])
def test_requirements_files(text: str, expected: list[tuple[str, int]]) -> None:
    pins = parse_requirements(text, "requirements.txt", NAMES)
    assert [(p.package, p.line) for p in pins] == expected


def test_same_literal_twice_gets_both_lines() -> None:
    text = ('[project]\ndependencies = ["flashinfer-python==0.6.8"]\n'
            '[project.optional-dependencies]\nx = [\n  "flashinfer-python==0.6.8",\n]\n')
    toml = parse_pyproject(text, "pyproject.toml", NAMES)
    assert [p.line for p in toml.pins] == [2, 5]


@pytest.mark.parametrize(("text", "fragment"), [
    ('[project]\ndependencies = [\n  "flashinfer-python==0.6.8"\n  "x"\n]\n',
     "pyproject.toml:4: malformed TOML"),
    ('[project\nname = "x"\n', "pyproject.toml:1: malformed TOML"),
    ('[project]\ndependencies = ["flashinfer-python==="]\n',
     "pyproject.toml:2: invalid requirement"),
    ('[project]\ndependencies = "flashinfer-python"\n',
     "pyproject.toml:2: [project.dependencies] must be an array of requirement strings, got a "
     "string"),
    # issue 11, low: wrongly typed optional-dependencies / dependency-groups
    ('[project]\nname = "x"\noptional-dependencies = "flashinfer-python"\n',
     "pyproject.toml:3: [project.optional-dependencies] must be a table of arrays of "
     "requirement strings, got a string"),
    ('[project]\noptional-dependencies = ["flashinfer-python==0.6.8"]\n',
     "pyproject.toml:2: [project.optional-dependencies] must be a table of arrays of "
     "requirement strings, got an array"),
    ('[project.optional-dependencies]\nsrt = "flashinfer-python==0.6.8"\n',
     "pyproject.toml:2: [project.optional-dependencies.srt] must be an array of requirement "
     "strings, got a string"),
    ('[project.optional-dependencies]\nsrt = [1, "flashinfer-python==0.6.8"]\n',
     "pyproject.toml:2: [project.optional-dependencies.srt] must hold requirement strings, got "
     "an integer 1"),
    ('[project.optional-dependencies]\nsrt = [{include-group = "x"}]\n',
     "[project.optional-dependencies.srt] must hold requirement strings, got a table"),
    ("dependency-groups = 3\n",
     "pyproject.toml:1: [dependency-groups] must be a table of arrays of requirement strings, "
     "got an integer"),
    ('[[dependency-groups]]\ntest = ["flashinfer-python"]\n',
     "pyproject.toml:1: [dependency-groups] must be a table of arrays of requirement strings, "
     "got an array"),
    ('[dependency-groups]\ntest = {flashinfer = "0.6.8"}\n',
     "pyproject.toml:2: [dependency-groups.test] must be an array of requirement strings, got "
     "a table"),
    ('[dependency-groups]\ntest = [{include-group = 3}]\n',
     "pyproject.toml:2: [dependency-groups.test] must hold requirement strings, got a table "
     "{'include-group': 3}"),
    ('project = "sglang"\n', "pyproject.toml:1: [project] must be a table, got a string"),
])
def test_bad_pyproject_names_file_and_line(text: str, fragment: str) -> None:
    with pytest.raises(InputError) as err:
        parse_pyproject(text, "pyproject.toml", NAMES)
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)


def test_include_group_is_not_a_pin() -> None:
    text = ('[dependency-groups]\ndev = ["flashinfer-python==0.6.8"]\n'
            'test = [{include-group = "dev"}, "quack-kernels>=0.3"]\n')
    toml = parse_pyproject(text, "pyproject.toml", NAMES)
    assert [(p.package, p.line) for p in toml.pins] == [("flashinfer-python", 2),
                                                         ("quack-kernels", 3)]


def test_discover_walks_pyprojects_and_requirements_and_skips_vendored(tmp_path: Path) -> None:
    (tmp_path / "python").mkdir()
    (tmp_path / "python" / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "python" / "pyproject_other.toml").write_text(
        '[project.optional-dependencies]\nsrt = ["flashinfer-python==0.6.8.post1"]\n')
    (tmp_path / "requirements-gpu.txt").write_text("flashinfer-cubin==0.6.8.post1\n")
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    (tmp_path / ".venv" / "lib" / "pyproject.toml").write_text("this is not toml [")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "requirements.txt").write_text("flashinfer-python==1\n")
    target = discover(tmp_path, NAMES)
    files = sorted({p.where for p in target.pins})
    assert files == ["python/pyproject.toml:12", "python/pyproject.toml:15",
                     "python/pyproject.toml:6", "python/pyproject.toml:7",
                     "python/pyproject.toml:8", "python/pyproject_other.toml:2",
                     "requirements-gpu.txt:1"]
    assert target.requires_python("flashinfer-python") == ">=3.10"


def test_discover_rejects_missing_repo(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a directory"):
        discover(tmp_path / "nope", NAMES)


# -- discovery anywhere ----------------------------------------------------------------------
def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def pins_by_file(target: object) -> set[tuple[str, str, str]]:
    return {(p.file, p.package, str(p.current)) for p in target.pins}  # type: ignore[attr-defined]


def test_requirements_trees_in_constraints_and_includes(tmp_path: Path) -> None:
    repo = write(tmp_path, {
        "requirements/common.txt": "numpy\nnvidia-cutlass-dsl==4.4.2\n",
        "requirements/gpu/cuda.txt": "-r ../common.txt\n-c ../../pins/extra.lst\n"
                                     "flashinfer-python==0.6.8.post1\n",
        "pins/extra.lst": "quack-kernels>=0.3.0\n",
        "requirements/dev.in": "flashinfer-cubin==0.6.8.post1\n",
        "constraints-gpu.txt": "flashinfer-jit-cache==0.6.8.post1+cu129\n",
        "docs/notes.txt": "flashinfer-python==0.1.0 is not a pin (not a requirements file)\n",
    })
    target = discover(repo, NAMES)
    assert pins_by_file(target) == {
        ("requirements/common.txt", "nvidia-cutlass-dsl", "4.4.2"),
        ("requirements/gpu/cuda.txt", "flashinfer-python", "0.6.8.post1"),
        ("pins/extra.lst", "quack-kernels", "0.3.0"),
        ("requirements/dev.in", "flashinfer-cubin", "0.6.8.post1"),
        ("constraints-gpu.txt", "flashinfer-jit-cache", "0.6.8.post1+cu129"),
    }


def test_generated_and_vendored_trees_are_skipped(tmp_path: Path) -> None:
    pin = "flashinfer-python==0.6.8.post1\n"
    repo = write(tmp_path, {
        "requirements.txt": pin,
        "pkg.egg-info/requires.txt": pin, "pkg.egg-info/PKG-INFO": "Requires-Dist: " + pin,
        "build/lib/requirements.txt": pin, "dist/requirements.txt": pin,
        "node_modules/x/requirements.txt": pin, ".venv/lib/requirements.txt": pin,
        "PKG-INFO": "Requires-Dist: " + pin,
    })
    assert pins_by_file(discover(repo, NAMES)) == {
        ("requirements.txt", "flashinfer-python", "0.6.8.post1")}


def test_setup_py_and_setup_cfg_literal_lists(tmp_path: Path) -> None:
    repo = write(tmp_path, {
        "setup.py": 'from setuptools import setup\n\nsetup(\n    name="x",\n'
                    '    install_requires=[\n        "flashinfer-python==0.6.8.post1",\n'
                    '        "torch",\n    ],\n'
                    '    extras_require={"gpu": ["flashinfer-cubin==0.6.8.post1"]},\n)\n',
        "sub/setup.cfg": "[metadata]\nname = y\n\n[options]\ninstall_requires =\n"
                         "    nvidia-cutlass-dsl==4.4.2\n    requests\n"
                         "[options.extras_require]\nq = quack-kernels>=0.3.0\n",
    })
    target = discover(repo, NAMES)
    assert {(p.file, p.line, p.package) for p in target.pins} == {
        ("setup.py", 6, "flashinfer-python"), ("setup.py", 9, "flashinfer-cubin"),
        ("sub/setup.cfg", 6, "nvidia-cutlass-dsl"), ("sub/setup.cfg", 9, "quack-kernels")}


def test_ci_scripts_versions_json_and_git_clone(tmp_path: Path) -> None:
    repo = write(tmp_path, {
        "scripts/ci/install.sh": "export FLASHINFER_VERSION=0.6.8.post1\n"
                                 "PYTHON_VERSION=3.12\n"
                                 "pip install flashinfer-jit-cache==${FLASHINFER_VERSION} "
                                 "--extra-index-url https://flashinfer.ai/whl/cu129\n",
        "docker/versions.json": '{"variable": {"FLASHINFER_VERSION": {"default": '
                                '"0.6.8.post1"}, "CUDA_VERSION": {"default": "12.9.1"}}}\n',
        "docker/Dockerfile.src": "FROM x\nRUN git clone https://github.com/flashinfer-ai/"
                                 "flashinfer.git --branch v0.6.8.post1\n",
        "docker/Dockerfile": "ARG CUDA_VERSION=13.0.1\nARG PYTHON_VERSION=3.12\nFROM x\n",
    })
    target = discover(repo, NAMES)
    got = {(p.file, p.line, p.package, p.kind) for p in target.pins}
    assert got == {
        ("scripts/ci/install.sh", 1, "flashinfer-jit-cache", "literal"),
        ("docker/versions.json", 1, "flashinfer-jit-cache", "literal"),  # tied by use
        ("docker/Dockerfile.src", 2, "flashinfer-python", "literal"),
    }
    assert target.cuda_variants == ("cu130",)
    assert [(d.url, d.packages) for d in target.indexes] == [
        ("https://flashinfer.ai/whl/cu129", frozenset({"flashinfer-jit-cache"}))]


def test_index_declarations_of_requirements_and_uv(tmp_path: Path) -> None:
    repo = write(tmp_path, {
        "requirements/cuda.txt": "-i https://mirror.example/simple\n"
                                 "--find-links https://flashinfer.ai/whl/flat.html\n"
                                 "flashinfer-python==0.6.8.post1\n",
        "pyproject.toml": '[project]\nname = "x"\ndependencies = ["flashinfer-cubin==0.6.8.post1"]'
                          '\n\n[[tool.uv.index]]\nname = "flashinfer"\n'
                          'url = "https://flashinfer.ai/whl/cu130"\nexplicit = true\n\n'
                          '[tool.uv.sources]\nflashinfer-cubin = { index = "flashinfer" }\n',
    })
    target = discover(repo, NAMES)
    assert {(d.option, d.url, d.where, d.packages) for d in target.indexes} == {
        ("--index-url", "https://mirror.example/simple", "requirements/cuda.txt:1",
         frozenset({"flashinfer-python"})),
        ("--find-links", "https://flashinfer.ai/whl/flat.html", "requirements/cuda.txt:2",
         frozenset({"flashinfer-python"})),
        ("uv", "https://flashinfer.ai/whl/cu130", "pyproject.toml:7",
         frozenset({"flashinfer-cubin"})),
    }


@pytest.mark.parametrize(("line", "kind", "frozen"), [
    ("flashinfer-python==0.6.8.post1 --hash=sha256:" + "0" * 64, "requirement",
     "hash-pinned (--hash)"),
    ("flashinfer-python==0.6.8.post1 \\\n    --hash=sha256:" + "1" * 64, "requirement",
     "hash-pinned (--hash)"),
    ("flashinfer-python===0.6.8.post1", "requirement", "arbitrary-equality pin (===)"),
    ("-e git+https://github.com/flashinfer-ai/flashinfer@v0.6.8.post1#egg=flashinfer-python",
     "literal", ""),
])
def test_hash_vcs_and_arbitrary_equality_pins_are_valid(line: str, kind: str,
                                                        frozen: str) -> None:
    pins = parse_requirements(line + "\n", "requirements.txt", NAMES)
    assert [(p.package, str(p.current), p.kind) for p in pins] == [
        ("flashinfer-python", "0.6.8.post1", kind)]
    assert pins[0].frozen.startswith(frozen)
