"""The codemod's guards, one row each: a positional argument is rewritten into keyword form
only when that keyword binds the same parameter under the new signature and is legal there."""

from __future__ import annotations

import pytest

from bot.core.api import Param, ParamKind, Signature
from bot.core.drift import CallSite, _safe_fix

P, PK = ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD
KW, VA, VK = ParamKind.KEYWORD_ONLY, ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD
OLD = Signature("m.f", (Param("x", PK), Param("scale", PK, "None"), Param("pdl", PK, "None")))


def site(positional: int, keywords: tuple[str, ...] = ()) -> CallSite:
    return CallSite("a.py", 1, 0, "m.f", positional, keywords, False, False, "m.f(...)")


def new(*params: Param) -> Signature:
    return Signature("m.f", (Param("x", PK), *params))


@pytest.mark.parametrize(("call", "signature", "expected"), [
    # a parameter inserted before `pdl`: positional 2 moves to keyword form
    (site(3), new(Param("scale", PK, "None"), Param("inv", PK, "False"),
                  Param("pdl", PK, "None")), ((1, "scale"), (2, "pdl"))),
    # the old name became positional-only: a keyword would be an error
    (site(3), new(Param("scale", P, "None"), Param("inv", PK, "False"),
                  Param("pdl", PK, "None")), ()),
    # the old name now collects *args or **kwargs: binding by keyword would change meaning
    (site(3), new(Param("scale", VA), Param("pdl", KW, "None")), ()),
    (site(3), new(Param("inv", PK, "False"), Param("scale", VK)), ()),
    (site(3), new(Param("inv", PK, "False"), Param("pdl", PK, "None"), Param("scale", VK)), ()),
    # the old name is gone
    (site(3), new(Param("inv", PK, "False"), Param("pdl", PK, "None")), ()),
    # the call already passes that keyword: a duplicate keyword would be a SyntaxError
    (site(2, ("scale",)), new(Param("inv", PK, "False"), Param("scale", PK, "None"),
                              Param("pdl", PK, "None")), ()),
    # more positional arguments than the old signature had: nothing to bind them by
    (site(4), new(Param("scale", PK, "None"), Param("pdl", PK, "None")), ()),
    # keyword-only under the new signature is fine: the keyword binds it
    (site(3), new(Param("scale", PK, "None"), Param("pdl", KW, "None")),
     ((1, "scale"), (2, "pdl"))),
])
def test_safe_fix_guards(call: CallSite, signature: Signature,
                         expected: tuple[tuple[int, str], ...]) -> None:
    assert _safe_fix(call, OLD, signature, 1) == expected


def test_only_arguments_from_the_first_moved_one_are_rewritten() -> None:
    signature = new(Param("scale", PK, "None"), Param("inv", PK, "False"),
                    Param("pdl", PK, "None"))
    assert _safe_fix(site(3), OLD, signature, 2) == ((2, "pdl"),)
