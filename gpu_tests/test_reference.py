"""The reference NVFP4/MXFP4 implementation checks itself (CPU torch; no GPU needed)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import nvfp4_ref as ref  # noqa: E402


def test_code_table_and_packing() -> None:
    codes = torch.arange(16, dtype=torch.uint8).reshape(2, 8)
    packed = ref.pack_codes(codes)
    assert packed.tolist() == [[0x10, 0x32, 0x54, 0x76], [0x98, 0xBA, 0xDC, 0xFE]]
    assert torch.equal(ref.unpack_codes(packed), codes)
    table = ref.e2m1_table()
    assert table[:8].tolist() == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    assert table[8:].tolist() == [-0.0, -0.5, -1, -1.5, -2, -3, -4, -6]


@pytest.mark.parametrize(("value", "expected"), [
    (0.25, 0.0), (0.26, 0.5), (0.75, 1.0), (1.25, 1.0), (1.75, 2.0), (2.5, 2.0), (2.6, 3.0),
    (3.5, 4.0), (5.0, 4.0), (5.1, 6.0), (-0.74, -0.5), (-6.0, -6.0),
])
def test_rounding_ties_to_even(value: float, expected: float) -> None:
    code = ref.round_to_e2m1_codes(torch.tensor([value]))
    assert ref.e2m1_table()[code.long()].item() == expected


@pytest.mark.parametrize("rows", [128, 200])
def test_swizzle_round_trip(rows: int) -> None:
    sf = torch.randint(0, 255, (rows, 256 // 16), dtype=torch.uint8)
    sw = ref.swizzle_128x4(sf)
    assert sw.shape == ((rows + 127) // 128 * 128, 16)
    assert torch.equal(ref.unswizzle_128x4(sw, rows, 16), sf)
    # element (r, c) of a 128-row tile sits at 512*(c//4) + 16*(r%32) + 4*(r//32) + c%4
    flat = sw.reshape(-1)
    for r, c in ((0, 0), (33, 5), (127, 15), (64, 2)):
        assert flat[512 * (c // 4) + 16 * (r % 32) + 4 * (r // 32) + c % 4] == sf[r, c]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_nvfp4_round_trip_error(dtype: str) -> None:
    torch.manual_seed(0)
    x = torch.randn(256, 512, dtype=getattr(torch, dtype))
    gs = ref.global_scale_for(x)
    packed, sf_bytes, _ = ref.quantize(x, gs)
    back = ref.dequantize(packed, sf_bytes, gs)
    rel = (back - x.float()).norm() / x.float().norm()
    assert 0.05 < rel < 0.15, rel  # 4-bit values: about 9% relative error on Gaussian data
    blockwise = (back - x.float()).abs().reshape(256, -1, 16).amax(-1)
    bound = (x.float().abs().reshape(256, -1, 16).amax(-1) / 6) * 1.0 * 1.07
    assert (blockwise <= bound + 1e-6).all()  # at most half the widest e2m1 step, scale rounded


def test_mxfp4_scales_are_powers_of_two() -> None:
    torch.manual_seed(1)
    x = torch.randn(64, 256)
    packed, sf_bytes, scale = ref.quantize(x, None, sf_vec_size=32, ue8m0=True)
    assert torch.equal(torch.log2(scale), torch.log2(scale).round())
    back = ref.dequantize(packed, sf_bytes, None, sf_vec_size=32, ue8m0=True)
    assert (back - x).norm() / x.norm() < 0.2
