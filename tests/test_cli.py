from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import main
from targets import write_target


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONWARNINGS": "error"})


def test_python_m_bot_and_console_script() -> None:
    out = run(sys.executable, "-m", "bot", "--help")
    assert out.returncode == 0 and "plan" in out.stdout
    script = shutil.which("pinbump", path=str(Path(sys.executable).parent))
    assert script, "the pinbump console script is installed next to the interpreter"
    out = run(script, "--version")
    assert out.returncode == 0 and out.stdout.startswith("pinbump ")


@pytest.mark.parametrize(("argv", "fragment"), [
    (["plan", "--as-of", "2026-13-01"], "is not a date YYYY-MM-DD"),
    (["plan", "--min-release-age", "-1"], "must not be negative"),
    (["frobnicate"], "invalid choice"),
])
def test_usage_errors_exit_2(argv: list[str], fragment: str,
                             capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert fragment in capsys.readouterr().err


def test_missing_repo_and_no_lead_pin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--repo", str(tmp_path / "absent")]) == 2
    assert "absent: not a directory" in capsys.readouterr().err
    write_target(tmp_path, pins=['"numpy"'])
    assert main(["plan", "--repo", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no requirement on flashinfer-python" in err and err.count("\n") == 1


def test_invalid_config_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_target(tmp_path, config="min_release_age = 3\n")
    assert main(["plan", "--repo", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(
        "pinbump: error: pinbump.toml: unknown key 'min_release_age'")


def test_pins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_target(tmp_path)
    assert main(["pins", "--repo", str(tmp_path), "--package", "flashinfer_python"]) == 0
    assert capsys.readouterr().out == "0.6.8.post1\n"
    assert main(["pins", "--repo", str(tmp_path)]) == 0
    assert "python/pyproject.toml:7: flashinfer_python==0.6.8.post1" in capsys.readouterr().out
    (tmp_path / "requirements.txt").write_text("flashinfer-python==0.6.7\n")
    assert main(["pins", "--repo", str(tmp_path), "--package", "flashinfer-python"]) == 2
    assert "expected one pinned version" in capsys.readouterr().err
    assert main(["pins", "--repo", str(tmp_path), "--package", "flashinfer-python", "--file",
                 "requirements.txt"]) == 0
    assert capsys.readouterr().out == "0.6.7\n"
