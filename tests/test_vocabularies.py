"""The closed vocabularies of the --json outputs are enums whose values are exactly what the
published JSON Schemas allow: one cannot change without the other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bot.cli import main
from bot.core.decisions import RunAction
from bot.core.models import Channel, EditKind, Severity, Vocabulary
from bot.render.jsonout import schema, to_json
from servers import PypiServer
from test_apply import TREE, publish, write_tree

# (schema, path to the property inside it, the enum whose values it lists)
PUBLISHED: list[tuple[str, tuple[str, ...], type[Vocabulary]]] = [
    ("drift", ("items", "properties", "severity"), Severity),
    ("apply", ("properties", "edits", "items", "properties", "kind"), EditKind),
    ("plan", ("properties", "channel"), Channel),
    ("run", ("properties", "action"), RunAction),
]


def _at(doc: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@pytest.mark.parametrize(("name", "path", "vocabulary"), PUBLISHED,
                         ids=[f"{n}:{v.__name__}" for n, _, v in PUBLISHED])
def test_enum_values_are_exactly_the_schema_enum(name: str, path: tuple[str, ...],
                                                 vocabulary: type[Vocabulary]) -> None:
    allowed = _at(schema(name), path)["enum"]
    values = [member.value for member in vocabulary]
    assert len(allowed) == len(set(allowed)), f"{name}: duplicate enum values"
    assert sorted(values) == sorted(allowed)


def _enums_in(doc: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(doc, dict):
        here = [path] if "enum" in doc else []
        return here + [p for k, v in doc.items() for p in _enums_in(v, (*path, k))]
    if isinstance(doc, list):
        return [p for i, v in enumerate(doc) for p in _enums_in(v, (*path, str(i)))]
    return []


def test_every_schema_enum_has_its_vocabulary() -> None:
    """A new enum in a schema names the Python enum it mirrors in PUBLISHED."""
    from bot.render.jsonout import SCHEMAS

    found = {(name, path) for name in SCHEMAS for path in _enums_in(schema(name))}
    assert found == {(name, path) for name, path, _ in PUBLISHED}


@pytest.mark.parametrize("vocabulary", [v for _, _, v in PUBLISHED])
def test_a_member_is_its_string_in_json_text_and_lookups(vocabulary: type[Vocabulary]) -> None:
    for member in vocabulary:
        word = member.value
        assert member == word and str(member) == word and f"{member}" == word
        assert vocabulary(word) is member
        assert {word: 1}[member] == 1 and {member: 1}[word] == 1
        assert json.loads(to_json({member: member})) == {word: word}
        assert to_json([member], one_line=True) == f'["{word}"]\n'


def test_severities_in_report_order() -> None:
    from bot.core.drift import SEVERITY_ORDER

    assert [s.value for s in sorted(SEVERITY_ORDER, key=SEVERITY_ORDER.__getitem__)] == [
        "breaking", "review", "unverifiable", "notice"]


def test_apply_json_literal_edits_are_published(pypi: PypiServer, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A CI variable and a versions JSON are edited as ``literal``; the schema allows it."""
    publish(pypi)
    repo = write_tree(tmp_path / "repo", {
        **TREE,
        "scripts/ci_install.sh": "FLASHINFER_VERSION=0.6.8.post1\n"
                                 "pip install flashinfer-python==${FLASHINFER_VERSION}\n",
        "docker/versions.json": '{"FLASHINFER_VERSION": {"default": "0.6.8.post1"}}\n'})
    assert main(["apply", "--repo", str(repo), "--index-url", pypi.url,
                 "--min-release-age", "0", "--json", "--dry-run"]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator(schema("apply")).validate(doc)
    kinds = {(e["file"], e["kind"]) for e in doc["edits"]}
    assert ("scripts/ci_install.sh", "literal") in kinds
    assert ("docker/versions.json", "literal") in kinds
    assert {k for _, k in kinds} <= {k.value for k in EditKind}
