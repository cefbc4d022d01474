"""FP4 helpers (an excerpt in the shape of sglang/srt/layers/quantization)."""

import torch

try:
    from flashinfer import fp4_quantize as _flashinfer_fp4_quantize
except ImportError:  # flashinfer is optional on non-CUDA platforms
    _flashinfer_fp4_quantize = None

import flashinfer.comm as comm


def quantize_nvfp4(x: torch.Tensor, global_scale: torch.Tensor, enable_pdl: bool):
    # Eight positional arguments: input, global_scale, sf_vec_size, sf_use_ue8m0,
    # is_sf_swizzled_layout, is_sf_8x4_layout, enable_pdl, backend.
    return _flashinfer_fp4_quantize(x, global_scale, 16, False, True, False, enable_pdl, "cuda")


def make_allreduce_workspace(tp_rank: int, tp_size: int, max_tokens: int, hidden: int, group):
    kwargs = dict(backend="trtllm", world_size=tp_size, rank=tp_rank,
                  max_token_num=max_tokens, hidden_dim=hidden)
    return comm.create_allreduce_fusion_workspace(**kwargs)
