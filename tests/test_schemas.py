"""Each --json output validates against its published JSON Schema (bot/schemas)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from bot.cli import main
from bot.render.jsonout import SCHEMAS, schema, to_json
from servers import PypiServer
from test_apply import publish, write_tree
from test_drift import publish as publish_kernel
from test_drift import target_repo


def valid(name: str, text: str) -> object:
    doc = json.loads(text)
    jsonschema.Draft202012Validator(schema(name)).validate(doc)
    return doc


@pytest.mark.parametrize("name", SCHEMAS)
def test_the_schemas_are_valid_and_closed(name: str) -> None:
    doc = schema(name)
    jsonschema.Draft202012Validator.check_schema(doc)
    assert doc["$id"].endswith(f"/{name}.schema.json")
    top = doc if doc["type"] == "object" else doc["items"]
    assert top["additionalProperties"] is False  # a new field must be published


def test_plan_apply_and_pins(pypi: PypiServer, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    repo = write_tree(tmp_path / "repo")
    argv = ["--repo", str(repo), "--index-url", pypi.url, "--min-release-age", "0", "--json"]
    assert main(["plan", *argv]) == 0
    plan = valid("plan", capsys.readouterr().out)
    assert isinstance(plan, dict) and plan["changes"]
    assert main(["apply", *argv]) == 0
    applied = valid("apply", capsys.readouterr().out)
    assert isinstance(applied, dict) and applied["written"] and applied["edits"]
    assert main(["pins", "--repo", str(repo), "--json"]) == 0
    pins = valid("pins", capsys.readouterr().out)
    assert isinstance(pins, dict) and pins["pins"]


def test_drift(pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish_kernel(pypi)
    repo = target_repo(tmp_path / "repo")
    assert main(["drift", "--repo", str(repo), "--index-url", pypi.url, "--from", "1.0",
                 "--to", "2.0", "--json", "--cache-dir", str(tmp_path / "cache")]) == 1
    findings = valid("drift", capsys.readouterr().out)
    assert isinstance(findings, list) and findings


def test_a_document_off_the_schema_is_refused() -> None:
    with pytest.raises(jsonschema.ValidationError):
        valid("run", to_json({"action": "exploded", "branch": "", "pr": None, "head_sha": "",
                              "pushed": False, "superseded": [], "dispatched": False,
                              "dashboard": None}))


def test_run_is_one_line() -> None:
    assert to_json({"a": [1, 2]}, one_line=True) == '{"a": [1, 2]}\n'
    assert to_json({"a": 1}) == '{\n  "a": 1\n}\n'
