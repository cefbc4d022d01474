"""The regression detector on synthetic samples: a planted 10% slowdown is flagged and an A/A
comparison is not, in at least 19 of 20 trials each."""

from __future__ import annotations

import random

import pytest

from bot.core.perfstats import compare, physically_possible


def samples(rng: random.Random, median: float, n: int = 30, noise: float = 0.03
            ) -> list[float]:
    """Kernel timings: lognormal jitter plus an occasional slow outlier (a preempted launch)."""
    out = []
    for _ in range(n):
        t = median * rng.lognormvariate(0.0, noise)
        if rng.random() < 0.05:
            t *= rng.uniform(1.2, 2.0)
        out.append(t)
    return out


def regressions(slowdown: float, seed: int, trials: int = 20) -> int:
    """How many of ``trials`` comparisons flag a regression for a planted ``slowdown``."""
    flagged = 0
    for trial in range(trials):
        rng = random.Random(seed + trial)
        base, cand = samples(rng, 1.0), samples(rng, 1.0 + slowdown)
        flagged += compare("k", base, cand, threshold=0.05, seed=trial).verdict == "regression"
    return flagged


def test_planted_ten_percent_slowdown_is_flagged() -> None:
    assert regressions(0.10, seed=1000) >= 19


def test_a_a_comparison_is_not_flagged() -> None:
    assert regressions(0.0, seed=2000) <= 1


def test_improvement_and_interval() -> None:
    rng = random.Random(7)
    result = compare("k", samples(rng, 1.0), samples(rng, 0.8))
    assert result.verdict == "improvement"
    assert result.ci_low <= result.ratio <= result.ci_high < 0.95
    assert result.as_dict()["ci95"] == [result.ci_low, result.ci_high]


@pytest.mark.parametrize(("base", "cand", "message"), [
    ([1.0] * 29, [1.0] * 30, "at least 30 samples"),
    ([1.0] * 30, [0.0] * 30, "must be positive"),
])
def test_bad_samples(base: list[float], cand: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compare("k", base, cand)


def test_physically_impossible_bandwidth() -> None:
    # 16384 x 8192 bf16 read + fp4 written, in 40 us: 8.2 TB/s on a 4.8 TB/s card
    nbytes = 16384 * 8192 * 2 + 16384 * 8192 // 2 + 16384 * 8192 // 16
    assert not physically_possible(nbytes, 40e-6, 4.3e12)
    assert physically_possible(nbytes, 120e-6, 4.3e12)
