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
    ('[project]\ndependencies = "flashinfer-python"\n', "pyproject.toml: [project.dependencies]"),
])
def test_bad_pyproject_names_file_and_line(text: str, fragment: str) -> None:
    with pytest.raises(InputError) as err:
        parse_pyproject(text, "pyproject.toml", NAMES)
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)


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
