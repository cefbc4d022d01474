"""A jit-cache shim's Requires-Dist is the index's text: a provider pinned by a wildcard
(``==0.7.*``) or an arbitrary-equality string (``===anything``) is a rejected version with its
reason, never a crash; a provider pinned exactly is still accepted. Loopback FlashInfer
emulation (tests/flashinfer_index.py) serving wheels the tests build."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from test_shipped import DAY0, fi, plan, shipped, vllm_tree

from flashinfer_index import ARM, X86, FlashInferIndex

__all__ = ["fi"]  # the fixture, used by name


@pytest.mark.parametrize(("spec", "accepted"), [
    ("==0.7.1+cu129", True), ("===0.7.1+cu129", True),
    ("==0.7.*", False), ("===not-a-version", False), ("==0.7.1+cu130", False)])
def test_a_shims_provider_pin_that_is_no_version_is_a_reason(
        fi: FlashInferIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str,
        accepted: bool) -> None:
    shipped(fi, leads=("0.6.8.post1", "0.6.11"))
    when = DAY0 + timedelta(days=150)
    fi.add("pypi/simple", "flashinfer-python", "0.7.1", uploaded=when)
    fi.add("whl", "flashinfer-cubin", "0.7.1", uploaded=when)
    fi.add("whl/cu129", "flashinfer-jit-cache", "0.7.1+cu129", tags=(X86, ARM), uploaded=when,
           requires=[f"flashinfer-jit-cache-sm90{spec}"])
    fi.add("whl/cu129", "flashinfer-jit-cache-sm90", "0.7.1+cu129", tags=(X86, ARM),
           uploaded=when)
    fi.publish()
    code, doc, err = plan(capsys, vllm_tree(tmp_path), fi)
    assert code == 0, err
    assert doc is not None
    assert doc["lead"]["target"] == ("0.7.1" if accepted else "0.6.11")  # type: ignore[index]
    if not accepted:
        [reason] = [r["reason"] for r in doc["rejected"]  # type: ignore[union-attr]
                    if r["package"] == "flashinfer-python" and r["version"] == "0.7.1"]
        wrong = f"flashinfer-jit-cache 0.7.1+cu129: provider flashinfer-jit-cache-sm90 is " \
                f"required as {spec}, not at the shim's full version 0.7.1+cu129"
        no_version = "flashinfer-jit-cache 0.7.1+cu129: a provider's pin in its " \
                     f"Requires-Dist is no version (Invalid version: '{spec.lstrip('=')}')"
        assert reason == (wrong if spec == "==0.7.1+cu130" else no_version)


def test_a_provider_line_that_is_no_requirement_is_passed_over(
        fi: FlashInferIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Provider names come from the shim's Requires-Dist: a line naming a path is no PEP 508
    requirement and is passed over (never a URL or a path); a direct reference (``name @
    file://...``) is not a pin at the shim's version: a reason, and nothing is fetched from
    it."""
    shipped(fi, leads=("0.6.8.post1", "0.6.11"))
    when = DAY0 + timedelta(days=150)
    for v, extra in (("0.7.1", "flashinfer-jit-cache-sm90/../../../etc==0.7.1+cu129"),
                     ("0.7.2", "flashinfer-jit-cache-sm100 @ file:///etc/passwd")):
        fi.add("pypi/simple", "flashinfer-python", v, uploaded=when)
        fi.add("whl", "flashinfer-cubin", v, uploaded=when)
        fi.add("whl/cu129", "flashinfer-jit-cache", f"{v}+cu129", tags=(X86, ARM),
               uploaded=when, requires=[f"flashinfer-jit-cache-sm90=={v}+cu129", extra])
        fi.add("whl/cu129", "flashinfer-jit-cache-sm90", f"{v}+cu129", tags=(X86, ARM),
               uploaded=when)
    fi.publish()
    code, doc, err = plan(capsys, vllm_tree(tmp_path), fi)
    assert code == 0, err
    assert doc is not None
    assert doc["lead"]["target"] == "0.7.1"  # type: ignore[index]
    [reason] = [r["reason"] for r in doc["rejected"]  # type: ignore[union-attr]
                if r["package"] == "flashinfer-python" and r["version"] == "0.7.2"]
    assert reason.startswith("flashinfer-jit-cache 0.7.2+cu129: provider "
                             "flashinfer-jit-cache-sm100 is required as ")
