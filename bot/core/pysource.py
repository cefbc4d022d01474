"""Python source text split the way Python's tokenizer numbers its lines. Pure."""

from __future__ import annotations

import re

_PY_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def python_lines(text: str) -> list[str]:
    """The physical lines of Python source, ends kept: only \\n, \\r\\n and \\r end a line
    (``str.splitlines`` also breaks at \\f, \\v, \\x1c-\\x1e, \\x85, \\u2028 and \\u2029, which
    the tokenizer keeps inside a line), so ``lines[node.lineno - 1]`` is the node's line."""
    return _PY_LINE.findall(text)
