"""The per-rank bodies of the allreduce-fusion tests (importable by spawned processes).

Every case draws its own data: the seed comes from the case's name (dtype, hidden size, token
count, strategy, sub-group layout) and the rank, so 64, 128 and 129 tokens check different
rows. ``impl="cpu"`` replaces FlashInfer by a torch implementation on gloo, so the harness, the
references and the classification run (and can be shown to fail) without a GPU.
"""

from __future__ import annotations

import zlib
from typing import Any

TOLERANCE = {"bfloat16": 3e-2, "float16": 5e-3, "float32": 1e-5}  # max|got-ref| / max|ref|
ONESHOT_MAX_TOKENS = 128  # TRT-LLM's kOneShotMaxToken
TOKENS = [1, 64, 128, 129, 1024]  # both sides of the one-shot / two-shot switch
# The sub-group contract: two-shot needs more tokens than ranks; both kernels see two sizes.
SUBGROUP_TOKENS = {"oneshot": [16, 128], "twoshot": [129, 256]}
EPS = 1e-6


def case_seed(*parts: object) -> int:
    """A seed of its own for every case and rank (stable across runs and processes)."""
    return zlib.crc32("/".join(str(p) for p in parts).encode()) & 0x7FFFFFFF


def make_inputs(case: str, n: int, hidden: int, dtype: str, rank: int, group_index: int,
                device: str) -> tuple[Any, Any, Any]:
    """x (this rank's own), residual and gamma (shared by the ranks of one group)."""
    import torch

    dt = getattr(torch, dtype)
    own = torch.Generator(device=device).manual_seed(case_seed(case, n, hidden, "x", rank))
    shared = torch.Generator(device=device).manual_seed(
        case_seed(case, n, hidden, "shared", group_index))
    x = torch.randn(n, hidden, device=device, dtype=dt, generator=own)
    residual = torch.randn(n, hidden, device=device, dtype=dt, generator=shared)
    gamma = torch.randn(hidden, device=device, dtype=dt, generator=shared)
    return x, residual, gamma


def _rmsnorm(x: Any, gamma: Any, eps: float) -> Any:
    import torch

    var = x.pow(2).mean(dim=-1, keepdim=True)
    return x * torch.rsqrt(var + eps) * gamma


def reference(x: Any, residual: Any, gamma: Any, group: Any = None) -> tuple[Any, Any]:
    """float32 residual (sum over ``group`` + residual) and RMSNorm of it."""
    import torch.distributed as dist

    summed = x.float().clone()
    dist.all_reduce(summed, group=group)
    ref_res = summed + residual.float()
    return ref_res, _rmsnorm(ref_res, gamma.float(), EPS)


def rel_err(got: Any, want: Any) -> float:
    scale = want.abs().max().item() or 1.0
    err = (got.float() - want).abs().max().item() / scale
    return err if err == err else float("inf")  # NaN (garbage) counts as unbounded


def classify(norm_out: Any, residual_out: Any, refs: dict[str, tuple[Any, Any]], tol: float
             ) -> dict[str, Any]:
    """Which reference (e.g. "subgroup", "world") the fused outputs match, norm and residual
    both, and the errors against each."""
    row: dict[str, Any] = {}
    match = "neither"
    for name, (ref_res, ref_norm) in refs.items():
        en, er = rel_err(norm_out, ref_norm), rel_err(residual_out, ref_res)
        row[f"{name}_norm_err"], row[f"{name}_residual_err"] = en, er
        if match == "neither" and en < tol and er < tol:
            match = name
    row["match"] = match
    return row


class _CpuWorkspace:
    """impl="cpu": what a correct (``group`` honoured) or a WORLD-bound workspace computes."""

    def __init__(self, group: Any, honours_group: bool) -> None:
        self.group = group if honours_group else None

    def destroy(self) -> None:
        pass


def _workspace(impl: str, kwargs: dict[str, Any]) -> Any:
    if impl == "flashinfer":
        from flashinfer import comm

        return comm.create_allreduce_fusion_workspace(**kwargs)
    return _CpuWorkspace(kwargs.get("group"), honours_group=impl == "cpu")


def _fused(impl: str, workspace: Any, x: Any, residual: Any, gamma: Any, extra: dict[str, Any],
           fp8: bool) -> tuple[Any, Any]:
    import torch

    residual_out, norm_out = torch.empty_like(x), torch.empty_like(x)
    if impl == "flashinfer":
        from flashinfer import comm

        pattern = (comm.AllReduceFusionPattern.kARResidualRMSNormOutFP8Quant if fp8
                   else comm.AllReduceFusionPattern.kARResidualRMSNorm)
        comm.allreduce_fusion(input=x, workspace=workspace, pattern=pattern,
                              launch_with_pdl=False, residual_out=residual_out,
                              norm_out=norm_out, residual_in=residual, rms_gamma=gamma,
                              rms_eps=EPS, **extra)
        torch.cuda.synchronize()
    else:
        ref_res, ref_norm = reference(x, residual, gamma, group=workspace.group)
        residual_out.copy_(ref_res)
        norm_out.copy_(ref_norm)
    return residual_out, norm_out


def _device(impl: str) -> str:
    return "cuda" if impl == "flashinfer" else "cpu"


