"""The one JSON serializer of pinbump's ``--json`` outputs, and their published schemas.

Every ``--json`` document goes through ``to_json``; the shape of each is described by a JSON
Schema shipped as package data (``bot/schemas/<command>.schema.json``, one per command that
has ``--json``) and checked against real output by the tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from typing import Any

SCHEMAS = ("plan", "apply", "drift", "run", "pins", "gate", "command", "verify-pr",
           "report-gpu", "status", "install-workflows", "gpu-gate", "bisect",
           "verify-nightly", "nightly-dashboard")


def to_json(data: object, *, one_line: bool = False, sort_keys: bool = False,
            default: Callable[[Any], Any] | None = None) -> str:
    """``data`` as JSON and a newline: indented, or on one line for records a script reads
    as the last line of output (``run``). ``default`` turns what JSON has no type for into
    something it has (``str`` for the GPU gate's report)."""
    if one_line:
        return json.dumps(data, sort_keys=sort_keys, default=default) + "\n"
    return json.dumps(data, indent=2, sort_keys=sort_keys, default=default) + "\n"


def schema(name: str) -> dict[str, Any]:
    """The published JSON Schema of one ``--json`` output."""
    if name not in SCHEMAS:
        raise KeyError(name)
    text = resources.files("bot.schemas").joinpath(f"{name}.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded
