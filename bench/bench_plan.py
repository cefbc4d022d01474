"""Benchmark `pinbump plan`: a local pypiserver with 300 versions of each package (cold and warm
cache), and the live index with a warm cache.  Prints one line per figure; see RESULTS.md.

    python bench/bench_plan.py [--versions 300] [--repeats 7] [--live]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from bot.commands.context import PlanOptions, load_workspace, open_services  # noqa: E402
from bot.commands.plan import plan  # noqa: E402
from servers import pypiserver  # noqa: E402
from targets import write_target  # noqa: E402


def timed_plan(opts: PlanOptions) -> Timing:
    with open_services(opts) as services:
        start = time.perf_counter()
        done = plan(load_workspace(opts.repo, opts.overrides), services, opts.as_of)
        elapsed = time.perf_counter() - start
        http = services.http
        return elapsed, http.stats.requests, http.stats.bytes_received, done.lead_target


Timing = tuple[float, int, int, str]  # seconds, requests, bytes, chosen lead version


def summary(label: str, cold: Timing, warm: list[Timing]) -> str:
    times = [w[0] for w in warm]
    return (f"{label}: cold {cold[0]:.3f} s ({cold[1]} requests, {cold[2] / 1e6:.2f} MB), "
            f"warm median {statistics.median(times):.3f} s (min {min(times):.3f}, max "
            f"{max(times):.3f}; {warm[0][1]} requests, {warm[0][2] / 1e6:.3f} MB); chose "
            f"flashinfer-python {cold[3]}")


def local(versions: int, repeats: int) -> None:
    old = datetime.now(timezone.utc) - timedelta(days=90)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with pypiserver(work / "index") as pypi:
            for i in range(versions):
                v = f"1.{i}.0"
                pypi.add("flashinfer-python", v, uploaded=old,
                         requires=[f"nvidia-cutlass-dsl>=4.{i // 2}", "quack-kernels>=0.1"],
                         padding=200_000 if i >= versions - 30 else 0)
                if i < versions - 20:  # the newest 20 leads have no cubin: walk past them
                    pypi.add("flashinfer-cubin", v, uploaded=old)
                pypi.add("nvidia-cutlass-dsl", f"4.{i}.0", uploaded=old)
                pypi.add("quack-kernels", f"0.{i}.0", uploaded=old)
            repo = write_target(work / "repo", pins=(
                '"flashinfer_python==1.0.0"', '"flashinfer_cubin==1.0.0"',
                '"nvidia-cutlass-dsl==4.0.0"', '"quack-kernels>=0.1.0"'))
            cache = work / "cache"
            opts = PlanOptions(repo=repo, index_url=pypi.url, cache_dir=cache)
            cold = timed_plan(opts)
            warm = [timed_plan(opts) for _ in range(repeats)]
    print(summary(f"local {versions} versions/package", cold, warm))

def live(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        opts = PlanOptions(repo=ROOT / "examples" / "sglang", as_of="2026-11-28",
                           cache_dir=Path(tmp) / "cache")
        cold = timed_plan(opts)
        warm = [timed_plan(opts) for _ in range(repeats)]
    print(summary("live pypi.org examples/sglang --as-of 2026-11-28", cold, warm))

def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--versions", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--live", action="store_true", help="also the live index")
    args = parser.parse_args()
    print(f"# {platform.node()} {platform.machine()} python {platform.python_version()} "
          f"{datetime.now(timezone.utc):%Y-%m-%d}")
    local(args.versions, args.repeats)
    if args.live:
        live(args.repeats)


if __name__ == "__main__":
    main()
