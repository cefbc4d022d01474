"""Adapter: run gpu_tests/ against two FlashInfer installs and time them old-vs-new.

Each install is a site directory (``pip install --target DIR``) put first on PYTHONPATH of its
own processes, with its own JIT workspace (FLASHINFER_WORKSPACE_BASE). The A/B timing keeps one
long-lived worker process per version and interleaves their rounds on the same GPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bot.adapters.writer import write_file
from bot.core.gate_report import GateReport, diff_observations, gate_markdown, parse_junit
from bot.core.perfstats import compare, invalid, physically_possible
from bot.errors import GateRunError, InputError


@dataclass(frozen=True)
class GateOptions:
    baseline: Path
    candidate: Path
    out: Path
    tests: Path
    extra_paths: tuple[Path, ...] = ()  # shared dependencies (tvm-ffi, cuda-tile, ...)
    rounds: int = 8
    samples_per_round: int = 5
    threshold: float = 0.05
    test_timeout: float = 1800.0
    pytest_args: tuple[str, ...] = ()
    perf: bool = True
    tests_run: bool = True
    workspace: Path | None = None  # JIT caches, one folder per install (default: out/)


def default_tests_dir() -> Path:
    env = os.environ.get("PINBUMP_GPU_TESTS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "gpu_tests"


def _env(site: Path, opts: GateOptions, label: str) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(site), *(str(p) for p in opts.extra_paths)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("CUDA_HOME", "/usr/local/cuda")
    base = opts.workspace or opts.out
    env["FLASHINFER_WORKSPACE_BASE"] = str(base / f"workspace-{site.resolve().name}")
    env["PINBUMP_GPU_REPORT"] = str(opts.out / f"observations-{label}.json")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_suite(site: Path, label: str, opts: GateOptions, log: IO[str]) -> None:
    junit = opts.out / f"junit-{label}.xml"
    cmd = [sys.executable, "-m", "pytest", str(opts.tests), "-q", f"--junitxml={junit}",
           "-o", f"junit_suite_name=gpu-{label}", *opts.pytest_args]
    try:
        proc = subprocess.run(cmd, env=_env(site, opts, label), cwd=opts.tests.parent,
                              capture_output=True, text=True, timeout=opts.test_timeout)
    except subprocess.TimeoutExpired:
        raise GateRunError(f"gpu_tests against {site} did not finish in "
                           f"{opts.test_timeout:.0f} s") from None
    write_file(opts.out / f"pytest-{label}.log", (proc.stdout + proc.stderr).encode())
    tail = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    log.write(f"[{label}] pytest exit {proc.returncode}: {tail}\n")
    if not junit.exists():
        raise GateRunError(f"gpu_tests against {site} wrote no JUnit report (exit "
                           f"{proc.returncode}); see {opts.out / f'pytest-{label}.log'}")


class Worker:
    """A perf_worker.py process for one install."""

    def __init__(self, site: Path, label: str, opts: GateOptions) -> None:
        self.label = label
        self.proc = subprocess.Popen(
            [sys.executable, str(opts.tests / "perf_worker.py")], env=_env(site, opts, label),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True)

    def ask(self, **request: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise GateRunError(f"timing worker for {self.label} exited "
                               f"({self.proc.wait()}) during {request['op']}")
        answer: dict[str, Any] = json.loads(line)
        if not answer.get("ok"):
            raise GateRunError(f"timing worker for {self.label}: {answer.get('error')}")
        return answer

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def run_perf(opts: GateOptions, report: GateReport, log: IO[str]) -> None:
    workers = {"baseline": Worker(opts.baseline, "baseline", opts),
               "candidate": Worker(opts.candidate, "candidate", opts)}
    try:
        setups = {label: w.ask(op="setup") for label, w in workers.items()}
        ceiling = min(s["copy_bandwidth"] for s in setups.values())
        report.copy_bandwidth = ceiling
        report.device = setups["candidate"]["device"]
        samples: dict[str, dict[str, list[float]]] = {k: {"baseline": [], "candidate": []}
                                                      for k in setups["candidate"]["bytes"]}
        for r in range(opts.rounds):
            order = ["baseline", "candidate"] if r % 2 == 0 else ["candidate", "baseline"]
            for kernel in samples:
                for label in order:
                    times = workers[label].ask(op="time", kernel=kernel,
                                               samples=opts.samples_per_round)["times"]
                    samples[kernel][label].extend(times)
        for kernel, by in samples.items():
            nbytes = setups["candidate"]["bytes"][kernel]
            fast = min(min(by["baseline"]), min(by["candidate"]))
            if not physically_possible(nbytes, fast, ceiling):
                note = (f"{nbytes / fast / 1e12:.2f} TB/s implied, above the measured copy "
                        f"bandwidth {ceiling / 1e12:.2f} TB/s: the kernel does not do its work "
                        "on this GPU; figure rejected")
                report.perf.append(invalid(kernel, by["baseline"], by["candidate"],
                                           opts.threshold, note))
            else:
                report.perf.append(compare(kernel, by["baseline"], by["candidate"],
                                           threshold=opts.threshold))
            log.write(f"[perf] {kernel}: {report.perf[-1].verdict}\n")
        write_file(opts.out / "perf-samples.json", json.dumps(samples).encode())
    finally:
        for w in workers.values():
            w.close()


def site_version(site: Path) -> str:
    """The flashinfer-python version installed in a site directory."""
    found = sorted(site.glob("flashinfer_python-*.dist-info"))
    return found[0].name.removesuffix(".dist-info").split("-", 1)[1] if found else str(site)


def run_gate(opts: GateOptions, log: IO[str]) -> GateReport:
    for label, site in (("baseline", opts.baseline), ("candidate", opts.candidate)):
        if not (site / "flashinfer").is_dir():
            raise InputError(f"--{label} {site}: no flashinfer package there (install one "
                             "with pip install --target)")
    if not (opts.tests / "conftest.py").is_file():
        raise InputError(f"{opts.tests}: not the gpu_tests folder (pass --tests)")
    opts.out.mkdir(parents=True, exist_ok=True)
    report = GateReport(baseline="", candidate="", device="", copy_bandwidth=0.0)
    observations: dict[str, dict[str, Any]] = {"baseline": {}, "candidate": {}}
    for label, site in (("baseline", opts.baseline), ("candidate", opts.candidate)):
        if not opts.tests_run:
            continue
        run_suite(site, label, opts, log)
        report.junit[label] = parse_junit((opts.out / f"junit-{label}.xml").read_text())
        path = opts.out / f"observations-{label}.json"
        observations[label] = json.loads(path.read_text()) if path.exists() else {}
    report.baseline = site_version(opts.baseline)
    report.candidate = site_version(opts.candidate)
    env = observations["candidate"].get("environment", {})
    report.device = env.get("gpu", "") if isinstance(env, dict) else ""
    report.observation_diff = diff_observations(observations["baseline"],
                                                observations["candidate"])
    if opts.perf:
        run_perf(opts, report, log)
    write_file(opts.out / "gate.json",
               json.dumps(report.as_dict(), indent=2, default=str).encode())
    write_file(opts.out / "summary.md", gate_markdown(report).encode())
    return report
