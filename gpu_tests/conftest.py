"""GPU gate suite: skips cleanly without torch, a GPU or FlashInfer; records observations.

Observations (behaviour that is not pass/fail, e.g. the error text for a global_scale shape)
go to the JSON file named by $PINBUMP_GPU_REPORT, so that two versions can be diffed.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

OBSERVATIONS: dict[str, Any] = {}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = os.environ.get("PINBUMP_GPU_REPORT")
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(OBSERVATIONS, indent=2, sort_keys=True, default=str))


@pytest.fixture(scope="session")
def observe() -> Callable[[str, Any], None]:
    def record(key: str, value: Any) -> None:
        OBSERVATIONS[key] = value
    return record


@pytest.fixture(scope="session")
def torch() -> Any:
    return pytest.importorskip("torch", reason="torch is not installed")


@pytest.fixture(scope="session")
def cuda(torch: Any) -> Any:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU on this host")
    return torch.device("cuda:0")


@pytest.fixture(scope="session")
def fi(cuda: Any, observe: Callable[[str, Any], None]) -> Any:
    flashinfer = pytest.importorskip("flashinfer", reason="flashinfer is not installed")
    import torch as _torch

    major, minor = _torch.cuda.get_device_capability(cuda)
    observe("environment", {
        "flashinfer": getattr(flashinfer, "__version__", "?"),
        "torch": _torch.__version__, "gpu": _torch.cuda.get_device_name(cuda),
        "sm": f"sm_{major}{minor}", "gpus": _torch.cuda.device_count()})
    return flashinfer


@pytest.fixture(scope="session")
def sm(torch: Any, cuda: Any) -> int:
    major, minor = torch.cuda.get_device_capability(cuda)
    return int(major) * 10 + int(minor)


@pytest.fixture(scope="session")
def contract() -> dict[str, Any]:
    """How the target calls FlashInfer (written by pinbump from the target's call sites;
    $PINBUMP_GPU_CONTRACT overrides). The default is SGLang's usage."""
    path = Path(os.environ.get("PINBUMP_GPU_CONTRACT", Path(__file__).with_name(
        "contract.json")))
    data: dict[str, Any] = json.loads(path.read_text())
    return data
