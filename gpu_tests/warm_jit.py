"""Build one group of FlashInfer's JIT modules (run with the install first on PYTHONPATH and
its FLASHINFER_WORKSPACE_BASE set), so that a device call can build every group of both
versions in parallel processes before the suites run:

    python gpu_tests/warm_jit.py {comm|norm|fp4|host}

comm: trtllm_comm (allreduce fusion; 135-177 s on an H200 host); norm: rmsnorm and
fused_add_rmsnorm; fp4: fp4_quantize and mxfp4_quantize on the GPU; host: the host-side
dequantizers. Prints the version, the group and the seconds it took."""

from __future__ import annotations

import sys
import time


def main(what: str) -> int:
    import flashinfer
    import torch

    start = time.monotonic()
    if what == "comm":
        from flashinfer.comm.trtllm_ar import get_trtllm_comm_module

        get_trtllm_comm_module()
    elif what == "norm":
        x = torch.randn(4, 4096, device="cuda", dtype=torch.bfloat16)
        w = torch.ones(4096, device="cuda", dtype=torch.bfloat16)
        flashinfer.rmsnorm(x, w, 1e-6)
        flashinfer.fused_add_rmsnorm(x, x.clone(), w, 1e-6)
    elif what == "fp4":
        x = torch.randn(128, 1024, device="cuda", dtype=torch.bfloat16)
        gs = torch.tensor([1.0], device="cuda")
        flashinfer.fp4_quantize(x, gs, sf_vec_size=16, is_sf_swizzled_layout=True)
        flashinfer.fp4_quantize(x, gs, sf_vec_size=16, is_sf_swizzled_layout=False)
        if hasattr(flashinfer, "mxfp4_quantize"):
            flashinfer.mxfp4_quantize(x)
    elif what == "host":
        packed = torch.zeros(1, 8, dtype=torch.uint8)
        sf = torch.ones(1, dtype=torch.float32).to(torch.float8_e4m3fn).view(torch.uint8)
        flashinfer.e2m1_and_ufp8sf_scale_to_float(packed, sf, torch.tensor([1.0]), 16, 1,
                                                  False)
        flashinfer.mxfp4_dequantize_host(torch.zeros(32, 16, dtype=torch.uint8),
                                         torch.full((32, 1), 127, dtype=torch.uint8))
    else:
        print(f"unknown group {what!r}", file=sys.stderr)
        return 2
    torch.cuda.synchronize()
    print(f"warm_jit {flashinfer.__version__} {what}: {time.monotonic() - start:.1f} s",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
