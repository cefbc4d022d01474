"""A GPU job's result artifact (gate.json), read as data: validated, never trusted further.

The GPU jobs hold no token that can write statuses; they upload ``gate.json`` and a separate
job turns it into a commit status. Whatever is in the artifact, the status text is pinbump's
own words: only the boolean ``passed`` is taken from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from bot.core.models import StatusState

MAX_RESULT_BYTES = 1 << 20


@dataclass(frozen=True)
class JobResult:
    job: str
    state: StatusState  # success or failure
    description: str


def read_result(job: str, raw: bytes | None) -> JobResult:
    """The commit status for one GPU job from its gate.json bytes (None: no artifact)."""
    if raw is None:
        return JobResult(job, StatusState.FAILURE, "no result: the GPU job uploaded no gate.json")
    if len(raw) > MAX_RESULT_BYTES:
        return JobResult(job, StatusState.FAILURE, "unreadable result: gate.json is over 1 MiB")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return JobResult(job, StatusState.FAILURE, "unreadable result: gate.json is not JSON")
    passed = doc.get("passed") if isinstance(doc, dict) else None
    if not isinstance(passed, bool):
        return JobResult(job, StatusState.FAILURE,
                         "unreadable result: gate.json has no boolean 'passed'")
    if passed:
        return JobResult(job, StatusState.SUCCESS, "gpu_tests passed")
    return JobResult(job, StatusState.FAILURE, "gpu_tests failed")