def fused_residual_rmsnorm(rank: int, world: int, *, dtype: str, hidden: int,
                           tokens: list[int], fp8: bool = False, strategy: str = "auto",
                           impl: str = "flashinfer") -> dict[str, Any]:
    """allreduce_fusion(kARResidualRMSNorm) across all ranks against NCCL all_reduce +
    residual + RMSNorm in float32. ``strategy``: "auto" lets FlashInfer pick one-shot or
    two-shot (what SGLang does); "switch" forces one-shot up to 128 tokens and two-shot above,
    so both kernels run whatever the heuristic says."""
    import torch

    kwargs: dict[str, Any] = dict(backend="trtllm", world_size=world, rank=rank,
                                  max_token_num=max(tokens), hidden_dim=hidden,
                                  dtype=getattr(torch, dtype))
    workspace = _workspace(impl, kwargs)
    case = f"world{world}/{dtype}/{strategy}/{'fp8' if fp8 else 'norm'}"
    out: dict[str, Any] = {}
    try:
        for n in tokens:
            x, residual, gamma = make_inputs(case, n, hidden, dtype, rank, 0, _device(impl))
            ref_res, ref_norm = reference(x, residual, gamma)
            extra: dict[str, Any] = {}
            if fp8:
                extra = dict(quant_out=torch.empty(n, hidden, device=x.device,
                                                   dtype=torch.float8_e4m3fn),
                             scale_factor=torch.tensor([0.5], device=x.device,
                                                       dtype=torch.float32))
            if strategy == "switch":
                extra["use_oneshot"] = n <= ONESHOT_MAX_TOKENS
            residual_out, norm_out = _fused(impl, workspace, x, residual, gamma, extra, fp8)
            row: dict[str, Any] = {"norm_rel_err": rel_err(norm_out, ref_norm),
                                   "residual_rel_err": rel_err(residual_out, ref_res),
                                   "oneshot": extra.get("use_oneshot", "auto")}
            if fp8:
                q = extra["quant_out"].float()
                scale_ref = ref_norm.abs().max().item()
                # Either convention of the scale (multiply or divide), consistently applied
                errs = {k: (q * s - norm_out.float()).abs().max().item() / scale_ref
                        for k, s in (("divide", 0.5), ("multiply", 2.0))}
                row["fp8_convention"] = min(errs, key=errs.__getitem__)
                row["fp8_rel_err"] = min(errs.values())
            out[str(n)] = row
    finally:
        workspace.destroy()
    return out


def subgroup_case(rank: int, world: int, *, tp: int, hidden: int, strategy: str,
                  with_group: bool, dtype: str = "bfloat16",
                  impl: str = "flashinfer") -> dict[str, Any]:
    """Ranks in tensor-parallel sub-groups of ``tp`` ({0,1}, {2,3} for 4 ranks and tp=2), the
    workspace built per sub-group (``world_size=tp, rank=rank % tp``) with ``group=`` that
    sub-group or without it (the version's default: WORLD). For each token count of
    ``strategy`` (one-shot or two-shot forced), the fused outputs are compared with the float32
    references of the sub-group's sum and of the world's sum, norm and residual both.

    impl: "flashinfer"; "cpu" (a correct implementation) or "cpu-world" (one that ignores
    ``group``, as a WORLD-bound workspace would) for the CPU tests."""
    import torch
    import torch.distributed as dist

    groups = [dist.new_group(list(range(s, s + tp))) for s in range(0, world, tp)]
    index = rank // tp
    group = groups[index]
    tokens = SUBGROUP_TOKENS[strategy]
    kwargs: dict[str, Any] = dict(backend="trtllm", world_size=tp, rank=rank % tp,
                                  max_token_num=max(tokens), hidden_dim=hidden,
                                  dtype=getattr(torch, dtype))
    if with_group:
        kwargs["group"] = group
    workspace = _workspace(impl, kwargs)
    case = f"subgroup/tp{tp}/world{world}/{dtype}/{strategy}"
    out: dict[str, Any] = {}
    try:
        for n in tokens:
            x, residual, gamma = make_inputs(case, n, hidden, dtype, rank, index,
                                             _device(impl))
            refs = {"subgroup": reference(x, residual, gamma, group=group),
                    "world": reference(x, residual, gamma)}
            residual_out, norm_out = _fused(impl, workspace, x, residual, gamma,
                                            {"use_oneshot": strategy == "oneshot"}, False)
            out[str(n)] = classify(norm_out, residual_out, refs, TOLERANCE[dtype])
    finally:
        workspace.destroy()
    return out


def summarize_subgroup(per_rank: list[dict[str, Any]]) -> dict[str, Any]:
    """The observation of one sub-group run: an outcome and, per rank and token count, which
    sum the outputs matched and the error against the sub-group's (2 significant digits, so
    that noise in the last bits does not show as a behaviour change)."""
    ranks: dict[str, Any] = {}
    matches = set()
    for rank, rows in enumerate(per_rank):
        ranks[str(rank)] = {n: {"match": row["match"],
                                "norm_err": float(f"{row['subgroup_norm_err']:.2g}"),
                                "residual_err": float(f"{row['subgroup_residual_err']:.2g}")}
                            for n, row in rows.items()}
        matches |= {row["match"] for row in rows.values()}
    if matches == {"subgroup"}:
        outcome = "matches the sub-group sums"
    elif matches == {"world"}:
        outcome = "matches the world sums"
    else:
        wrong = sorted(f"rank {r} at {n} tokens" for r, rows in ranks.items()
                       for n, row in rows.items() if row["match"] != "subgroup")
        outcome = "wrong sums (silently): " + ", ".join(wrong)
    return {"outcome": outcome, "ranks": ranks}
