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
    (26, "kernelpkg.layernorm", "notice", "default of `eps` changed: 1e-05 -> 1e-06", ""),
    (27, "kernelpkg.comm.create_workspace", "notice", "new optional parameter `group=None`", ""),
]
