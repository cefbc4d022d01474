"""Benchmark pinbump on REAL trees, side by side with `uv pip compile` in the same run.

The corpora are the source distributions of SGLang and vLLM from PyPI (cached under
``~/.cache/pinbump-bench``), unpacked into a temporary folder, plus a tree of ten copies of
SGLang (about 22,700 files) for scale. Every figure is the median of several runs of the real
command line (a fresh interpreter each time), with its peak RSS (the command and any worker
process it starts) and CPU time, so ``cpu/wall`` shows how many cores a step used.

    pip install -e '.[bench]'
    python bench/bench_real.py [--repeats 5] [--only startup,plan,apply,drift,scale]
        [--sglang 0.5.10.post1] [--vllm 0.33.0] [--as-of 2026-11-28] [--scale 10]
        [--latency 0.1]

Needs the live PyPI (the index the plans are made against). Prints Markdown rows for
bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx

CACHE = Path(os.environ.get("PINBUMP_BENCH_CACHE", Path.home() / ".cache" / "pinbump-bench"))
INDEX = "https://pypi.org/simple"
GROUP = ("flashinfer-python", "flashinfer-cubin", "nvidia-cutlass-dsl", "quack-kernels")
PINBUMP = [sys.executable, "-m", "bot"]


# -- corpora -------------------------------------------------------------------------------
def sdist(name: str, version: str) -> Path:
    """The sdist of name==version, downloaded once: `pip download` first; when pip cannot
    prepare its metadata (vLLM's build needs torch), the file the index lists, sha256 checked.
    """
    CACHE.mkdir(parents=True, exist_ok=True)
    found = sorted(CACHE.glob(f"{name}-{version}.tar.gz"))
    if found:
        return found[0]
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
           "--index-url", INDEX, f"{name}=={version}", "-d", str(CACHE)]
    if subprocess.run(cmd, capture_output=True).returncode == 0:
        return next(CACHE.glob(f"{name}-{version}.tar.gz"))
    page = httpx.get(f"{INDEX}/{name}/", timeout=60, follow_redirects=True,
                     headers={"Accept": "application/vnd.pypi.simple.v1+json"}).json()
    want = f"{name}-{version}.tar.gz"
    entry = next((f for f in page["files"] if f["filename"] == want), None)
    if entry is None:
        raise SystemExit(f"bench: no sdist {want} on {INDEX}")
    data = httpx.get(entry["url"], timeout=300, follow_redirects=True).content
    if hashlib.sha256(data).hexdigest() != entry["hashes"]["sha256"]:
        raise SystemExit(f"bench: sha256 mismatch for {want}")
    (CACHE / want).write_bytes(data)
    return CACHE / want


def unpack(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / archive.name.removesuffix(".tar.gz")


def copies(tree: Path, into: Path, n: int) -> Path:
    for i in range(n):
        shutil.copytree(tree, into / f"copy{i}", symlinks=True)
    return into


def count_files(root: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(root))


# -- measuring -----------------------------------------------------------------------------
@dataclass
class Run:
    wall: float
    cpu: float  # user + system, the command and its waited-for children
    rss_mb: float  # peak resident set of the command or any one child
    rc: int
    out: bytes


def measured(cmd: Sequence[str], env: dict[str, str] | None = None,
             ok: Sequence[int] = (0,)) -> Run:
    """One run via fork/exec + wait4, so each run's own peak RSS and CPU time are exact."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:
        pid = os.posix_spawn(cmd[0], list(cmd), {**os.environ, **(env or {})},
                             file_actions=[(os.POSIX_SPAWN_DUP2, out_f.fileno(), 1),
                                           (os.POSIX_SPAWN_DUP2, err_f.fileno(), 2)])
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - start
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read(), err_f.read()
    rc = os.waitstatus_to_exitcode(status)
    if rc not in ok:
        raise SystemExit(f"bench: {' '.join(cmd)} exited {rc}:\n{err.decode()[-3000:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, rc, out)


def med(runs: Sequence[Run]) -> str:
    walls = [r.wall for r in runs]
    return (f"{statistics.median(walls):.2f} s (min {min(walls):.2f}, max {max(walls):.2f}; "
            f"cpu {statistics.median(r.cpu for r in runs):.2f} s, "
            f"{max(r.rss_mb for r in runs):.0f} MB)")


def mwall(runs: Sequence[Run]) -> float:
    return statistics.median(r.wall for r in runs)


def row(step: str, tree: str, pinbump: str, peer: str = "", ratio: str = "") -> None:
    """One Markdown row, with the machine's load average when the step ended (the VM is
    shared: a figure taken under load is worth less)."""
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"| {step} | {tree} | {pinbump} | {peer} | {ratio} | {load} |", flush=True)


def compiled() -> None:
    """Byte-compile pinbump's own modules first, as installing a wheel does: with
    PYTHONDONTWRITEBYTECODE set (as on the development VM) an editable install would
    otherwise compile ~60 modules from source in every timed run (~0.06 s)."""
    import compileall

    compileall.compile_dir(Path(__file__).resolve().parents[1] / "bot", quiet=1)


# -- the steps ------------------------------------------------------------------------------
def startup(repeats: int) -> None:
    for flag in ("--version", "--help"):
        runs = [measured([*PINBUMP, flag]) for _ in range(repeats * 2)]
        uv = [measured([uv_bin(), flag]) for _ in range(repeats * 2)]
        row(f"`pinbump {flag}`", "-", med(runs), f"uv {med(uv)}")


def uv_bin() -> str:
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if not found:
        raise SystemExit("bench: uv not found; pip install -e '.[bench]'")
    return found


def uv_compile(req: Path, cache: Path, as_of: str, python: str, no_deps: bool) -> list[str]:
    exclude = (datetime.strptime(as_of, "%Y-%m-%d") + timedelta(days=1)).strftime(
        "%Y-%m-%dT00:00:00Z")
    return [uv_bin(), "pip", "compile", str(req), "--quiet", "--index-url", INDEX,
            "--exclude-newer", exclude, "--python-version", python, "--cache-dir", str(cache),
            *(["--no-deps"] if no_deps else [])]


UV_ENV = {"UV_PYTHON_DOWNLOADS": "never", "UV_NO_CONFIG": "1"}


def plan(tree: Path, label: str, work: Path, repeats: int, as_of: str, python: str) -> None:
    """Cold (empty cache) and warm plans, alternating with uv on the same four packages."""
    work.mkdir(parents=True, exist_ok=True)
    req = work / "four.in"
    req.write_text("\n".join(GROUP) + "\n")
    base = [*PINBUMP, "plan", "--repo", str(tree), "--as-of", as_of, "--json"]
    cold: dict[str, list[Run]] = {"pinbump": [], "uv": [], "uv-full": []}
    warm: dict[str, list[Run]] = {"pinbump": [], "uv": [], "uv-full": []}
    for i in range(repeats):
        caches = {k: work / f"cache-{k}-{i}" for k in cold}
        cmds: dict[str, Callable[[Path], list[str]]] = {
            "pinbump": lambda c: [*base, "--cache-dir", str(c)],
            "uv": lambda c: uv_compile(req, c, as_of, python, no_deps=True),
            "uv-full": lambda c: uv_compile(req, c, as_of, python, no_deps=False),
        }
        for k, make in cmds.items():
            cold[k].append(measured(make(caches[k]), UV_ENV))
        for k, make in cmds.items():
            warm[k].append(measured(make(caches[k]), UV_ENV))
    for kind, runs in (("cold", cold), ("warm", warm)):
        ratio = mwall(runs["pinbump"]) / mwall(runs["uv"])
        full = mwall(runs["pinbump"]) / mwall(runs["uv-full"])
        row(f"plan, {kind} cache", label, med(runs["pinbump"]),
            f"uv --no-deps {med(runs['uv'])}; uv (all deps) {med(runs['uv-full'])}",
            f"{ratio:.2f}x / {full:.2f}x")
    chosen = json.loads(warm["pinbump"][0].out)
    print(f"<!-- {label}: pinbump chose {chosen['lead']} -->")



def round_trips(tree: Path, label: str, work: Path, as_of: str, latency: float) -> None:
    """Requests of one cold and one warm plan, and how many of them lie on the critical path
    (the longest chain of requests that ran one after another). Each request is first held
    ``latency`` seconds, as a distant index would: against a nearby mirror a round trip
    takes a few milliseconds, and the order in which threads happen to start would decide
    which requests "ran one after another"; with a real round trip's delay only the waits
    the code makes (data it needs, a full pool) chain requests."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bot.adapters.http import HttpClient
    from bot.commands.context import PlanOptions, load_workspace, open_services
    from bot.commands.plan import plan

    spans: list[tuple[float, float, str]] = []
    original = HttpClient.request

    def traced(self: HttpClient, method: str, url: str, *a: object, **k: object) -> object:
        start = time.perf_counter()
        time.sleep(latency)
        try:
            return original(self, method, url, *a, **k)  # type: ignore[arg-type]
        finally:
            spans.append((start, time.perf_counter(), f"{method} {url}"))

    HttpClient.request = traced  # type: ignore[method-assign,assignment]
    try:
        opts = PlanOptions(repo=tree, as_of=as_of, cache_dir=work / "rt-cache")
        ws = load_workspace(opts.repo, opts.overrides)
        for kind in ("cold", "warm"):
            time.sleep(1.0)  # reads the cold plan dropped unanswered end before the warm one
            spans.clear()
            with open_services(opts) as services:
                start = time.perf_counter()
                plan(ws, services, as_of)
                wall = time.perf_counter() - start
                nbytes = services.http.stats.bytes_received
            spans.sort()
            depth = [1] * len(spans)
            for i, (s, _, _) in enumerate(spans):
                for j in range(i):
                    if spans[j][1] <= s:
                        depth[i] = max(depth[i], depth[j] + 1)
            row(f"{kind} plan: round trips ({latency * 1000:.0f} ms added to each)", label,
                f"{len(spans)} requests, critical path {max(depth, default=0)} in sequence, "
                f"{nbytes / 1e6:.2f} MB, {wall:.2f} s in-process")
    finally:
        HttpClient.request = original  # type: ignore[method-assign]


def apply(tree: Path, label: str, work: Path, repeats: int, as_of: str) -> None:
    cache = work / "apply-cache"
    cmd = [*PINBUMP, "apply", "--dry-run", "--repo", str(tree), "--as-of", as_of,
           "--cache-dir", str(cache)]
    measured(cmd)  # fill the index cache: the figure is apply's own work
    runs = [measured(cmd) for _ in range(repeats)]
    row("apply --dry-run (warm index cache)", f"{label} ({count_files(tree)} files)", med(runs))


def drift(tree: Path, label: str, work: Path, repeats: int, as_of: str,
          cache_name: str = "drift-cache") -> None:
    cache = work / cache_name  # a cache of its own per tree: a first run downloads
    cmd = [*PINBUMP, "drift", "--repo", str(tree), "--as-of", as_of, "--json",
           "--cache-dir", str(cache)]
    first = measured(cmd, ok=(0, 1))  # downloads both versions' sources
    colds, warms = [], []
    for _ in range(repeats):
        for sub in ("api", "scan"):
            shutil.rmtree(cache / sub, ignore_errors=True)  # parse everything again
        colds.append(measured(cmd, ok=(0, 1)))
        warms.append(measured(cmd, ok=(0, 1)))
    findings = len(json.loads(warms[-1].out))
    row("drift, first run (sources downloaded)", label, med([first]))
    row("drift, cold (sources on disk, nothing parsed)", label, med(colds))
    row("drift, warm", f"{label} ({findings} findings)", med(warms))


def scale(tree: Path, work: Path, n: int, repeats: int, as_of: str) -> None:
    """apply and drift on 1, n/3 and n copies of a tree: time per copy should stay flat."""
    for k in sorted({1, max(1, n // 3), n}):
        root = copies(tree, work / f"x{k}", k)
        label = f"{k}x {tree.name}"
        apply(root, label, work, max(1, repeats // 2), as_of)
        drift(root, label, work, max(1, repeats // 2), as_of, f"drift-cache-x{k}")
        shutil.rmtree(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default="startup,plan,apply,drift,scale")
    parser.add_argument("--sglang", default="0.5.10.post1", help="sglang sdist version")
    parser.add_argument("--vllm", default="0.33.0", help="vllm sdist version")
    parser.add_argument("--as-of", default="2026-11-28")
    parser.add_argument("--python", default="3.10", help="uv's --python-version")
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.1,
                        help="seconds added to each request when counting round trips")
    args = parser.parse_args()
    steps = set(args.only.split(","))
    print(f"<!-- {platform.node()} {platform.machine()} {os.cpu_count()} cores, python "
          f"{platform.python_version()}, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"load {os.getloadavg()[0]:.1f}; {' '.join(sys.argv)} -->")
    compiled()
    print("| step | tree | pinbump: median (min, max; cpu, peak RSS) | peer | ratio | load |")
    print("| --- | --- | --- | --- | --- | --- |")
    if "startup" in steps:
        startup(args.repeats)
    with tempfile.TemporaryDirectory(prefix="pinbump-bench-") as tmp:
        work = Path(tmp)
        trees = {"sglang": unpack(sdist("sglang", args.sglang), work / "src"),
                 "vllm": unpack(sdist("vllm", args.vllm), work / "src")}
        for name, tree in trees.items():
            label = f"{name} {tree.name.split('-', 1)[1]}"
            try:
                if "plan" in steps:
                    plan(tree, label, work / f"plan-{name}", args.repeats, args.as_of,
                         args.python)
                    round_trips(tree, label, work / f"plan-{name}", args.as_of,
                                args.latency)
                if "apply" in steps:
                    apply(tree, label, work / f"apply-{name}", args.repeats, args.as_of)
                if "drift" in steps:
                    drift(tree, label, work / f"drift-{name}", args.repeats, args.as_of)
            except SystemExit as failed:  # one tree's failure is a figure too
                last = str(failed).strip().splitlines()[-1]
                row("(failed)", label, last.replace("|", "\\|"))
        if "scale" in steps:
            scale(trees["sglang"], work / "scale", args.scale, args.repeats, args.as_of)


if __name__ == "__main__":
    main()
