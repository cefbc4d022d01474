"""Where the files pinbump ships beside its code are: the workflows and the GPU suite.

An installed wheel holds them inside the package (``bot/workflows``, ``bot/gpu_tests``, package
data); a source checkout (or an editable install) has them at the top of the repository."""

from __future__ import annotations

from pathlib import Path

import bot


def shipped_dir(name: str) -> Path:
    """``workflows`` or ``gpu_tests``: inside the installed package, else in the checkout."""
    package = Path(bot.__file__).resolve().parent
    inside = package / name
    return inside if inside.is_dir() else package.parent / name
