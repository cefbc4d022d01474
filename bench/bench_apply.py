"""Benchmark `pinbump apply --dry-run` on a generated tree: 2,000 Python files (a few with
version assertions and docstrings) and 5 Dockerfiles, planned against a local pypiserver.

    python bench/bench_apply.py [--files 2000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from bot.adapters.tree import read_tree  # noqa: E402
from bot.cli import main  # noqa: E402
from bot.commands.context import PlanOptions  # noqa: E402
from bot.core.editset import compute_edits, unified_diff  # noqa: E402
from planning import planned  # noqa: E402
from servers import pypiserver  # noqa: E402
from test_apply import TREE, publish, write_tree  # noqa: E402

MODULE = '''"""Module {i} of a generated target."""

import torch

from sglang.srt.utils.common import assert_pkg_version


def layer_{i}(x: torch.Tensor) -> torch.Tensor:
    # A comment that mentions nothing of interest.
    y = x * {i}
    for _ in range(3):
        y = y + 1
    return y
'''
CHECK = '''
def check_{i}():
    assert_pkg_version("flashinfer_python", "0.6.8.post1", "upgrade FlashInfer")
'''


def generate(root: Path, n: int) -> None:
    write_tree(root)
    pkg = root / "python" / "gen"
    for i in range(n):
        sub = pkg / f"m{i // 100}"
        sub.mkdir(parents=True, exist_ok=True)
        text = MODULE.format(i=i) + (CHECK.format(i=i) if i % 250 == 0 else "")
        (sub / f"mod_{i}.py").write_text(text)
    for j in range(4):
        (root / "docker" / f"Dockerfile.stage{j}").write_text(TREE["docker/Dockerfile"])


def main_bench() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"# {platform.node()} {platform.machine()} python {platform.python_version()} "
          f"{datetime.now(timezone.utc):%Y-%m-%d}")
    with tempfile.TemporaryDirectory() as tmp, pypiserver(Path(tmp) / "index") as pypi:
        publish(pypi)
        repo = Path(tmp) / "repo"
        generate(repo, args.files)
        cache = Path(tmp) / "cache"
        argv = ["apply", "--repo", str(repo), "--index-url", pypi.url, "--dry-run",
                "--cache-dir", str(cache)]
        totals, edit_phase = [], []
        for _ in range(args.repeats + 1):
            out, err = io.StringIO(), io.StringIO()
            start = time.perf_counter()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                assert main(argv) == 0, err.getvalue()
            totals.append(time.perf_counter() - start)
            with planned(PlanOptions(repo=repo, index_url=pypi.url, cache_dir=cache)) as done:
                start = time.perf_counter()
                tree = read_tree(repo)
                tree.read(tree.paths)  # every file, as the editors' worst case
                edits, _ = compute_edits(done.plan, done.ws.policy, tree.text)
                unified_diff(edits)
                edit_phase.append(time.perf_counter() - start)
        files = len(tree.text)
        print(f"apply --dry-run, {args.files} generated .py + 5 Dockerfiles ({files} files "
              f"read, {len(edits.files)} edited, {len(edits.edits)} edits): total median "
              f"{statistics.median(totals[1:]):.3f} s (first, cold cache {totals[0]:.3f} s); "
              f"read+edit+diff median {statistics.median(edit_phase[1:]):.3f} s")


if __name__ == "__main__":
    main_bench()
