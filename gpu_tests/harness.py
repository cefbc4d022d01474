"""Run one function per GPU in its own process with torch.distributed (NCCL), with a deadline:
a hang fails the test instead of holding the runner."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import socket
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _entry(fn: Callable[..., Any], rank: int, world: int, port: int, args: dict[str, Any],
           out: str, backend: str) -> None:
    os.environ.update(NO_MULTICAST)
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
        try:
            result = {"ok": True, "value": fn(rank, world, **args)}
        finally:
            dist.destroy_process_group()
    except BaseException as exc:
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                  "traceback": traceback.format_exc()}
    Path(out).write_text(json.dumps(result, default=str))


def run_ranks(fn: Callable[..., Any], world: int, timeout: float = 300.0,
              backend: str = "nccl", **args: Any) -> list[Any]:
    """fn(rank, world, **args) on ranks 0..world-1 (GPU i for rank i with NCCL; ``gloo``
    runs on the CPU); their return values.

    Raises TimeoutError when any rank has not finished within ``timeout`` seconds (all are
    killed), RuntimeError with the rank's traceback when one failed."""
    ctx = mp.get_context("spawn")
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        outs = [str(Path(tmp) / f"rank{r}.json") for r in range(world)]
        procs = [ctx.Process(target=_entry, args=(fn, r, world, port, args, outs[r], backend))
                 for r in range(world)]
        for p in procs:
            p.start()
        import time

        deadline = time.monotonic() + timeout
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
        hung = [r for r, p in enumerate(procs) if p.is_alive()]
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(5)
        if hung:
            raise TimeoutError(f"ranks {hung} did not finish within {timeout:.0f} s (hang?)")
        results = []
        for r, path in enumerate(outs):
            if not Path(path).exists():
                raise RuntimeError(f"rank {r} died without a result (exit code "
                                   f"{procs[r].exitcode})")
            data = json.loads(Path(path).read_text())
            if not data["ok"]:
                raise RuntimeError(f"rank {r}: {data['error']}\n{data['traceback']}")
            results.append(data["value"])
        return results
