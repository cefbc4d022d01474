"""Two versions of a small package (kernelpkg 1.0 and 2.0) with every kind of API change,
and a target that calls it through every import form."""

from __future__ import annotations

V1 = {
    "kernelpkg/__init__.py": (
        "from kernelpkg.quantization.fp4 import fp4_quantize\n"
        "from kernelpkg.norm import rmsnorm, layernorm\n"
        "from kernelpkg import comm\n\n\n"
        "def old_helper(x):\n    return x\n\n\n"
        "def launch(x):\n    return x\n"),
    "kernelpkg/quantization/__init__.py": "",
    "kernelpkg/quantization/fp4.py": (
        "def fp4_quantize(input, global_scale=None, sf_vec_size=16, sf_use_ue8m0=False,\n"
        "                 is_sf_swizzled_layout=True, is_sf_8x4_layout=False, enable_pdl=None,\n"
        "                 backend='cuda'):\n    return input\n"),
    "kernelpkg/norm.py": (
        "def rmsnorm(x, weight, eps=1e-6):\n    return x\n\n\n"
        "def layernorm(x, eps=1e-5):\n    return x\n"),
    "kernelpkg/comm/__init__.py": "from kernelpkg.comm.allreduce import create_workspace\n",
    "kernelpkg/comm/allreduce.py": (
        "def create_workspace(backend='auto', world_size=None, rank=None):\n"
        "    return None\n"),
    "kernelpkg/legacy.py": "def moved_fn(x):\n    return x\n",
    "kernelpkg/data/vendored/thirdparty.py": "def not_part_of_the_api():\n    pass\n",
    "build_helper.py": "def helper():\n    pass\n",
}

V2 = {
    "kernelpkg/__init__.py": (
        "from kernelpkg.quant.fp4 import fp4_quantize\n"
        "from kernelpkg.norm import rmsnorm, layernorm\n"
        "from kernelpkg import comm\n\n\n"
        "def launch(x, stream):\n    return x\n"),
    "kernelpkg/quant/__init__.py": "",
    "kernelpkg/quant/fp4.py": (
        "def fp4_quantize(input, global_scale=None, sf_vec_size=16, sf_use_ue8m0=False,\n"
        "                 is_sf_swizzled_layout=True, is_sf_8x4_layout=False,\n"
        "                 is_global_scale_inversed=False, enable_pdl=None, backend='cuda'):\n"
        "    return input\n"),
    "kernelpkg/norm.py": (
        "def rmsnorm(x, weight, epsilon=1e-6):\n    return x\n\n\n"
        "def layernorm(x, eps=1e-6):\n    return x\n"),
    "kernelpkg/comm/__init__.py": "from kernelpkg.comm.allreduce import create_workspace\n",
    "kernelpkg/comm/allreduce.py": (
        "def create_workspace(backend='auto', world_size=None, rank=None, group=None):\n"
        "    return None\n"),
    "kernelpkg/utils.py": "def moved_fn(x):\n    return x\n",
}

TARGET = '''"""A target module calling kernelpkg through every import form."""

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
    a = _fq(x, s, 16, False, True, False, pdl, "cuda")  # eight positional arguments
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
'''

EXPECTED = [
    # (line, function, severity, change fragment, detail fragment)
    (16, "kernelpkg.fp4_quantize", "breaking",
     "parameter `is_global_scale_inversed` inserted before `enable_pdl`",
     "positional argument 7 bound to `enable_pdl` and now binds to `is_global_scale_inversed`"),
    (18, "kernelpkg.rmsnorm", "breaking", "parameter `eps` renamed to `epsilon`",
     "keyword `eps` no longer exists"),
    (20, "kernelpkg.old_helper", "breaking", "`kernelpkg.old_helper` was removed", ""),
    (21, "kernelpkg.quantization.fp4.fp4_quantize", "breaking",
     "moved to `kernelpkg.quant.fp4.fp4_quantize` without a re-export", ""),
    (22, "kernelpkg.legacy.moved_fn", "breaking", "moved to `kernelpkg.utils.moved_fn`", ""),
    (25, "kernelpkg.launch", "breaking", "new required parameter `stream`",
     "new required parameter `stream` is not passed"),
    (24, "kernelpkg.comm.create_workspace", "unverifiable",
     "new optional parameter `group=None`", "passed through **kwargs"),
    (17, "kernelpkg.fp4_quantize", "notice", "inserted before `enable_pdl`", "binds as before"),
    (19, "kernelpkg.rmsnorm", "notice", "parameter `eps` renamed to `epsilon`", "binds as"),
    (23, "kernelpkg.comm.create_workspace", "notice", "new optional parameter `group=None`", ""),
    # a changed default the call leaves to its default: binds fine, computes differently
    (26, "kernelpkg.layernorm", "review", "default of `eps` changed: 1e-05 -> 1e-06",
     "check that the new default suits this call: `eps` now defaults to `1e-06`"),
    (27, "kernelpkg.comm.create_workspace", "notice", "new optional parameter `group=None`", ""),
]


