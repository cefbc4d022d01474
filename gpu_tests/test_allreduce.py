"""allreduce_fusion (TRT-LLM backend) across N >= 2 GPUs, one process per GPU, against an
unfused float32 reference; the sub-group contract on 4 GPUs. Skips with the reason below the
GPU count. A hang is a failure carrying every rank's Python stack (see harness.py)."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

import pytest

from allreduce_cases import (
    TOKENS,
    TOLERANCE,
    fused_residual_rmsnorm,
    subgroup_case,
    summarize_subgroup,
)
from harness import RanksError, RanksHung, run_ranks

pytestmark = [pytest.mark.gpu, pytest.mark.multigpu]
SUBGROUP_WORLD, SUBGROUP_TP = 4, 2


@pytest.fixture(scope="session")
def rank_timeout() -> float:
    """Seconds a multi-rank body may run once the process group is up
    ($PINBUMP_GPU_RANK_TIMEOUT; default 300). A hang costs this much, then fails."""
    return float(os.environ.get("PINBUMP_GPU_RANK_TIMEOUT", "300"))


@pytest.fixture(scope="session")
def trtllm_comm(fi: Any) -> None:
    """Build (or load) the trtllm_comm JIT module here, once, so that no rank spends its
    deadline compiling (135-177 s on an H200 host)."""
    try:
        from flashinfer.comm.trtllm_ar import get_trtllm_comm_module
    except ImportError:
        return
    get_trtllm_comm_module()


def _need(torch: Any, n: int) -> int:
    count: int = torch.cuda.device_count()
    if count < n:
        pytest.skip(f"needs {n} GPUs of one host, this host has {count} (two ranks cannot "
                    "share one GPU: the workspace comes from torch symmetric memory)")
    return count


@pytest.mark.parametrize("strategy", ["auto", "switch"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_residual_rmsnorm_all_gpus(fi: Any, torch: Any, cuda: Any, trtllm_comm: None,
                                   rank_timeout: float, dtype: str,
                                   strategy: str, observe: Callable[[str, Any], None]) -> None:
    world = _need(torch, 2)
    results = run_ranks(fused_residual_rmsnorm, world, timeout=rank_timeout, dtype=dtype,
                        hidden=4096, tokens=TOKENS, strategy=strategy)
    observe(f"allreduce_fusion.residual_rmsnorm.{dtype}.{strategy}.world{world}",
            {n: {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}
             for n, row in results[0].items()})
    for rank, rows in enumerate(results):
        for n, row in rows.items():
            assert row["norm_rel_err"] < TOLERANCE[dtype], (rank, n, row)
            assert row["residual_rel_err"] < TOLERANCE[dtype], (rank, n, row)


def test_fp8_quant_pattern(fi: Any, torch: Any, cuda: Any, sm: int, trtllm_comm: None,
                           rank_timeout: float,
                           observe: Callable[[str, Any], None]) -> None:
    world = _need(torch, 2)
    if sm < 89:
        pytest.skip(f"fp8 needs sm_89 or newer, this is sm_{sm}")
    results = run_ranks(fused_residual_rmsnorm, world, timeout=rank_timeout,
                        dtype="bfloat16", hidden=4096, tokens=[64, 1024], fp8=True)
    observe(f"allreduce_fusion.fp8.world{world}",
            {n: row["fp8_convention"] for n, row in results[0].items()})
    for rows in results:
        for row in rows.values():
            assert row["norm_rel_err"] < TOLERANCE["bfloat16"]
            assert row["fp8_rel_err"] < 0.07  # e4m3 keeps 3 mantissa bits


def _run_subgroup(strategy: str, with_group: bool, timeout: float) -> dict[str, Any]:
    """One sub-group run as an observation: the sums it produced, or how it failed/hung."""
    try:
        results = run_ranks(subgroup_case, SUBGROUP_WORLD, timeout=timeout, tp=SUBGROUP_TP,
                            hidden=2048, strategy=strategy, with_group=with_group)
    except RanksError as exc:
        print(exc)  # every rank's traceback and stack, for the log
        kind = "hang" if isinstance(exc, RanksHung) else "error"
        return {"outcome": f"{kind}: {exc.summary.splitlines()[0][:300]}",
                "ranks": {str(o.rank): o.state + (f" during {o.phase}" if o.phase else "")
                          for o in exc.outcomes}}
    return summarize_subgroup(results)


@pytest.mark.parametrize("strategy", ["oneshot", "twoshot"])
def test_subgroup_contract(fi: Any, torch: Any, cuda: Any, trtllm_comm: None, rank_timeout: float,
                           strategy: str,
                           observe: Callable[[str, Any], None]) -> None:
    """Two tensor-parallel sub-groups of 2 ranks ({0,1}, {2,3}), the workspace built per
    sub-group, one-shot or two-shot forced, norm and residual both checked.

    (a) With ``group=<sub-group>`` (where the version has the parameter) every rank must match
    its own sub-group's float32 sum: asserted. (b) Without ``group`` (the version's default,
    WORLD) the outcome is recorded as what it is (matching sums, silently wrong sums, an error,
    or a hang turned into a failure by the rank deadline), so that the observation diff between
    two versions shows the contract change."""
    _need(torch, SUBGROUP_WORLD)
    from flashinfer import comm

    version = getattr(fi, "__version__", "?")
    key = f"allreduce_fusion.subgroup.tp{SUBGROUP_TP}.world{SUBGROUP_WORLD}.{strategy}"
    has_group = "group" in inspect.signature(comm.create_allreduce_fusion_workspace).parameters
    observe("create_allreduce_fusion_workspace.accepts_group", has_group)
    with_group: dict[str, Any] | None = None
    if has_group:
        with_group = _run_subgroup(strategy, True, rank_timeout)
        observe(f"{key}.with_group", with_group)
    else:
        observe(f"{key}.with_group", f"unsupported: flashinfer {version} has no group "
                "parameter (the workspace always rendezvous over WORLD)")
    observe(f"{key}.without_group", _run_subgroup(strategy, False, min(rank_timeout, 60.0)))
    if with_group is None:
        pytest.skip(f"flashinfer {version}: create_allreduce_fusion_workspace has no group "
                    "parameter; its WORLD-only behaviour in sub-groups is recorded")
    assert with_group["outcome"] == "matches the sub-group sums", (
        f"with group=<sub-group>, {strategy}: {with_group['outcome']}; per rank and token "
        f"count: {with_group['ranks']}")
