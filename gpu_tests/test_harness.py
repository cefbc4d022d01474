"""The multi-process harness itself, on the CPU (gloo): results, hangs, failures, crashes, and
the stacks it reports for each."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("torch", reason="torch is not installed")

from harness_cases import (
    hang_in_collective,
    one_crashes,
    one_fails,
    one_fails_others_wait,
    one_hangs,
    summed,
)

from harness import RanksFailed, RanksHung, run_ranks


def test_each_rank_returns_its_result() -> None:
    assert run_ranks(summed, 3, timeout=120, backend="gloo") == [6.0, 6.0, 6.0]


def test_a_hang_fails_within_the_timeout_with_the_hung_ranks_stack() -> None:
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"ranks \[1\] did not finish within 5 s") as info:
        run_ranks(one_hangs, 2, timeout=5, backend="gloo", seconds=120)
    assert time.monotonic() - start < 90
    err = info.value
    assert isinstance(err, RanksHung)
    states = {o.rank: o.state for o in err.outcomes}
    assert states == {0: "ok", 1: "hung"}
    assert err.values == {0: 0}
    hung = err.outcomes[1]
    assert hung.phase == "body"
    assert "one_hangs" in hung.stack and "harness_cases.py" in hung.stack
    assert "rank 1: hung during body" in str(err) and "one_hangs" in str(err)


def test_a_hang_in_a_collective_dumps_every_stuck_rank() -> None:
    """The planted hang: rank 1 stalls before an all_reduce, ranks 0 and 2 block inside it.
    Every rank's stack is in the failure, each showing where it is stuck."""
    with pytest.raises(RanksHung, match=r"ranks \[0, 1, 2\] did not finish within 5 s") as info:
        run_ranks(hang_in_collective, 3, timeout=5, backend="gloo", seconds=300)
    by_rank = {o.rank: o for o in info.value.outcomes}
    assert all(o.state == "hung" for o in by_rank.values())
    assert "stuck_before_the_collective" in by_rank[1].stack
    for r in (0, 2):
        assert "hang_in_collective" in by_rank[r].stack
        assert "all_reduce" in by_rank[r].stack  # torch.distributed's frame


def test_a_failing_rank_is_reported_with_its_traceback() -> None:
    with pytest.raises(RanksFailed, match="rank 1: ValueError: rank 1 broke on purpose"):
        run_ranks(one_fails, 2, timeout=120, backend="gloo")


def test_a_failure_is_not_hidden_behind_the_peers_hang() -> None:
    """Rank 1 raises; rank 0 would wait in the all_reduce forever. The error is reported after
    the grace period, not after the (long) timeout, with rank 0's stack beside it."""
    start = time.monotonic()
    with pytest.raises(RanksFailed, match="rank 1: ValueError: rank 1 broke before") as info:
        run_ranks(one_fails_others_wait, 2, timeout=600, backend="gloo", grace=3)
    assert time.monotonic() - start < 120
    by_rank = {o.rank: o for o in info.value.outcomes}
    assert by_rank[1].state == "failed" and "one_fails_others_wait" in by_rank[1].traceback
    assert by_rank[0].state == "hung" and "all_reduce" in by_rank[0].stack


def test_a_crash_is_reported_with_the_stack_faulthandler_wrote() -> None:
    with pytest.raises(RanksFailed, match=r"rank 1: died without a result") as info:
        run_ranks(one_crashes, 2, timeout=120, backend="gloo")
    crashed = info.value.outcomes[1]
    assert crashed.state == "died" and crashed.exitcode != 0
    assert "Segmentation fault" in crashed.stack and "one_crashes" in crashed.stack


def test_a_rank_times_itself_out_when_the_parent_does_not() -> None:
    """Each rank's own watchdog: with the parent's deadline far away, the rank dumps its
    stack and exits by itself (so a killed pytest leaves no rank spinning on a GPU)."""
    with pytest.raises(RanksFailed, match=r"rank 1: died without a result") as info:
        run_ranks(one_hangs, 2, timeout=30, watchdog=2, backend="gloo", seconds=120)
    dead = info.value.outcomes[1]
    assert "Timeout" in dead.stack and "one_hangs" in dead.stack
