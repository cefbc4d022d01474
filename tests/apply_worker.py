"""A single-threaded helper process for the interrupted- and concurrent-apply tests.

It imports pinbump once, then forks one real ``pinbump apply`` per request (so fifty applies
cost fifty forks, not fifty interpreter starts). In the child, the writer's ``os`` is wrapped
so that the N-th file-system step (open, write, fsync, close, chmod, replace, unlink) SIGKILLs
the process, or every step first sleeps a random moment (to widen any race). The parent never
starts a thread, so forking it is safe.

Protocol: one JSON request per line on stdin, one JSON answer per line on stdout.
Request: {"applies": [{"args": [...], "kill_at": N | null, "pause_ms": P, "count": FILE,
          "log": FILE, "kill_after_ms": T | null}, ...]} -- all applies start together.
Answer: {"status": [exit code, or -signal, per apply]}.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sys
import time
from typing import Any

import anyio  # noqa: F401  (httpx's transport, imported once here, not in every child)
import httpcore  # noqa: F401
import httpx  # noqa: F401

import bot.adapters.writer as writer
import bot.commands.apply
import bot.commands.context
import bot.commands.plan
import bot.core.editset
import bot.render.report  # noqa: F401  (imported here once, not in every forked child)
from bot.cli import main

STEPS = {"open", "write", "fsync", "close", "chmod", "replace", "unlink"}


class Steps:
    """The real ``os`` module, with a kill or a pause at each file-system step."""

    def __init__(self, kill_at: int | None, pause_ms: float) -> None:
        self.kill_at = kill_at
        self.pause = pause_ms / 1000
        self.count = 0

    def __getattr__(self, name: str) -> Any:
        real = getattr(os, name)
        if name not in STEPS:
            return real

        def step(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            if self.kill_at is not None and self.count >= self.kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            if self.pause:
                time.sleep(random.uniform(0, self.pause))
            return real(*args, **kwargs)

        return step


def child(spec: dict[str, Any]) -> None:
    random.seed(os.getpid())
    with open(spec.get("log") or os.devnull, "w") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    steps = Steps(spec.get("kill_at"), spec.get("pause_ms", 0))
    writer.os = steps  # type: ignore[assignment]
    code = 3
    try:
        code = main(["apply", *spec["args"]])
    finally:
        if spec.get("count"):
            with open(spec["count"], "w") as fh:
                fh.write(str(steps.count))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        pids = []
        for spec in request["applies"]:
            pid = os.fork()
            if pid == 0:
                child(spec)
            pids.append(pid)
        start = time.monotonic()
        for pid, spec in zip(pids, request["applies"], strict=True):
            delay = spec.get("kill_after_ms")
            if delay is not None:
                time.sleep(max(0.0, start + delay / 1000 - time.monotonic()))
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        status = []
        for pid in pids:
            _, raw = os.waitpid(pid, 0)
            status.append(os.waitstatus_to_exitcode(raw))
        print(json.dumps({"status": status}), flush=True)


if __name__ == "__main__":
    serve()
