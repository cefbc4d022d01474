"""A target module calling kernelpkg through every import form."""

import kernelpkg
import kernelpkg.comm as comm
from kernelpkg import fp4_quantize as _fq
from kernelpkg.comm import create_workspace
from kernelpkg.quantization.fp4 import fp4_quantize as direct_fq

try:
    from kernelpkg.legacy import moved_fn
except ImportError:  # optional
    moved_fn = None


def forward(x, s, w, pdl, kwargs):
    a = _fq(x, s, 16, False, True, False, enable_pdl=pdl, backend="cuda")  # eight positional arguments
    b = kernelpkg.fp4_quantize(x, s, enable_pdl=pdl)
    c = kernelpkg.rmsnorm(x, w, eps=1e-6)
    d = kernelpkg.rmsnorm(x, w, 1e-6)
    e = kernelpkg.old_helper(x)
    g = direct_fq(x)
    h = moved_fn(x)
    ws = create_workspace("trtllm", 2, 0)
    ws2 = comm.create_workspace(**kwargs)
    kernelpkg.launch(x)
    kernelpkg.layernorm(x)
    kernelpkg.comm.create_workspace(
        "trtllm",
        2,  # world size
        0,
    )
    return a, b, c, d, e, g, h, ws, ws2
