"""A reference implementation of NVFP4 / MXFP4 block quantization, in plain torch.

NVFP4: values are e2m1 (codes 0..15: bit 3 the sign, bits 2..0 index into
0, 0.5, 1, 1.5, 2, 3, 4, 6), two per byte (low nibble first); every ``sf_vec_size`` (16)
consecutive values share an e4m3 scale factor; a float32 global scale maps the tensor's range
into what e4m3 scales can express: ``scale = e4m3(global_scale * amax(block) / 6)`` and
``q = round_e2m1(x * global_scale / scale)``; dequantized ``x ~ q * scale / global_scale``.
MXFP4: ``sf_vec_size`` 32, scales are UE8M0 (powers of two), no global scale.

Scale factors come in a linear [rows, k / sf_vec_size] layout, or the 128x4 swizzled layout
(rows padded to 128 and scale columns to 4, tiles of 128 x 4 stored as 32 x 4 x 4).
"""

from __future__ import annotations

import torch

E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
E2M1_MAX = 6.0
E4M3_MAX = 448.0


def e2m1_table(device: torch.device | str = "cpu") -> torch.Tensor:
    """Float value of each of the 16 codes."""
    mags = torch.tensor(E2M1_VALUES, dtype=torch.float32, device=device)
    return torch.cat([mags, -mags])


def round_to_e2m1_codes(x: torch.Tensor) -> torch.Tensor:
    """Round float32 values (already clamped to [-6, 6]) to the nearest e2m1 code, ties to the
    even code, as the hardware conversion does."""
    mag = x.abs()
    # midpoints between representable magnitudes; a tie rounds to the even code
    code = torch.zeros_like(mag, dtype=torch.uint8)
    bounds = ((0.25, False), (0.75, True), (1.25, False), (1.75, True), (2.5, False),
              (3.5, True), (5.0, False))
    for i, (mid, up_on_tie) in enumerate(bounds):
        above = mag > mid if not up_on_tie else mag >= mid
        code = torch.where(above, torch.full_like(code, i + 1), code)
    sign = (x < 0) & (code > 0)
    return code | (sign.to(torch.uint8) << 3)


def pack_codes(codes: torch.Tensor) -> torch.Tensor:
    """[m, k] codes -> [m, k/2] bytes, low nibble = even column."""
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).to(torch.uint8)


def unpack_codes(packed: torch.Tensor) -> torch.Tensor:
    m, half = packed.shape
    out = torch.empty(m, half * 2, dtype=torch.uint8, device=packed.device)
    out[:, 0::2] = packed & 0x0F
    out[:, 1::2] = packed >> 4
    return out


def _ue8m0_round_up(scale: torch.Tensor) -> torch.Tensor:
    """The next power of two at or above ``scale`` (as UE8M0 stores it)."""
    bits = scale.contiguous().view(torch.int32)
    bits = (bits + 0x007FFFFF) & 0x7F800000
    return bits.view(torch.float32)


def quantize(x: torch.Tensor, global_scale: torch.Tensor | float | None,
             sf_vec_size: int = 16, ue8m0: bool = False
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Reference quantization of a [m, k] tensor.

    Returns (packed codes [m, k/2] uint8, scale bytes [m, k/sf] uint8, scales as float32).
    """
    m, k = x.shape
    assert k % sf_vec_size == 0
    gs = torch.as_tensor(1.0 if global_scale is None else global_scale,
                         dtype=torch.float32, device=x.device).reshape(-1)[0]
    blocks = x.float().reshape(m, k // sf_vec_size, sf_vec_size)
    amax = blocks.abs().amax(dim=-1)
    raw = gs * amax / E2M1_MAX
    if ue8m0:
        scale = _ue8m0_round_up(raw.clamp(min=2.0 ** -127))
        scale_bytes = ((scale.view(torch.int32) >> 23) & 0xFF).to(torch.uint8)
    else:
        scale = raw.clamp(max=E4M3_MAX).to(torch.float8_e4m3fn).float()
        scale_bytes = scale.to(torch.float8_e4m3fn).view(torch.uint8)
    inv = torch.where(scale > 0, gs / scale, torch.zeros_like(scale))
    scaled = (blocks * inv.unsqueeze(-1)).clamp(-E2M1_MAX, E2M1_MAX).reshape(m, k)
    return pack_codes(round_to_e2m1_codes(scaled)), scale_bytes, scale


def scale_bytes_to_float(scale_bytes: torch.Tensor, ue8m0: bool = False) -> torch.Tensor:
    if ue8m0:
        return torch.pow(2.0, scale_bytes.float() - 127.0)
    return scale_bytes.view(torch.float8_e4m3fn).float()


def dequantize(packed: torch.Tensor, scale_bytes: torch.Tensor,
               global_scale: torch.Tensor | float | None, sf_vec_size: int = 16,
               ue8m0: bool = False) -> torch.Tensor:
    """Reference dequantization of linear-layout data to float32."""
    gs = torch.as_tensor(1.0 if global_scale is None else global_scale,
                         dtype=torch.float32, device=packed.device).reshape(-1)[0]
    values = e2m1_table(packed.device)[unpack_codes(packed).long()]
    scales = scale_bytes_to_float(scale_bytes, ue8m0).repeat_interleave(sf_vec_size, dim=-1)
    return values * scales / gs


def swizzle_128x4(scale_bytes: torch.Tensor) -> torch.Tensor:
    """Linear [m, k/sf] scale bytes -> the 128x4 swizzled layout, padded, as [m_pad, k_pad]."""
    m, n = scale_bytes.shape
    m_pad, n_pad = (m + 127) // 128 * 128, (n + 3) // 4 * 4
    padded = torch.zeros(m_pad, n_pad, dtype=scale_bytes.dtype, device=scale_bytes.device)
    padded[:m, :n] = scale_bytes
    tiles = padded.reshape(m_pad // 128, 4, 32, n_pad // 4, 4)  # row = 32*i + r, col = 4*j + c
    return tiles.permute(0, 3, 2, 1, 4).reshape(m_pad, n_pad).contiguous()


def unswizzle_128x4(swizzled: torch.Tensor, m: int, n: int) -> torch.Tensor:
    """Inverse of ``swizzle_128x4``: back to linear [m, n]."""
    m_pad, n_pad = (m + 127) // 128 * 128, (n + 3) // 4 * 4
    tiles = swizzled.reshape(m_pad // 128, n_pad // 4, 32, 4, 4)
    return tiles.permute(0, 3, 2, 1, 4).reshape(m_pad, n_pad)[:m, :n]


def global_scale_for(x: torch.Tensor) -> torch.Tensor:
    """The usual NVFP4 global scale: map amax(x) onto e4m3_max * e2m1_max."""
    return (E4M3_MAX * E2M1_MAX / x.float().abs().amax()).reshape(1)
