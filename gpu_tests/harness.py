"""Run one function per GPU in its own process with torch.distributed (NCCL; gloo on the CPU),
under deadlines: a hang fails the test with every rank's Python stack instead of holding the
runner.

Each rank arms ``faulthandler`` three ways: on a crash (SIGSEGV, SIGABRT, ...), on SIGUSR1
(sent by the parent when a deadline passes) and with its own watchdog
(``dump_traceback_later``), which dumps and exits the rank even if the parent is gone, so a
killed pytest does not leave ranks spinning on the GPUs. The parent waits for the process group
to form (``startup_timeout``), then gives the body ``timeout`` seconds; when one rank fails the
others get ``grace`` seconds before they are dumped and killed (a peer stuck in a collective
would otherwise hide the real error behind a timeout).
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import multiprocessing as mp
import os
import signal
import socket
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"}
STARTUP_TIMEOUT = 300.0  # spawn, import torch (and FlashInfer), form the process group
GRACE = 10.0  # after a rank failed, the others' time to finish before they are dumped
WATCHDOG_SLACK = 20.0  # a rank's own watchdog fires this long after the parent's deadline
STACK_WAIT = 3.0  # how long the parent waits for a SIGUSR1 dump to be written


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RankOutcome:
    rank: int
    state: str  # "ok" | "failed" | "hung" | "died"
    value: Any = None
    error: str = ""
    traceback: str = ""
    stack: str = ""  # faulthandler's dump of every thread, when there is one
    exitcode: int | None = None
    phase: str = ""  # for "hung": "startup" (process group not formed), "body" or "teardown"

    def describe(self) -> str:
        head = f"--- rank {self.rank}: {self.state}"
        if self.phase:
            head += f" during {self.phase}"
        if self.exitcode not in (None, 0):
            head += f" (exit code {self.exitcode})"
        parts = [head + " ---"]
        if self.error:
            parts.append(self.error)
        if self.traceback:
            parts.append(self.traceback.rstrip())
        if self.stack:
            parts.append("Python stacks (faulthandler):\n" + self.stack.rstrip())
        return "\n".join(parts)


class RanksError(Exception):
    """Some rank did not return a value; ``outcomes`` has every rank's state and stack."""

    def __init__(self, message: str, outcomes: Sequence[RankOutcome]) -> None:
        details = "\n".join(o.describe() for o in outcomes if o.state != "ok" or o.stack)
        super().__init__(f"{message}\n{details}" if details else message)
        self.summary = message
        self.outcomes = list(outcomes)

    @property
    def values(self) -> dict[int, Any]:
        """What the ranks that did finish returned."""
        return {o.rank: o.value for o in self.outcomes if o.state == "ok"}


class RanksHung(RanksError, TimeoutError):
    """A rank did not finish within its deadline."""


class RanksFailed(RanksError, RuntimeError):
    """A rank raised or died."""


def _entry(fn: Callable[..., Any], rank: int, world: int, port: int, args: dict[str, Any],
           workdir: str, backend: str, watchdog: float) -> None:
    os.environ.update(NO_MULTICAST)
    base = Path(workdir) / f"rank{rank}"
    stack_file = open(f"{base}.stack", "w")  # noqa: SIM115 - open until the process exits
    faulthandler.enable(file=stack_file, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True)
    result: dict[str, Any]
    try:
        import torch
        import torch.distributed as dist

        extra: dict[str, Any] = {}
        if backend == "nccl":
            torch.cuda.set_device(rank)
            extra["device_id"] = torch.device(f"cuda:{rank}")
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world, **extra)
        Path(f"{base}.ready").touch()
        faulthandler.dump_traceback_later(watchdog, exit=True, file=stack_file)
        try:
            result = {"ok": True, "value": fn(rank, world, **args)}
        except BaseException as exc:
            result = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                      "traceback": traceback.format_exc()}
        Path(f"{base}.json").write_text(json.dumps(result, default=str))
        if result["ok"]:  # after a failure peers may be stuck in a collective: no teardown
            dist.destroy_process_group()
        faulthandler.cancel_dump_traceback_later()
    except BaseException as exc:
        if not Path(f"{base}.json").exists():
            Path(f"{base}.json").write_text(json.dumps(
                {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                 "traceback": traceback.format_exc()}))
        faulthandler.cancel_dump_traceback_later()


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _dump_and_kill(procs: list[Any], alive: list[int], work: Path) -> dict[int, str]:
    """SIGUSR1 to every live rank, wait for its dump, then SIGKILL; the dumps by rank."""
    sizes = {r: len(_read(work / f"rank{r}.stack")) for r in alive}
    for r in alive:
        if procs[r].pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(procs[r].pid, signal.SIGUSR1)
    end = time.monotonic() + STACK_WAIT
    while time.monotonic() < end and any(len(_read(work / f"rank{r}.stack")) <= sizes[r]
                                         for r in alive):
        time.sleep(0.05)
    time.sleep(0.2)  # let a dump in progress finish
    for r in alive:
        procs[r].kill()
        procs[r].join(10)
    return {r: _read(work / f"rank{r}.stack")[sizes[r]:] for r in alive}


