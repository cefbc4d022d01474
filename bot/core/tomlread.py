"""Reading TOML that is only read, never edited (pyprojects, pinbump.toml, shipped data):
the standard library's parser, about ten times faster than tomlkit's, and where each string
value stands in the text. Pure."""

from __future__ import annotations

import re
import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as the tomli distribution
    import tomli as tomllib

TOMLDecodeError = tomllib.TOMLDecodeError

# A string literal: multi-line literal or basic, then one-line literal or basic.
_LITERAL = re.compile(r"'''.*?'''|\"\"\".*?\"\"\"|'[^'\n]*'|\"(?:[^\"\\\n]|\\.)*\"", re.S)


def load(text: str) -> dict[str, Any]:
    """The document as plain values; raises ``TOMLDecodeError`` on malformed TOML."""
    doc: dict[str, Any] = tomllib.loads(text)
    return doc


def _value(literal: str) -> str:
    """The string a literal stands for, as TOML reads it (the literal itself when it is
    no valid TOML string on its own: such a match was never a value anyway)."""
    if literal.startswith("'''"):
        body = literal[3:-3]
        return body[1:] if body.startswith("\n") else body.removeprefix("\r\n")
    if literal.startswith("'") or ("\\" not in literal and not literal.startswith('"""')):
        return literal[1:-1]
    try:
        value = tomllib.loads(f"v = {literal}")["v"]
    except TOMLDecodeError:
        return literal
    return value if isinstance(value, str) else literal


def string_lines(text: str) -> dict[str, list[int]]:
    """Each string value written as a literal in ``text`` (however it is quoted or
    escaped), with the lines where it stands, in order."""
    out: dict[str, list[int]] = {}
    line, at = 1, 0
    for m in _LITERAL.finditer(text):
        line += text.count("\n", at, m.start())
        at = m.start()
        out.setdefault(_value(m.group(0)), []).append(line)
    return out
