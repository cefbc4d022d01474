"""The API the target relies on: keyword binding, accepted shapes, new parameters. These run
for real on every architecture (sm_90 included); behaviour that may legitimately differ between
versions is recorded as an observation, so the gate report shows the diff."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("torch", reason="torch is not installed")

import nvfp4_ref as ref

pytestmark = pytest.mark.gpu

Observe = Callable[[str, Any], None]  # conftest's observe fixture


def test_fp4_quantize_binds_every_keyword_the_target_passes(fi: Any, torch: Any, cuda: Any,
                                                            contract: dict[str, Any],
                                                            observe: Observe) -> None:
    sig = inspect.signature(fi.fp4_quantize)
    observe("fp4_quantize.signature", str(sig))
    wanted = contract["fp4_quantize"]["keywords"]
    missing = [k for k in wanted if k not in sig.parameters]
    assert not missing, f"fp4_quantize has no parameter(s) {missing}: {sig}"
    x = torch.randn(256, 1024, device=cuda, dtype=torch.bfloat16)
    values = {"input": x, "global_scale": ref.global_scale_for(x).to(cuda), "sf_vec_size": 16,
              "sf_use_ue8m0": False, "is_sf_swizzled_layout": True, "is_sf_8x4_layout": False,
              "enable_pdl": False, "backend": "cuda"}
    kwargs = {k: values[k] for k in wanted if k in values}
    q, sf = fi.fp4_quantize(**kwargs)  # a real launch, keywords only
    torch.cuda.synchronize()
    assert q.shape == (256, 512)
    assert sf.view(torch.uint8).numel() == 256 * 1024 // 16


@pytest.mark.parametrize("shape", ["one", "num_tokens"])
def test_global_scale_shapes_the_target_uses_are_accepted(fi: Any, torch: Any, cuda: Any,
                                                          shape: str, observe: Observe) -> None:
    x = torch.randn(256, 4096, device=cuda, dtype=torch.bfloat16)
    gs = ref.global_scale_for(x).to(cuda)
    scale = gs if shape == "one" else gs.expand(256).contiguous()
    q, _ = fi.fp4_quantize(x, scale, sf_vec_size=16, is_sf_swizzled_layout=True)
    torch.cuda.synchronize()
    observe(f"fp4_quantize.global_scale[{shape}]", "accepted")
    assert q.shape == (256, 2048)


@pytest.mark.parametrize("n", [4, 2])
def test_global_scale_other_shapes_are_accepted_or_rejected_cleanly(fi: Any, torch: Any,
                                                                    cuda: Any, n: int,
                                                                    observe: Observe) -> None:
    """A per-expert global_scale of shape [n] for a [256, 4096] input: 0.6.8.post1 took it,
    0.6.11 rejects it. Which one is recorded (the report shows the change); either way the
    call must behave: accepted means outputs of the documented shapes, rejected means the
    API's own check of the scale's shape (not a CUDA fault or an unrelated error), and the
    CUDA context must still work afterwards (an out-of-bounds read of the scale would not)."""
    x = torch.randn(256, 4096, device=cuda, dtype=torch.bfloat16)
    scale = ref.global_scale_for(x).to(cuda).expand(n).contiguous()
    try:
        q, sf = fi.fp4_quantize(x, scale, sf_vec_size=16, is_sf_swizzled_layout=True)
        torch.cuda.synchronize()
    except (RuntimeError, ValueError) as exc:
        text = str(exc).strip()
        outcome = "rejected: " + text.splitlines()[-1][:300]
        observe(f"fp4_quantize.global_scale[{n}]", outcome)
        assert re.search(r"global_?scale", text, re.IGNORECASE), (
            f"global_scale of shape [{n}] rejected for another reason than its shape: {text}")
        assert not re.search(r"CUDA error|illegal|misaligned|device-side", text), text
    else:
        observe(f"fp4_quantize.global_scale[{n}]", "accepted")
        assert q.shape == (256, 2048), q.shape
        assert sf.view(torch.uint8).numel() >= 256 * 4096 // 16, sf.shape
    probe = torch.arange(1024, device=cuda, dtype=torch.float32)
    assert probe.sum().item() == 1023 * 1024 / 2  # the context survived the call


def test_allreduce_workspace_accepts_group_when_the_target_passes_it(
        fi: Any, contract: dict[str, Any], observe: Observe) -> None:
    comm = pytest.importorskip("flashinfer.comm")
    fn = getattr(comm, "create_allreduce_fusion_workspace", None)
    if fn is None:
        pytest.fail("flashinfer.comm.create_allreduce_fusion_workspace does not exist")
    sig = inspect.signature(fn)
    observe("create_allreduce_fusion_workspace.signature", str(sig))
    observe("create_allreduce_fusion_workspace.accepts_group", "group" in sig.parameters)
    spec = contract["create_allreduce_fusion_workspace"]
    wanted = list(spec["keywords"]) + (["group"] if spec.get("passes_group") else [])
    missing = [k for k in wanted if k not in sig.parameters]
    assert not missing, f"create_allreduce_fusion_workspace lacks {missing}: {sig}"
    sig.bind_partial(**{k: None for k in wanted})
