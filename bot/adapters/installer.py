"""The one door to pip for the GPU gate, and the load probe that records which kernel
artifacts the suite's processes opened.

Each package is installed alone (``--no-deps``) from its own indexes only, so a package can
never be taken from another package's index; pip runs isolated from user and site
configuration (``PIP_CONFIG_FILE=/dev/null``, no ``PIP_*`` variables), with arguments built
from validated specs only (``bot.core.artifacts``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from bot.adapters.writer import write_file
from bot.core.artifacts import InstallSpec, pip_install_args
from bot.errors import GateRunError, redact

MAX_FILES = 200_000  # a listing stops here (a cubin package holds a few thousand files)

# Imported at start-up by every Python process of the suite (its folder is on PYTHONPATH):
# records the kernel artifacts (.so, .cubin) opened or mapped under the install and the JIT
# workspace, and writes them at exit to $PINBUMP_LOAD_PROBE/loaded-<pid>.json.
PROBE = '''\
import atexit, json, os, sys
_out = os.environ.get("PINBUMP_LOAD_PROBE")
if _out:
    _roots = [(k, os.path.realpath(v)) for k, v in (
        ("site", os.environ.get("PINBUMP_PROBE_SITE", "")),
        ("workspace", os.environ.get("FLASHINFER_WORKSPACE_BASE", ""))) if v]
    _seen = set()

    def _note(path):
        try:
            p = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError, OSError):
            return
        for kind, root in _roots:
            if p.startswith(root + os.sep):
                _seen.add(kind + ":" + os.path.relpath(p, root).replace(os.sep, "/"))

    def _hook(event, args):
        if event in ("open", "ctypes.dlopen") and args and isinstance(args[0], (str, bytes)):
            if os.fsdecode(args[0]).endswith((".so", ".cubin")):
                _note(args[0])

    sys.addaudithook(_hook)

    def _dump():
        try:
            with open("/proc/self/maps") as maps:
                for line in maps:
                    parts = line.split(None, 5)
                    if len(parts) == 6 and parts[5].strip().endswith(".so"):
                        _note(parts[5].strip())
        except OSError:
            pass
        os.makedirs(_out, exist_ok=True)
        with open(os.path.join(_out, "loaded-%d.json" % os.getpid()), "w") as f:
            json.dump(sorted(_seen), f)

    atexit.register(_dump)
'''


def pip_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INPUT="1", PYTHONNOUSERSITE="1")
    return env


def install(specs: Sequence[InstallSpec], target: Path, log: IO[str], *,
            timeout: float = 1800.0) -> None:
    """``pip install --target`` each spec, one package per call, from its own indexes."""
    target.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        cmd = [sys.executable, "-m", "pip", *pip_install_args(spec, str(target))]
        log.write(f"[install] {spec.package}=={spec.version} from "
                  f"{', '.join(spec.index_urls)} into {target}\n")
        try:
            proc = subprocess.run(cmd, env=pip_env(), capture_output=True, text=True,
                                  timeout=timeout, cwd=target)
        except subprocess.TimeoutExpired:
            raise GateRunError(f"installing {spec.package}=={spec.version} did not finish in "
                               f"{timeout:.0f} s") from None
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1][:300]
            raise GateRunError(redact(f"could not install {spec.package}=={spec.version} from "
                                      f"{', '.join(spec.index_urls)}: {last}"))


def listing(root: Path) -> list[str]:
    """Files under ``root`` as relative POSIX paths (symlinks are not followed)."""
    if not root.is_dir():
        return []
    out: list[str] = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            out.append(Path(dirpath, name).relative_to(root).as_posix())
            if len(out) >= MAX_FILES:
                return out
    return out


def write_probe(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_file(folder / "sitecustomize.py", PROBE.encode())
    return folder


def read_loaded(folder: Path) -> list[str]:
    """What every probed process recorded (untrusted text: strings only, capped)."""
    import json

    seen: set[str] = set()
    for path in sorted(folder.glob("loaded-*.json"))[:1000]:
        try:
            data = json.loads(path.read_text()[:5_000_000])
        except (OSError, ValueError):
            continue
        if isinstance(data, list):
            seen.update(x for x in data if isinstance(x, str) and len(x) < 1000)
    return sorted(seen)
