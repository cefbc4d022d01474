"""The wheel's package list covers every package folder of bot/, and the shipped files are
found where an installed wheel keeps them (the full check builds and installs the wheel:
.ci/wheel-check)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomlkit

from bot.adapters import shipped
from bot.adapters.shipped import shipped_dir

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_in_the_wheel() -> None:
    config = tomlkit.parse((ROOT / "pyproject.toml").read_text()).unwrap()["tool"]["setuptools"]
    folders = {".".join(p.parent.relative_to(ROOT).parts)
               for p in (ROOT / "bot").rglob("*.py") if "__pycache__" not in p.parts}
    assert folders <= set(config["packages"])
    assert config["package-dir"] == {"bot.workflows": "workflows", "bot.gpu_tests": "gpu_tests"}


def test_shipped_files_come_from_the_checkout_here() -> None:
    assert shipped_dir("workflows") == ROOT / "workflows"
    assert (shipped_dir("gpu_tests") / "conftest.py").is_file()


def test_an_installed_wheel_uses_the_copy_inside_the_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "site-packages" / "bot"
    (package / "workflows").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    monkeypatch.setattr(shipped.bot, "__file__", str(package / "__init__.py"))
    assert shipped_dir("workflows") == package / "workflows"