def run_ranks(fn: Callable[..., Any], world: int, timeout: float = 300.0,
              backend: str = "nccl", startup_timeout: float = STARTUP_TIMEOUT,
              grace: float = GRACE, watchdog: float | None = None, **args: Any) -> list[Any]:
    """fn(rank, world, **args) on ranks 0..world-1 (GPU i for rank i with NCCL; ``gloo`` runs
    on the CPU); their return values.

    ``timeout`` counts from the moment every rank has joined the process group; ``watchdog``
    (default: ``timeout`` + WATCHDOG_SLACK) is each rank's own deadline from then. Raises
    RanksHung (a TimeoutError) when a rank is still running at a deadline, RanksFailed (a
    RuntimeError) when one raised or died; both carry every rank's outcome and Python stack."""
    ctx = mp.get_context("spawn")
    port = free_port()
    own = timeout + WATCHDOG_SLACK if watchdog is None else watchdog
    with tempfile.TemporaryDirectory(prefix="ranks-") as tmp:
        work = Path(tmp)
        procs = [ctx.Process(target=_entry, args=(fn, r, world, port, args, tmp, backend,
                                                   own))
                 for r in range(world)]
        for p in procs:
            p.start()
        start = time.monotonic()
        ready_at: float | None = None
        failed_at: float | None = None
        why = ""
        while True:
            alive = [r for r, p in enumerate(procs) if p.is_alive()]
            if not alive:
                break
            now = time.monotonic()
            if ready_at is None and all((work / f"rank{r}.ready").exists()
                                        for r in range(world)):
                ready_at = now
            if failed_at is None and any(_failed(work, r, p) for r, p in enumerate(procs)):
                failed_at = now
            if failed_at is not None and now - failed_at > grace:
                why = f"did not finish within {grace:.0f} s of another rank's failure"
                break
            if ready_at is None and now - start > startup_timeout:
                why = (f"did not join the process group within {startup_timeout:.0f} s "
                       "(startup hang?)")
                break
            if ready_at is not None and now - ready_at > timeout:
                why = f"did not finish within {timeout:.0f} s (hang?)"
                break
            time.sleep(0.05)
        stacks = _dump_and_kill(procs, alive, work) if alive else {}
        outcomes = [_outcome(work, r, procs[r], r in alive, stacks.get(r, ""))
                    for r in range(world)]
        written = {r: _when(work, r) for r in range(world)}
    hung = [o.rank for o in outcomes if o.state == "hung"]
    bad = [o for o in outcomes if o.state in ("failed", "died")]
    if bad:
        first = min(bad, key=lambda o: written[o.rank])  # the root cause failed first
        msg = f"rank {first.rank}: {first.error}"
        if hung:
            msg += f"; ranks {hung} {why}"
        raise RanksFailed(msg, outcomes)
    if hung:
        raise RanksHung(f"ranks {hung} {why}", outcomes)
    return [o.value for o in outcomes]


def _when(work: Path, rank: int) -> int:
    """When a rank's result (else its stack dump) was written: failures are ordered by it."""
    for suffix in (".json", ".stack"):
        try:
            return (work / f"rank{rank}{suffix}").stat().st_mtime_ns
        except OSError:
            continue
    return 1 << 62


def _failed(work: Path, rank: int, proc: Any) -> bool:
    """The rank reported a failure, or exited without reporting success."""
    data = _load(work, rank)
    if data is not None:
        return not data.get("ok")
    return not proc.is_alive()


def _load(work: Path, rank: int) -> dict[str, Any] | None:
    text = _read(work / f"rank{rank}.json")
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _outcome(work: Path, rank: int, proc: Any, was_alive: bool, stack: str) -> RankOutcome:
    data = _load(work, rank)
    if data is not None and not data.get("ok"):  # raised (and may have been stuck after)
        return RankOutcome(rank, "failed", error=data.get("error", ""),
                           traceback=data.get("traceback", ""), stack=stack,
                           exitcode=None if was_alive else proc.exitcode)
    if was_alive:
        ready = (work / f"rank{rank}.ready").exists()
        phase = "teardown" if data is not None else ("body" if ready else "startup")
        return RankOutcome(rank, "hung", value=(data or {}).get("value"), stack=stack,
                           phase=phase)
    if data is None:  # crashed, or its own watchdog fired: whatever faulthandler wrote
        return RankOutcome(rank, "died", error=f"died without a result (exit code "
                           f"{proc.exitcode})", stack=_read(work / f"rank{rank}.stack"),
                           exitcode=proc.exitcode)
    return RankOutcome(rank, "ok", value=data.get("value"), exitcode=proc.exitcode)
