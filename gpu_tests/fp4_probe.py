"""When the numeric fp4 tests may skip: pure, so its table is tested on the CPU."""

from __future__ import annotations

UNWRITTEN = 0.99  # share of poisoned bytes left unchanged that means "the kernel wrote nothing"
AGREE = 0.9  # share of values agreeing with the NVFP4 reference that means "it quantizes"
FP4_SM = 100  # e2m1 conversion exists from sm_100 on


def fp4_skip_reason(sm: int, agree: float, q_left: float, sf_left: float) -> str | None:
    """The reason to skip the numeric fp4 tests, or None to run them (and let a mismatch fail).

    The only skip is the condition measured on sm_90 (H100/H200): the kernel compiles and runs
    but writes neither output (buffers poisoned before the call come back unchanged). From
    sm_100 on nothing skips; below it any other mismatch (garbage, partial writes, wrong
    values) is a failure, not a skip."""
    if agree >= AGREE or sm >= FP4_SM:
        return None
    if q_left > UNWRITTEN and sf_left > UNWRITTEN:
        return (f"unsupported on sm_{sm}: fp4_quantize writes nothing here (no e2m1 conversion "
                f"below sm_100): {q_left:.1%} of the poisoned output bytes and {sf_left:.1%} "
                "of the poisoned scale bytes came back unchanged")
    return None
