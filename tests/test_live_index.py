"""Against the live PyPI index (opt-in: pytest -m network)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sglang"


@pytest.mark.network
def test_plan_example_against_live_index_as_of(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bot", "plan", "--repo", str(EXAMPLE), "--as-of", "2026-11-28",
         "--json", "--cache-dir", str(tmp_path / "cache")],
        capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    changes = {c["package"]: c for c in doc["changes"]}
    # The newest complete set on that day: flashinfer-cubin stops at 0.6.13, so the
    # 0.7.x leads (which Renovate and uv propose) are rejected with that reason.
    assert changes["flashinfer-python"]["target"] == "0.6.13"
    assert changes["flashinfer-cubin"]["target"] == "0.6.13"
    reasons = {(r["package"], r["version"]): r["reason"] for r in doc["rejected"]}
    assert reasons[("flashinfer-python", "0.7.4")] == \
        "flashinfer-cubin 0.7.4 is not published on https://pypi.org/simple"
    # 0.6.13 requires nvidia-cutlass-dsl>=4.5.0, so the ==4.4.2 pin must move.
    cutlass = changes["nvidia-cutlass-dsl"]
    assert cutlass["specifier_before"] == "==4.4.2"
    assert tuple(int(x) for x in cutlass["target"].split(".")[:2]) >= (4, 5)
    assert [n["package"] for n in doc["not_verified"]] == ["flashinfer-jit-cache"]
