"""Old-vs-new timing statistics for the GPU gate. Pure: samples in, verdicts out.

The candidate/baseline ratio of medians with a percentile-bootstrap 95% confidence interval;
a regression is flagged only when the whole interval lies beyond the threshold, so noise alone
rarely flags (an A/A comparison) while a real slowdown does.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from bot.core.models import PerfVerdict


@dataclass(frozen=True)
class Comparison:
    name: str
    baseline_median: float
    candidate_median: float
    ratio: float  # candidate / baseline (>1: slower)
    ci_low: float
    ci_high: float
    threshold: float  # e.g. 0.05 for "5% slower"
    samples: tuple[int, int]
    verdict: PerfVerdict
    note: str = ""

    def as_dict(self) -> dict[str, object]:
        ci95 = None if self.verdict == PerfVerdict.INVALID else [self.ci_low, self.ci_high]
        return {"name": self.name, "baseline_median": self.baseline_median,
                "candidate_median": self.candidate_median, "ratio": self.ratio,
                "ci95": ci95,
                "threshold": self.threshold,
                "samples": list(self.samples), "verdict": self.verdict, "note": self.note}


def bootstrap_ratio_ci(baseline: Sequence[float], candidate: Sequence[float], *,
                       resamples: int = 2000, confidence: float = 0.95,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of median(candidate) / median(baseline)."""
    rng = random.Random(seed)
    nb, nc = len(baseline), len(candidate)
    ratios = []
    for _ in range(resamples):
        b = statistics.median(baseline[rng.randrange(nb)] for _ in range(nb))
        c = statistics.median(candidate[rng.randrange(nc)] for _ in range(nc))
        ratios.append(c / b)
    ratios.sort()
    lo = ratios[int((1 - confidence) / 2 * resamples)]
    hi = ratios[min(resamples - 1, int((1 + confidence) / 2 * resamples))]
    return lo, hi


def compare(name: str, baseline: Sequence[float], candidate: Sequence[float], *,
            threshold: float = 0.05, min_samples: int = 30, seed: int = 0) -> Comparison:
    """Flag a regression when the 95% interval of the ratio lies above 1 + threshold."""
    if len(baseline) < min_samples or len(candidate) < min_samples:
        raise ValueError(f"{name}: need at least {min_samples} samples of each version, got "
                         f"{len(baseline)} and {len(candidate)}")
    if min(baseline) <= 0 or min(candidate) <= 0:
        raise ValueError(f"{name}: timings must be positive")
    mb, mc = statistics.median(baseline), statistics.median(candidate)
    lo, hi = bootstrap_ratio_ci(baseline, candidate, seed=seed)
    if lo > 1 + threshold:
        verdict = PerfVerdict.REGRESSION
    elif hi < 1 - threshold:
        verdict = PerfVerdict.IMPROVEMENT
    else:
        verdict = PerfVerdict.NO_CHANGE
    return Comparison(name, mb, mc, mc / mb, lo, hi, threshold,
                      (len(baseline), len(candidate)), verdict)


def physically_possible(bytes_moved: float, seconds: float, ceiling_bytes_per_s: float,
                        slack: float = 1.05) -> bool:
    """A kernel cannot move memory faster than the device's measured copy bandwidth."""
    return bytes_moved / seconds <= ceiling_bytes_per_s * slack


def invalid(name: str, baseline: Sequence[float], candidate: Sequence[float],
            threshold: float, note: str) -> Comparison:
    mb, mc = statistics.median(baseline), statistics.median(candidate)
    return Comparison(name, mb, mc, mc / mb if mb else float("nan"), float("nan"),
                      float("nan"), threshold, (len(baseline), len(candidate)),
                      PerfVerdict.INVALID,
                      note)
