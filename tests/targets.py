"""Write SGLang-shaped target trees for tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

SGLANG_PINS = (
    '"flashinfer_python==0.6.8.post1", # keep it aligned with jit-cache version in Dockerfile',
    '"flashinfer_cubin==0.6.8.post1",',
    '"nvidia-cutlass-dsl==4.4.2",',
    '"quack-kernels>=0.3.0",',
)


def write_target(root: Path, pins: Sequence[str] = SGLANG_PINS, *,
                 requires_python: str = ">=3.10", config: str | None = None,
                 tool: str | None = None) -> Path:
    """A python/pyproject.toml with ``pins`` (raw lines inside the dependencies array)."""
    body = "\n".join(f"  {p}" if p.rstrip().endswith((",", "Dockerfile")) else f"  {p},"
                     for p in pins)
    text = (
        "[project]\n"
        'name = "sglang"\n'
        'version = "0.5.10"\n'
        f'requires-python = "{requires_python}"\n'
        "dependencies = [\n"
        '  "requests",\n'
        f"{body}\n"
        "]\n"
    )
    if tool:
        text += "\n[tool.pinbump]\n" + tool
    (root / "python").mkdir(parents=True, exist_ok=True)
    (root / "python" / "pyproject.toml").write_text(text)
    if config is not None:
        (root / "pinbump.toml").write_text(config)
    return root
