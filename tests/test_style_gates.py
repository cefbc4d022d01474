"""The complexity gate holds everywhere: ruff's mccabe check (at most 12 branches) is on for
every linted folder, and nothing switches it off, neither a `noqa` on a function, nor a
file-level `ruff: noqa`, nor a per-file or global ignore in pyproject.toml."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomlkit

ROOT = Path(__file__).resolve().parents[1]
LINTED = ("bot", "tests", "bench", "gpu_tests")
# Spelled apart so that this file holds none of what it looks for (and ruff reads none of it
# as a directive): a noqa comment naming the rule among others or alone, the file-level form
# of it, or a blanket one, each of which silences the complexity check.
RULE = "C9" + "01"
NOQA = "# " + "noqa"
FILE_NOQA = "# ruff" + ": noqa"
SUPPRESSION = re.compile(r"#\s*(?:ruff:\s*)?noqa\b(?::[^\n#]*\bC90\d?\b|(?!:))", re.IGNORECASE)


def python_files() -> list[Path]:
    return sorted(p for folder in LINTED for p in (ROOT / folder).rglob("*.py")
                  if "golden" not in p.relative_to(ROOT).parts)


@pytest.mark.parametrize(("line", "silences"), [
    (f"def f():  {NOQA}: {RULE}", True),
    (f"def f():  {NOQA}: E501, {RULE}", True),
    (f"{FILE_NOQA}: {RULE}", True),
    (f"def f():  {NOQA}", True),
    (FILE_NOQA, True),
    (f"import x  {NOQA}: E402", False),
    ("def f():  # a comment", False),
])
def test_the_scan_knows_each_way_to_silence_the_check(line: str, silences: bool) -> None:
    assert bool(SUPPRESSION.search(line)) is silences


def test_no_function_is_exempt_from_the_complexity_gate() -> None:
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for path in python_files()
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if SUPPRESSION.search(line)]
    assert found == []


def test_pyproject_keeps_the_gate_on_everywhere() -> None:
    lint = tomlkit.parse((ROOT / "pyproject.toml").read_text()).unwrap()["tool"]["ruff"]["lint"]
    assert any(RULE.startswith(rule) for rule in lint["select"])
    assert not any(rule.startswith("C9") or RULE.startswith(rule)
                   for rule in [*lint.get("ignore", []), *lint.get("extend-ignore", [])])
    per_file = {**lint.get("per-file-ignores", {}), **lint.get("extend-per-file-ignores", {})}
    assert {glob: rules for glob, rules in per_file.items()
            if any(r.startswith("C9") or RULE.startswith(r) for r in rules)} == {}
    assert lint["mccabe"]["max-complexity"] == 12


def test_every_function_is_at_most_12_branches() -> None:
    """ruff itself, with every noqa ignored: what the gate would say if one crept in."""
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--select",
                           RULE, "--ignore-noqa", "--output-format", "concise",
                           *LINTED], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
