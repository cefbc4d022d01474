"""pinbump bisect: the first published version between a good pin and a failing target at
which the gate's failing tests fail. Pure: versions and step outcomes in, probes and the
verdict out; the command runs each probe through the gpu-gate machinery.

Policy:
- the good end (the current pin) and the bad end (the target the gate failed) are verified
  first, so a bisection never rests on an assumption;
- a step fails when any of the named tests fails; a step that could not give an answer (an
  install error, a crash of the harness) is re-run up to ``retries`` times, then the
  bisection stops and says so;
- when the boundary is found, the last good version is run ``confirm`` more times: a bad
  version that passed once by luck (a hang that does not always hang) shows up there and the
  bisection continues below it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from bot.core.models import Vocabulary
from bot.errors import InputError
from bot.render.markdown import code_span, escape_text


class Outcome(Vocabulary):
    """What one gate run of one version says about the named tests."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"  # no answer: the run broke (install, collection, crash)


PASS, FAIL, ERROR = Outcome.PASS, Outcome.FAIL, Outcome.ERROR


class BisectVerdict(Vocabulary):
    """What a bisection concluded (``verdict`` of bisect.json)."""

    FOUND = "found"  # first bad and last good neighbours, the last good confirmed
    GOOD_END_FAILS = "good end fails"
    BAD_END_PASSES = "bad end passes"
    NO_ANSWER = "no answer"  # a version gave no answer in its runs
_TEST_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./]*(?:::[A-Za-z0-9_\[\]\-.,=+ ]+)+$")


@dataclass(frozen=True)
class StepResult:
    outcome: Outcome
    failing: tuple[str, ...] = ()  # of the named tests
    detail: str = ""  # a line of evidence: the failure text's head, the error


@dataclass(frozen=True)
class Step:
    version: str
    attempt: int
    result: StepResult

    def as_dict(self) -> dict[str, Any]:
        return {"version": self.version, "attempt": self.attempt,
                "outcome": self.result.outcome, "failing": list(self.result.failing),
                "detail": self.result.detail}


@dataclass
class BisectResult:
    package: str
    good: str
    bad: str
    tests: tuple[str, ...]
    first_bad: str | None = None
    last_good: str | None = None
    steps: list[Step] = field(default_factory=list)
    verdict: BisectVerdict | None = None  # None until bisect decides
    message: str = ""

    @property
    def evidence(self) -> list[Step]:
        """The steps that decided the boundary."""
        return [s for s in self.steps if s.version in (self.first_bad, self.last_good)]

    def as_dict(self) -> dict[str, Any]:
        return {"package": self.package, "good": self.good, "bad": self.bad,
                "tests": list(self.tests), "verdict": self.verdict,
                "first_bad": self.first_bad, "last_good": self.last_good,
                "message": self.message, "steps": [s.as_dict() for s in self.steps]}

    def reason(self) -> str:
        """The [known-bad] reason: the failing test, and what bisect saw."""
        failing = sorted({t for s in self.evidence if s.version == self.first_bad
                          for t in s.result.failing}) or list(self.tests)
        return (f"gpu gate: {', '.join(failing[:3])} fails from this version on "
                f"(pinbump bisect {self.good}..{self.bad})")


def between(published: Iterable[Version], good: Version, bad: Version, *,
            prereleases: bool = False) -> list[Version]:
    """The versions to bisect: good, every published version strictly between, bad."""
    if not good < bad:
        raise InputError(f"bisect: the good version {good} must be older than the bad "
                         f"version {bad}")
    inner = sorted(v for v in set(published) if good < v < bad
                   and (prereleases or not v.is_prerelease))
    return [good, *inner, bad]


def failing_test_ids(raw: Iterable[object], where: str) -> tuple[str, ...]:
    """Failing test ids (from a gate result: untrusted text) as pytest node ids relative to
    the gpu_tests folder; anything that is not plainly a test id is refused (it becomes an
    argument of pytest)."""
    out = []
    for item in raw:
        if not isinstance(item, str) or len(item) > 300 or not _TEST_ID.match(item) \
                or ".." in item.split("::")[0]:
            raise InputError(f"{where}: {item!r} is not a test id such as "
                             "test_allreduce::test_residual_rmsnorm_all_gpus[bfloat16-auto]")
        out.append(item)
    if not out:
        raise InputError(f"{where}: no failing test to bisect on")
    return tuple(dict.fromkeys(out))


