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


def one_fails(rank: int, world: int) -> int:
    if rank == 1:
        raise ValueError("rank 1 broke on purpose")
    return rank
