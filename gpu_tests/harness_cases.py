"""Rank bodies for the harness's own tests (importable by spawned processes)."""

from __future__ import annotations

import time


def summed(rank: int, world: int) -> float:
    import torch
    import torch.distributed as dist

    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    return float(t.item())


def one_hangs(rank: int, world: int, seconds: float) -> int:
    if rank == 1:
        time.sleep(seconds)
    return rank


def hang_in_collective(rank: int, world: int, seconds: float) -> float:
    """Rank 1 never reaches the all_reduce; the others block inside it: a planted hang of
    the kind a kernel or a lost peer causes."""
    import torch
    import torch.distributed as dist

    if rank == 1:
        stuck_before_the_collective(seconds)
    t = torch.tensor([1.0])
    dist.all_reduce(t)
    return float(t.item())


def stuck_before_the_collective(seconds: float) -> None:
    time.sleep(seconds)


def one_fails(rank: int, world: int) -> int:
    if rank == 1:
        raise ValueError("rank 1 broke on purpose")
    return rank


def one_fails_others_wait(rank: int, world: int) -> float:
    """Rank 1 raises before the collective and stays alive (as a process whose CUDA context
    or NCCL threads keep it up would); the others wait in the collective forever."""
    import threading

    import torch
    import torch.distributed as dist

    if rank == 1:
        threading.Thread(target=time.sleep, args=(300,), daemon=False).start()
        raise ValueError("rank 1 broke before the collective")
    t = torch.tensor([1.0])
    dist.all_reduce(t)
    return float(t.item())


def one_crashes(rank: int, world: int) -> int:
    if rank == 1:
        import ctypes

        ctypes.string_at(0)  # SIGSEGV: faulthandler writes the stack
    return rank


def nccl_hang(rank: int, world: int, seconds: float) -> float:
    """On GPUs: rank 1 stalls, rank 0 waits on the device for an NCCL all_reduce."""
    import torch
    import torch.distributed as dist

    if rank == 1:
        stuck_before_the_collective(seconds)
    t = torch.ones(1, device="cuda")
    dist.all_reduce(t)
    return float(t.item())
