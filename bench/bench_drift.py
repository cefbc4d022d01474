"""Benchmark `pinbump drift` flashinfer-python 0.6.8.post1 -> 0.6.11 over a generated target
of 2,000 Python files (live index for the sources; timed phases reported separately).

    python bench/bench_drift.py [--files 2000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from bot.commands.context import PlanOptions, Services, load_workspace, open_services
from bot.commands.drift import DriftOutcome, drift

ROOT = Path(__file__).resolve().parents[1]
CALLER = '''"""Module {i}."""

import torch
{imports}

def layer_{i}(x, s, pdl, tp, kwargs):
    y = x * {i}
    {calls}
    return y
'''
IMPORTS = ["from flashinfer import fp4_quantize as _fq",
           "import flashinfer.comm as comm",
           "import flashinfer"]
CALLS = ['_fq(x, s, 16, False, True, False, pdl, "cuda")',
         "comm.create_allreduce_fusion_workspace(**kwargs)",
         "flashinfer.fp4_quantize(x, s, enable_pdl=pdl)"]


def generate(root: Path, n: int) -> int:
    """n modules; every tenth calls FlashInfer (the rest import only torch)."""
    calling = 0
    for i in range(n):
        sub = root / "python" / "gen" / f"m{i // 100}"
        sub.mkdir(parents=True, exist_ok=True)
        k = i % 3
        if i % 10 == 0:
            calling += 1
            text = CALLER.format(i=i, imports=IMPORTS[k], calls=CALLS[k])
        else:
            text = CALLER.format(i=i, imports="", calls="y = y + 1")
        (sub / f"mod_{i}.py").write_text(text)
    shutil.copytree(ROOT / "examples" / "sglang", root, dirs_exist_ok=True)
    return calling



def run_drift(opts: PlanOptions, services: Services | None = None) -> DriftOutcome:
    """One drift command: the workspace read, then the drift (its own services if none)."""
    ws = load_workspace(opts.repo, opts.overrides)
    if services is not None:
        return drift(ws, services, "0.6.8.post1", "0.6.11")
    with open_services(opts) as own:
        return drift(ws, own, "0.6.8.post1", "0.6.11")

def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"# {platform.node()} {platform.machine()} python {platform.python_version()} "
          f"{datetime.now(timezone.utc):%Y-%m-%d}")
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        calling = generate(repo, args.files)
        cache = Path(tmp) / "cache"
        opts = PlanOptions(repo=repo, cache_dir=cache)
        with open_services(opts) as services:
            start = time.perf_counter()
            outcome = run_drift(opts, services)
            first = time.perf_counter() - start
            fetched = services.http.stats.bytes_received
        assert outcome.old is not None and outcome.new is not None
        print(f"first run (downloads included): {first:.2f} s, {fetched / 1e6:.1f} MB fetched "
              f"({outcome.old.how} / {outcome.new.how})")
        colds, warms = [], []
        for _ in range(args.repeats):
            shutil.rmtree(cache / "api")  # keep the sources: downloads excluded
            start = time.perf_counter()
            run_drift(opts)
            colds.append(time.perf_counter() - start)
            start = time.perf_counter()
            outcome = run_drift(opts)
            warms.append(time.perf_counter() - start)
        r = outcome.report
        print(f"{args.files} generated files + examples/sglang ({r.files_scanned} .py files, "
              f"{calling} of the generated call FlashInfer, {r.calls_scanned} calls, "
              f"{len(r.findings)} findings, {len(r.breaking)} breaking): cold (griffe loads "
              f"both versions) median {statistics.median(colds):.2f} s, warm median "
              f"{statistics.median(warms):.2f} s (min {min(warms):.2f}, max {max(warms):.2f})")


if __name__ == "__main__":
    main()
