"""allreduce_fusion (TRT-LLM backend) across N >= 2 GPUs, one process per GPU, against an
unfused reference; a subgroup case on 4 GPUs. Skips with the reason below the GPU count."""

from __future__ import annotations

import inspect

import pytest

from allreduce_cases import TOKENS, TOLERANCE, fused_residual_rmsnorm
from harness import run_ranks

pytestmark = [pytest.mark.gpu, pytest.mark.multigpu]
TIMEOUT = 600.0


def _need(torch, n: int) -> int:
    count = torch.cuda.device_count()
    if count < n:
        pytest.skip(f"needs {n} GPUs of one host, this host has {count} (two ranks cannot "
                    "share one GPU: the workspace comes from torch symmetric memory)")
    return count


@pytest.mark.parametrize("strategy", ["auto", "switch"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_residual_rmsnorm_all_gpus(fi, torch, cuda, dtype: str, strategy: str,
                                   observe) -> None:
    world = _need(torch, 2)
    results = run_ranks(fused_residual_rmsnorm, world, timeout=TIMEOUT, dtype=dtype,
                        hidden=4096, tokens=TOKENS, strategy=strategy)
    observe(f"allreduce_fusion.residual_rmsnorm.{dtype}.{strategy}.world{world}", results[0])
    for rank, rows in enumerate(results):
        for n, row in rows.items():
            assert row["norm_rel_err"] < TOLERANCE[dtype], (rank, n, row)
            assert row["residual_rel_err"] < TOLERANCE[dtype], (rank, n, row)


def test_fp8_quant_pattern(fi, torch, cuda, sm: int, observe) -> None:
    world = _need(torch, 2)
    if sm < 89:
        pytest.skip(f"fp8 needs sm_89 or newer, this is sm_{sm}")
    results = run_ranks(fused_residual_rmsnorm, world, timeout=TIMEOUT, dtype="bfloat16",
                        hidden=4096, tokens=[64, 1024], fp8=True)
    observe(f"allreduce_fusion.fp8.world{world}", results[0])
    for rows in results:
        for row in rows.values():
            assert row["norm_rel_err"] < TOLERANCE["bfloat16"]
            assert row["fp8_rel_err"] < 0.07  # e4m3 keeps 3 mantissa bits


def test_subgroup_workspace(fi, torch, cuda, observe) -> None:
    """4 ranks in two tensor-parallel groups of 2; each group's result must be its own."""
    _need(torch, 4)
    from flashinfer import comm

    if "group" not in inspect.signature(comm.create_allreduce_fusion_workspace).parameters:
        pytest.skip(f"flashinfer {fi.__version__}: create_allreduce_fusion_workspace has no "
                    "group parameter (it always uses WORLD)")
    results = run_ranks(fused_residual_rmsnorm, 4, timeout=TIMEOUT, dtype="bfloat16",
                        hidden=2048, tokens=[16, 256], tp=2)
    observe("allreduce_fusion.subgroup.tp2", results)
    for rows in results:
        for row in rows.values():
            assert row["norm_rel_err"] < TOLERANCE["bfloat16"]
