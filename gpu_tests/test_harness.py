"""The multi-process harness itself, on the CPU (gloo): results, hangs and failures."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("torch", reason="torch is not installed")

from harness_cases import one_fails, one_hangs, summed

from harness import run_ranks


def test_each_rank_returns_its_result() -> None:
    assert run_ranks(summed, 3, timeout=120, backend="gloo") == [6.0, 6.0, 6.0]


def test_a_hang_fails_within_the_timeout() -> None:
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"ranks \[1\] did not finish within 5 s"):
        run_ranks(one_hangs, 2, timeout=5, backend="gloo", seconds=120)
    assert time.monotonic() - start < 60


def test_a_failing_rank_is_reported_with_its_traceback() -> None:
    with pytest.raises(RuntimeError, match="rank 1: ValueError: rank 1 broke on purpose"):
        run_ranks(one_fails, 2, timeout=120, backend="gloo")
