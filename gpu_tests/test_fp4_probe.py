"""The fp4 skip rule, table-driven, on the CPU."""

from __future__ import annotations

import pytest
from fp4_probe import fp4_skip_reason


@pytest.mark.parametrize(("sm", "agree", "q_left", "sf_left", "skips"), [
    (90, 0.0, 1.0, 1.0, True),     # measured on H200: nothing written -> skip with the reason
    (90, 0.0, 0.0, 0.0, False),    # written but wrong (garbage, zeros, NaN scales) -> fail
    (90, 0.0, 1.0, 0.0, False),    # scales written, codes not -> fail
    (90, 0.0, 0.5, 1.0, False),    # partly written -> fail
    (90, 0.95, 0.0, 0.0, False),   # sm_90 that does quantize -> run (and pass)
    (100, 0.0, 1.0, 1.0, False),   # Blackwell writing nothing -> fail, never skip
    (120, 0.5, 0.0, 0.0, False),
    (89, 0.0, 0.995, 0.999, True),
])
def test_only_the_writes_nothing_condition_skips(sm: int, agree: float, q_left: float,
                                                 sf_left: float, skips: bool) -> None:
    reason = fp4_skip_reason(sm, agree, q_left, sf_left)
    assert (reason is not None) == skips
    if skips:
        assert reason is not None and f"sm_{sm}" in reason and "writes nothing" in reason
