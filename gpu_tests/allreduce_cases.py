"""The per-rank bodies of the allreduce-fusion tests (importable by spawned processes)."""

from __future__ import annotations

from typing import Any

TOLERANCE = {"bfloat16": 3e-2, "float16": 5e-3}  # max |fused - reference| / max |reference|
ONESHOT_MAX_TOKENS = 128  # TRT-LLM's kOneShotMaxToken
TOKENS = [1, 64, 128, 129, 1024]  # both sides of the one-shot / two-shot switch


def _rmsnorm(x, gamma, eps: float):
    import torch

    var = x.pow(2).mean(dim=-1, keepdim=True)
    return x * torch.rsqrt(var + eps) * gamma


def fused_residual_rmsnorm(rank: int, world: int, *, dtype: str, hidden: int,
                           tokens: list[int], tp: int | None = None, fp8: bool = False,
                           strategy: str = "auto") -> dict[str, Any]:
    """allreduce_fusion(kARResidualRMSNorm) against NCCL all_reduce + residual + RMSNorm in
    float32. With ``tp``, ranks form tensor-parallel groups of ``tp`` and the workspace is
    created with ``group=`` that subgroup. ``strategy``: "auto" lets FlashInfer pick one-shot
    or two-shot (what SGLang does); "switch" forces one-shot up to 128 tokens and two-shot
    above, so both kernels run whatever the heuristic says."""
    import torch
    import torch.distributed as dist
    from flashinfer import comm

    dt = getattr(torch, dtype)
    group, group_rank, group_size = None, rank, world
    if tp:
        groups = [dist.new_group(list(range(s, s + tp))) for s in range(0, world, tp)]
        group = groups[rank // tp]
        group_rank, group_size = rank % tp, tp
    kwargs: dict[str, Any] = dict(backend="trtllm", world_size=group_size, rank=group_rank,
                                  max_token_num=max(tokens), hidden_dim=hidden, dtype=dt)
    if group is not None:
        kwargs["group"] = group
    workspace = comm.create_allreduce_fusion_workspace(**kwargs)
    pattern = (comm.AllReduceFusionPattern.kARResidualRMSNormOutFP8Quant if fp8
               else comm.AllReduceFusionPattern.kARResidualRMSNorm)
    out: dict[str, Any] = {}
    try:
        for n in tokens:
            gen = torch.Generator(device="cuda").manual_seed(1000 + rank)
            x = torch.randn(n, hidden, device="cuda", dtype=dt, generator=gen)
            shared = torch.Generator(device="cuda").manual_seed(7 + (rank // tp if tp else 0))
            residual = torch.randn(n, hidden, device="cuda", dtype=dt, generator=shared)
            gamma = torch.randn(hidden, device="cuda", dtype=dt, generator=shared)
            summed = x.float().clone()
            dist.all_reduce(summed, group=group)
            ref_res = summed + residual.float()
            ref_norm = _rmsnorm(ref_res, gamma.float(), 1e-6)
            residual_out = torch.empty_like(x)
            norm_out = torch.empty_like(x)
            extra: dict[str, Any] = {}
            scale = torch.tensor([0.5], device="cuda", dtype=torch.float32)
            if fp8:
                extra = dict(quant_out=torch.empty(n, hidden, device="cuda",
                                                   dtype=torch.float8_e4m3fn),
                             scale_factor=scale)
            if strategy == "switch":
                extra["use_oneshot"] = n <= ONESHOT_MAX_TOKENS
            comm.allreduce_fusion(input=x, workspace=workspace, pattern=pattern,
                                  launch_with_pdl=False, residual_out=residual_out,
                                  norm_out=norm_out, residual_in=residual, rms_gamma=gamma,
                                  rms_eps=1e-6, **extra)
            torch.cuda.synchronize()
            scale_ref = ref_norm.abs().max().item()
            err_norm = (norm_out.float() - ref_norm).abs().max().item() / scale_ref
            err_res = (residual_out.float() - ref_res).abs().max().item() / \
                ref_res.abs().max().item()
            row: dict[str, Any] = {"norm_rel_err": err_norm, "residual_rel_err": err_res,
                                   "oneshot": extra.get("use_oneshot", "auto")}
            if fp8:
                q = extra["quant_out"].float()
                # Either convention of the scale (multiply or divide), consistently applied
                errs = {k: (q * s - norm_out.float()).abs().max().item() / scale_ref
                        for k, s in (("divide", 0.5), ("multiply", 2.0))}
                row["fp8_convention"] = min(errs, key=errs.get)
                row["fp8_rel_err"] = min(errs.values())
            out[str(n)] = row
    finally:
        workspace.destroy()
    return out