# -- every way a target reaches the package without a plain import-and-call ------------------
GEMM_V1 = ("class Sm120BlockScaledDenseGemmKernel:\n"
           "    def __init__(self, m, n, k):\n        self.m = m\n\n"
           "    def run(self, a, b):\n        return a\n\n"
           "    def configure(self, tile):\n        return tile\n")
REACH_V1 = {**V1,
            "kernelpkg/gemm.py": GEMM_V1,
            "kernelpkg/fused_moe.py": "def b12x_fused_moe(x, scale):\n    return x\n\n\n"
                                      "def cutlass_fused_moe(x):\n    return x\n"}
REACH_V2 = {**V2,
            # 2.0 renamed the class: same members, same body
            "kernelpkg/gemm.py": GEMM_V1.replace("Sm120BlockScaledDenseGemmKernel",
                                                 "Sm120BlockScaledGemmKernel"),
            "kernelpkg/fused_moe.py": "def cutlass_fused_moe(x):\n    return x\n"}

REACH = '''"""Reaching kernelpkg the ways real serving code does."""
import importlib

_comm = None
try:
    from kernelpkg import comm
    _comm_alias = comm
except ImportError:
    comm = None


def init_comm():
    global _comm
    try:
        import kernelpkg.comm as c
        _comm = c
    except ImportError:
        _comm = None


class Runner:
    def __init__(self):
        import kernelpkg
        self._comm = kernelpkg.comm

    def workspace(self):
        return self._comm.create_workspace("trtllm", 2, 0)


def through_global():
    return _comm.create_workspace("trtllm", 2, 0)


def through_alias(kw):
    return _comm_alias.create_workspace(backend="auto")


def through_importlib(x, w):
    norm = importlib.import_module("kernelpkg.norm")
    return norm.rmsnorm(x, w, eps=1e-6)


def through_getattr(x, w):
    pkg = importlib.import_module("kernelpkg")
    fn = getattr(pkg, "rmsnorm")
    return fn(x, w, eps=1e-6), getattr(pkg, "layernorm")(x)


_KERNELS = {"dense": ("kernelpkg.gemm", "Sm120BlockScaledDenseGemmKernel")}


def lazy(x):
    moe = _lazy_import_wrapper("kernelpkg.fused_moe", "b12x_fused_moe")
    gemm = _get_submodule("kernelpkg.gemm")
    if hasattr(gemm, "Sm120BlockScaledDenseGemmKernel"):
        return moe(x, 1.0)
    return None
'''

REACH_EXPECTED = [
    # (line, kind, via, path)
    (27, "call", "", "kernelpkg.comm.create_workspace"),  # self._comm = kernelpkg.comm
    (31, "call", "", "kernelpkg.comm.create_workspace"),  # global _comm, set in try:
    (35, "call", "", "kernelpkg.comm.create_workspace"),  # _comm_alias = comm
    (39, "reference", "string", "kernelpkg.norm"),  # importlib.import_module("kernelpkg.norm")
    (40, "call", "", "kernelpkg.norm.rmsnorm"),  # ... and a call through it
    (45, "reference", "getattr", "kernelpkg.rmsnorm"),  # fn = getattr(pkg, "rmsnorm")
    (46, "call", "", "kernelpkg.rmsnorm"),  # fn(...)
    (46, "call", "", "kernelpkg.layernorm"),  # getattr(pkg, "layernorm")(x)
    (49, "reference", "string", "kernelpkg.gemm.Sm120BlockScaledDenseGemmKernel"),  # a pair
    (53, "reference", "string", "kernelpkg.fused_moe.b12x_fused_moe"),  # a lazy wrapper
    (54, "reference", "string", "kernelpkg.gemm"),  # _get_submodule("kernelpkg.gemm")
    (55, "reference", "hasattr", "kernelpkg.gemm.Sm120BlockScaledDenseGemmKernel"),
    (56, "call", "", "kernelpkg.fused_moe.b12x_fused_moe"),  # the wrapper's result, called
]
