from __future__ import annotations

import pytest

from bot.core.specs import (
    clause_version,
    other_clauses,
    replace_clause,
    split_requirement,
    with_specifier,
)


@pytest.mark.parametrize(("text", "head", "spec", "tail"), [
    ("flashinfer_python==0.6.8.post1", "flashinfer_python", "==0.6.8.post1", ""),
    ("flashinfer_python[cu13]==0.6.12; python_version>='3.10'", "flashinfer_python[cu13]",
     "==0.6.12", "; python_version>='3.10'"),
    ("x >= 1.0, <2 ; extra=='a'", "x ", ">= 1.0, <2", " ; extra=='a'"),
    ("quack-kernels", "quack-kernels", "", ""),
])
def test_split(text: str, head: str, spec: str, tail: str) -> None:
    assert split_requirement(text) == (head, spec, tail)
    assert head + spec + tail == text


@pytest.mark.parametrize(("spec", "op", "new", "expected"), [
    ("==0.6.8.post1", "==", "0.6.11", "==0.6.11"),
    (">= 1.0, <2", ">=", "1.5", ">= 1.5, <2"),
    ("<2, >=1", ">=", "3", "<2, >=3"),
    ("===1.0", "==", "9", "===1.0"),
    (" == 1.0 ,<2", "==", "9", " == 9 ,<2"),
    ("~=1.0", "==", "9", "~=1.0"),
])
def test_replace_clause(spec: str, op: str, new: str, expected: str) -> None:
    assert replace_clause(spec, op, new) == expected


@pytest.mark.parametrize(("spec", "eq", "ge", "rest"), [
    ("==0.6.11", "0.6.11", None, ""),
    (">=0.3.0,<0.5", None, "0.3.0", "<0.5"),
    ("!=4.5.0, >= 4.4", None, "4.4", "!=4.5.0"),
    ("===1.0", None, None, "===1.0"),
])
def test_clauses(spec: str, eq: str | None, ge: str | None, rest: str) -> None:
    assert clause_version(spec, "==") == eq
    assert clause_version(spec, ">=") == ge
    assert other_clauses(spec) == rest


def test_with_specifier_keeps_extras_and_marker() -> None:
    text = "flashinfer_python[cu13] ==0.6.12 ; platform_machine == 'x86_64'"
    assert with_specifier(text, "==0.6.13") == \
        "flashinfer_python[cu13] ==0.6.13 ; platform_machine == 'x86_64'"