def read_gate_result(text: str, where: str) -> tuple[str, tuple[str, ...]]:
    """(candidate version, failing tests) of a gate.json."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{where}: not JSON ({exc})") from None
    try:
        candidate = data["candidate"]
        failed = data["tests"]["candidate"]["failed"]
    except (KeyError, TypeError):
        raise InputError(f"{where}: not a gate.json (no tests.candidate.failed)") from None
    if not isinstance(candidate, str) or not isinstance(failed, list):
        raise InputError(f"{where}: not a gate.json (wrong types)")
    return candidate, failing_test_ids(failed, where)


@dataclass
class _Probe:
    """Runs one version, re-running a step that gave no answer; records every step. None when
    the gate gave no answer in ``retries + 1`` runs (the result then says so)."""

    texts: Sequence[str]
    run: Callable[[str], StepResult]
    result: BisectResult
    retries: int

    def __call__(self, i: int) -> Outcome | None:
        for attempt in range(1, self.retries + 2):
            r = self.run(self.texts[i])
            self.result.steps.append(Step(self.texts[i], attempt, r))
            if r.outcome in (PASS, FAIL):
                return r.outcome
        self.result.verdict = BisectVerdict.NO_ANSWER
        self.result.message = (f"{self.result.package} {self.texts[i]}: the gate gave no "
                               f"answer in {self.retries + 1} runs "
                               f"({self.result.steps[-1].result.detail or 'error'})")
        return None


def _ends_hold(probe: _Probe) -> bool:
    """The bad end fails and the good end passes (else the result says why not)."""
    texts, result, package = probe.texts, probe.result, probe.result.package
    bad_end = probe(len(texts) - 1)
    if bad_end is None:
        return False
    if bad_end == PASS:
        result.verdict = BisectVerdict.BAD_END_PASSES
        result.message = (f"{package} {texts[-1]} passes the named tests here: nothing to "
                          "bisect (a flaky failure, or one this runner does not reproduce)")
        return False
    good_end = probe(0)
    if good_end is None:
        return False
    if good_end == FAIL:
        result.verdict = BisectVerdict.GOOD_END_FAILS
        result.first_bad = texts[0]
        result.message = (f"{package} {texts[0]} (the good end) fails too: the failure is "
                          "older than the range, or comes from the runner")
        return False
    return True


def _narrow(probe: _Probe, lo: int, hi: int) -> tuple[int, int] | None:
    """Halve ``lo`` (passes) .. ``hi`` (fails) down to neighbours; None: no answer."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        outcome = probe(mid)
        if outcome is None:
            return None
        if outcome == PASS:
            lo = mid
        else:
            hi = mid
    return lo, hi


def _confirmed(probe: _Probe, lo: int, confirm: int) -> bool | None:
    """Re-run the last good version ``confirm`` times (the good end was verified already):
    False when it fails (it passed by luck before), None: no answer."""
    for _ in range(confirm if lo > 0 else 0):
        outcome = probe(lo)
        if outcome is None:
            return None
        if outcome == FAIL:
            return False
    return True


def _boundary(probe: _Probe, confirm: int) -> tuple[int, int] | None:
    """(last good, first bad) indexes, the last good confirmed; None: no answer."""
    lo, hi = 0, len(probe.texts) - 1  # lo passes, hi fails
    while True:
        found = _narrow(probe, lo, hi)
        if found is None:
            return None
        lo, hi = found
        confirmed = _confirmed(probe, lo, confirm)
        if confirmed is None:
            return None
        if confirmed:
            return lo, hi
        hi, lo = lo, 0  # the boundary is lower


def bisect(versions: Sequence[Version], run: Callable[[str], StepResult], *, package: str,
           tests: Sequence[str], retries: int = 2, confirm: int = 1) -> BisectResult:
    """Find the first version at which ``run`` fails, ``versions[0]`` good and
    ``versions[-1]`` bad (both verified)."""
    texts = [str(v) for v in versions]
    result = BisectResult(package, texts[0], texts[-1], tuple(tests))
    probe = _Probe(texts, run, result, retries)
    if not _ends_hold(probe):
        return result
    found = _boundary(probe, confirm)
    if found is None:
        return result
    lo, hi = found
    result.verdict = BisectVerdict.FOUND
    result.first_bad, result.last_good = texts[hi], texts[lo]
    result.message = (f"first bad version of {package}: {texts[hi]} (last good: {texts[lo]}; "
                      f"{len(result.steps)} gate runs)")
    return result


def bisect_markdown(result: BisectResult) -> str:
    """A comment for the bot PR: the verdict, the evidence, the [known-bad] entry to add."""
    lines = [f"### pinbump bisect: {escape_text(result.package)} "
             f"{escape_text(result.good)}..{escape_text(result.bad)}", "",
             escape_text(result.message), "",
             "Tests: " + ", ".join(code_span(t) for t in result.tests[:10]), "",
             "| version | run | outcome | failing |", "| --- | --- | --- | --- |"]
    for s in result.steps:
        lines.append(f"| {escape_text(s.version)} | {s.attempt} | {s.result.outcome} | "
                     f"{', '.join(code_span(t, in_table=True) for t in s.result.failing[:3])} |")
    if result.verdict == BisectVerdict.FOUND and result.first_bad:
        entry = (f'[known-bad.{result.package}]\n"{result.first_bad}" = '
                 f"{json.dumps(result.reason())}")
        lines += ["", "Add to `pinbump.toml`:", "", "```toml", entry, "```"]
    return "\n".join(lines) + "\n"
