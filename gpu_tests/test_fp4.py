"""fp4_quantize against the reference NVFP4 implementation, capability-aware; the host-side
dequantizers against the reference on every architecture."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("torch", reason="torch is not installed")

from fp4_probe import AGREE, fp4_skip_reason

import nvfp4_ref as ref

pytestmark = pytest.mark.gpu

SHAPES = [(128, 1024), (256, 4096), (200, 512), (1, 64), (1000, 2048)]  # rows % 128 and not


POISON = 0xAB


@pytest.fixture(scope="module")
def fp4_output_is_real(fi: Any, torch: Any, cuda: Any, sm: int,
                       observe: Callable[[str, Any], None]) -> bool:
    """Whether fp4_quantize really quantizes on this GPU; skips the numeric tests only where
    it writes nothing.

    FP4 (e2m1) conversion exists on sm_100 and newer. On sm_90 FlashInfer's kernel compiles
    and runs but never writes its outputs: measured on an H200, buffers poisoned with 0xAB and
    handed back by the caching allocator came back unchanged, and on fresh memory the output
    reads as all zero. The probe poisons both outputs (codes, then scales: the order in which
    fp4_quantize allocates them), quantizes, and compares with the reference. Any other
    mismatch runs the numeric tests, which then fail (fp4_probe.fp4_skip_reason)."""
    torch.manual_seed(0)
    rows, cols = 256, 1024
    x = torch.randn(rows, cols, device=cuda, dtype=torch.bfloat16)
    gs = ref.global_scale_for(x).to(cuda)
    poison = [torch.full((n,), POISON, dtype=torch.uint8, device=cuda)
              for n in (rows * cols // 2, rows * cols // 16)]
    torch.cuda.synchronize()
    del poison  # the allocator hands these blocks to the kernel's outputs
    q, sf = fi.fp4_quantize(x, gs, sf_vec_size=16, sf_use_ue8m0=False,
                            is_sf_swizzled_layout=False)
    torch.cuda.synchronize()
    qb, sfb = q.view(torch.uint8).cpu(), sf.view(torch.uint8).cpu().reshape(rows, -1)
    q_left = (qb == POISON).float().mean().item()
    sf_left = (sfb == POISON).float().mean().item()
    ref_q, ref_sf, _ = ref.quantize(x.cpu(), gs.cpu())
    agree: float = (ref.dequantize(qb, sfb, gs.cpu()) == ref.dequantize(ref_q, ref_sf, gs.cpu())
                    ).float().mean().item()
    observe("fp4_quantize.sm", sm)
    observe("fp4_quantize.poisoned_bytes_left", round(q_left, 5))
    observe("fp4_quantize.poisoned_scale_bytes_left", round(sf_left, 5))
    observe("fp4_quantize.reference_agreement", round(agree, 5))
    reason = fp4_skip_reason(sm, agree, q_left, sf_left)
    if reason:
        pytest.skip(reason)
    return agree >= AGREE


@pytest.mark.parametrize(("rows", "cols"), SHAPES)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("swizzled", [True, False], ids=["swizzled", "linear"])
def test_nvfp4_matches_reference(fi: Any, torch: Any, cuda: Any, sm: int,
                                 fp4_output_is_real: bool, rows: int,
                                 cols: int, dtype: str, swizzled: bool) -> None:
    torch.manual_seed(rows * 7 + cols)
    x = torch.randn(rows, cols, device=cuda, dtype=getattr(torch, dtype)) * 3
    gs = ref.global_scale_for(x).to(cuda)
    q, sf = fi.fp4_quantize(x, gs, sf_vec_size=16, sf_use_ue8m0=False,
                            is_sf_swizzled_layout=swizzled)
    assert q.shape == (rows, cols // 2)
    sf_bytes = sf.view(torch.uint8).cpu()
    if swizzled:
        sf_bytes = ref.unswizzle_128x4(sf_bytes.reshape(-1).reshape(
            (rows + 127) // 128 * 128, -1), rows, cols // 16)
    ref_q, ref_sf, _ = ref.quantize(x.cpu(), gs.cpu())
    assert (sf_bytes == ref_sf).float().mean().item() > 0.999
    got = ref.dequantize(q.view(torch.uint8).cpu(), sf_bytes, gs.cpu())
    want = ref.dequantize(ref_q, ref_sf, gs.cpu())
    assert (got != want).float().mean().item() < 1e-3  # ties may round either way
    rel = ((got - x.float().cpu()).norm() / x.float().cpu().norm()).item()
    assert rel < 0.15


def test_mxfp4_matches_reference(fi: Any, torch: Any, cuda: Any, sm: int,
                                 fp4_output_is_real: bool) -> None:
    if not hasattr(fi, "mxfp4_quantize"):
        pytest.skip(f"flashinfer {fi.__version__} has no mxfp4_quantize")
    torch.manual_seed(3)
    x = torch.randn(256, 1024, device=cuda, dtype=torch.bfloat16)
    q, sf = fi.mxfp4_quantize(x)
    got = fi.mxfp4_dequantize_host(q.cpu().view(torch.uint8), sf.cpu().view(torch.uint8))
    ref_q, ref_sf, _ = ref.quantize(x.cpu(), None, sf_vec_size=32, ue8m0=True)
    want = ref.dequantize(ref_q, ref_sf, None, sf_vec_size=32, ue8m0=True)
    assert ((got.float() - want).abs() > 1e-6).float().mean().item() < 1e-3


@pytest.mark.parametrize("swizzled", [False, True], ids=["linear", "swizzled"])
@pytest.mark.parametrize("rows", [128, 200])
def test_host_dequantize_matches_reference(fi: Any, torch: Any, cuda: Any, rows: int,
                                           swizzled: bool) -> None:
    """e2m1_and_ufp8sf_scale_to_float on CPU tensors, fed the reference's own codes and
    scales: this works on every architecture, sm_90 included."""
    torch.manual_seed(rows)
    x = torch.randn(rows, 512) * 5
    gs = ref.global_scale_for(x)
    packed, sf_bytes, _ = ref.quantize(x, gs)
    sf_in = ref.swizzle_128x4(sf_bytes) if swizzled else sf_bytes
    got = fi.e2m1_and_ufp8sf_scale_to_float(packed, sf_in.reshape(-1), (1 / gs), 16, 1,
                                            swizzled)
    want = ref.dequantize(packed, sf_bytes, gs)
    assert got.shape == want.shape
    torch.testing.assert_close(got.float(), want, rtol=1e-6, atol=0)


def test_host_dequantize_code_table(fi: Any, torch: Any, cuda: Any) -> None:
    """Hand-packed codes 0..15 with unit scales dequantize to the e2m1 table exactly."""
    codes = torch.arange(16, dtype=torch.uint8).repeat(1, 1)
    packed = ref.pack_codes(codes)
    one = torch.tensor([1.0]).to(torch.float8_e4m3fn).view(torch.uint8)
    got = fi.e2m1_and_ufp8sf_scale_to_float(packed, one.repeat(1), torch.tensor([1.0]), 16, 1,
                                            False)
    assert got.reshape(-1).tolist() == ref.e2m1_table().tolist()
