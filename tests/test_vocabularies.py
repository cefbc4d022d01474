"""pinbump's closed vocabularies are enums (``Vocabulary``: each member is its string): those
of the --json outputs hold exactly the words their published JSON Schemas allow, so one cannot
change without the other; every enum member serialises as its word; words read back (config,
the scan cache) become members."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bot.cli import main
from bot.commands.chatops import CommandState
from bot.core.api import ParamKind
from bot.core.bisect import BisectVerdict, Outcome
from bot.core.config import Policy, parse_config
from bot.core.decisions import GateState, RunAction
from bot.core.discovery import file_kind
from bot.core.drift import CallSite, scan_source
from bot.core.models import (
    Channel,
    EditKind,
    FileKind,
    MergeMethod,
    PerfVerdict,
    RebaseWhen,
    Severity,
    SiteKind,
    StatusState,
    Via,
    Vocabulary,
)
from bot.core.resolve import PinMode
from bot.render.jsonout import schema, to_json
from servers import PypiServer
from test_apply import TREE, publish, write_tree

# (schema, path to the property inside it, the enum whose values it lists)
PUBLISHED: list[tuple[str, tuple[str, ...], type[Vocabulary]]] = [
    ("drift", ("items", "properties", "severity"), Severity),
    ("apply", ("properties", "edits", "items", "properties", "kind"), EditKind),
    ("plan", ("properties", "channel"), Channel),
    ("run", ("properties", "action"), RunAction),
    ("gate", ("properties", "state"), GateState),
    ("status", ("properties", "state"), StatusState),
    ("command", ("items", "properties", "state"), CommandState),
    ("bisect", ("properties", "verdict"), BisectVerdict),
    ("bisect", ("properties", "steps", "items", "properties", "outcome"), Outcome),
    ("gpu-gate", ("properties", "perf", "items", "properties", "verdict"), PerfVerdict),
]
# Where an output carries only some words of a vocabulary: a GPU job's status is its result.
SOME_OF: list[tuple[str, tuple[str, ...], tuple[Vocabulary, ...]]] = [
    ("report-gpu", ("properties", "statuses", "items", "properties", "state"),
     (StatusState.SUCCESS, StatusState.FAILURE)),
    ("report-gpu", ("properties", "channel"), (Channel.NIGHTLY,)),  # absent: a PR's gate
]
# Enums over object keys, not values: which side of the A/B comparison a table is about
# ("baseline", "candidate"); those names are also the gate's option and field names.
KEYS = {("gpu-gate", ("properties", "tests", "propertyNames")),
        ("gpu-gate", ("properties", "artifacts", "propertyNames"))}


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


@pytest.mark.parametrize(("name", "path", "members"), SOME_OF, ids=[n for n, _, _ in SOME_OF])
def test_partial_vocabularies_are_exactly_the_schema_enum(
        name: str, path: tuple[str, ...], members: tuple[Vocabulary, ...]) -> None:
    assert sorted(m.value for m in members) == sorted(_at(schema(name), path)["enum"])


def test_a_gpu_job_status_is_one_of_those() -> None:
    from bot.core.gpu_result import read_result

    raws = [None, b"x" * (2 << 20), b"\xff", b"[]", b'{"passed": "yes"}', b'{"passed": true}',
            b'{"passed": false}']
    states = {read_result("sm90", raw).state for raw in raws}
    assert states == set(SOME_OF[0][2])


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
    assert found == {(name, path) for name, path, _ in [*PUBLISHED, *SOME_OF]} | KEYS


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


def _every_vocabulary() -> list[type[Vocabulary]]:
    """Every Vocabulary of the modules that hold them."""
    homes = {"bot.core.models", "bot.core.api", "bot.core.decisions", "bot.core.bisect",
             "bot.core.resolve", "bot.commands.chatops"}
    found: list[type[Vocabulary]] = []
    todo = list(Vocabulary.__subclasses__())
    while todo:
        cls = todo.pop()
        found += [cls] if cls.__module__ in homes else []
        todo += cls.__subclasses__()
    assert ParamKind in found and RunAction in found and PinMode in found
    return sorted(found, key=lambda c: c.__name__)


@pytest.mark.parametrize("vocabulary", _every_vocabulary(), ids=lambda v: v.__name__)
def test_every_vocabulary_is_closed_and_distinct(vocabulary: type[Vocabulary]) -> None:
    values = [m.value for m in vocabulary]
    assert values and all(isinstance(v, str) for v in values)
    assert len(set(values)) == len(values)  # no alias hides a word
    for member in vocabulary:
        assert vocabulary(member.value) is member and str(member) == member.value


@pytest.mark.parametrize(("path", "kind"), [
    ("python/pyproject.toml", FileKind.PYPROJECT),
    ("requirements/cuda.txt", FileKind.REQUIREMENTS),
    ("requirements-dev.in", FileKind.REQUIREMENTS),
    ("setup.py", FileKind.SETUP_PY),
    ("setup.cfg", FileKind.SETUP_CFG),
    ("docker/Dockerfile.nightly_torch", FileKind.DOCKERFILE),
    ("docker/versions.json", FileKind.JSON),
    ("src/app.py", None),
    ("pkg/PKG-INFO", None),
])
def test_file_kind_is_a_member(path: str, kind: FileKind | None) -> None:
    found = file_kind(path)
    assert found is kind


def test_call_sites_read_back_from_the_scan_cache_hold_members() -> None:
    """The scan cache stores call sites as JSON; read back they hold enum members again."""
    text = ("import kernelpkg\n"
            "kernelpkg.norm.rmsnorm(x)\n"
            "getattr(kernelpkg, 'layernorm')\n")
    sites = scan_source("a.py", text, {"kernelpkg"})
    assert [(s.kind, s.via) for s in sites] == [(SiteKind.CALL, Via.DIRECT),
                                                (SiteKind.REFERENCE, Via.GETATTR)]
    again = [CallSite(**{k: tuple(v) if isinstance(v, list) else v
                         for k, v in json.loads(json.dumps(dataclasses.asdict(s))).items()})
             for s in sites]
    assert again == sites
    assert all(type(s.kind) is SiteKind and type(s.via) is Via for s in again)


@pytest.mark.parametrize(("key", "value", "field", "member"), [
    ("rebase-when", "behind", "rebase_when", RebaseWhen.BEHIND),
    ("rebase-when", "never", "rebase_when", RebaseWhen.NEVER),
    ("merge-method", "rebase", "merge_method", MergeMethod.REBASE),
])
def test_config_words_become_members(key: str, value: str, field: str, member: Vocabulary
                                     ) -> None:
    policy = parse_config({key: value}, "pinbump.toml", Policy())
    assert getattr(policy, field) is member


def test_config_defaults_are_members() -> None:
    policy = Policy()
    assert policy.rebase_when is RebaseWhen.CONFLICTED
    assert policy.merge_method is MergeMethod.SQUASH
    assert policy.channel is Channel.STABLE
