"""Every GraphQL document pinbump sends validates against the committed subset of GitHub's
public schema (tests/graphql/github-subset.graphql, from @octokit/graphql-schema), the same
schema the emulator executes them against."""

from __future__ import annotations

from pathlib import Path

import pytest
from graphql import build_schema, parse, validate

from bot.adapters.github_graphql import DOCUMENTS

SUBSET = Path(__file__).parent / "graphql" / "github-subset.graphql"


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_document_validates_against_githubs_schema(name: str) -> None:
    schema = build_schema(SUBSET.read_text())
    assert validate(schema, parse(DOCUMENTS[name])) == []


def test_a_field_github_does_not_have_is_caught() -> None:
    schema = build_schema(SUBSET.read_text())
    errors = validate(schema, parse("query { viewer { login isHireable } }"))
    assert errors and "isHireable" in errors[0].message
