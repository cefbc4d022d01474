"""Text-level helpers for requirement strings: keep everything as written, move one version."""

from __future__ import annotations

import re

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_HEAD = re.compile(rf"^\s*(?P<name>{_NAME})\s*(?P<extras>\[[^\]]*\])?\s*")


def split_requirement(text: str) -> tuple[str, str, str]:
    """("name[extras]" as written with trailing space, specifier as written, "; marker" tail)."""
    m = _HEAD.match(text)
    if not m:
        return text, "", ""
    head = text[: m.end()]
    rest = text[m.end():]
    spec, sep, marker = rest.partition(";")
    tail = (sep + marker) if sep else ""
    # Keep trailing white space of the spec with the tail so "==1.0 ; marker" survives.
    stripped = spec.rstrip()
    return head, stripped, spec[len(stripped):] + tail


def clause_version(spec: str, operator: str) -> str | None:
    """The version of the first ``operator`` clause in a specifier string, as written."""
    for clause in (c.strip() for c in spec.strip("() ").split(",")):
        m = re.fullmatch(r"(===|==|>=|<=|~=|!=|<|>)\s*(\S+)", clause)
        if m and m.group(1) == operator:
            return m.group(2)
    return None


def replace_clause(spec: str, operator: str, new_version: str) -> str:
    """Swap the version of the ``operator`` clause, keeping spacing and the other clauses."""
    pattern = re.compile(rf"(^\s*|[,(]\s*)({re.escape(operator)}\s*)([^\s,)=][^\s,)]*)")
    m = pattern.search(spec)
    return spec[: m.start(3)] + new_version + spec[m.end(3):] if m else spec


def with_specifier(text: str, new_spec: str) -> str:
    head, _, tail = split_requirement(text)
    return f"{head}{new_spec}{tail}"


def other_clauses(spec: str) -> str:
    """The specifier without its ``==X`` and ``>=X`` clauses (user bounds we must respect)."""
    keep = []
    for clause in (c.strip() for c in spec.strip("() ").split(",")):
        if clause and not re.match(r"(==|>=)(?!=)", clause):
            keep.append(clause)
    return ",".join(keep)
