"""Run gpu_tests/ against two FlashInfer installs and time them old-vs-new.

Each install is a site directory (``pip install --target DIR``) put first on PYTHONPATH of its
own processes, with its own JIT workspace (FLASHINFER_WORKSPACE_BASE). Given install lists
(what the target deploys: flashinfer-python, flashinfer-cubin, flashinfer-jit-cache of the
runner's CUDA variant, each from the plan's indexes) the gate installs both sides itself and
accounts for which kernels came prebuilt and which were built on the runner. The A/B timing
keeps one long-lived worker process per version and interleaves their rounds on the same GPU;
on a host with 2+ GPUs the fused allreduce timing (gpu_tests/fused_perf.py) follows.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from bot.adapters.installer import install, listing, read_loaded, write_probe
from bot.adapters.shipped import shipped_dir
from bot.adapters.writer import write_file
from bot.core.artifacts import InstallSpec, account
from bot.core.gate_report import GateReport, diff_observations, gate_markdown, parse_junit
from bot.core.models import PerfVerdict
from bot.core.perfstats import Comparison, compare, invalid, physically_possible
from bot.errors import GateRunError, InputError
from bot.render.jsonout import to_json

if TYPE_CHECKING:
    from bot.core.indexmodel import IndexModel

__all__ = ["GateOptions", "GateRunError", "default_tests_dir", "run_gate"]

MIN_SAMPLES = 30  # the bootstrap statistics need at least this many samples per version
FUSED_PREFIX = "new_vs_old/"  # fused_perf.py comparisons that gate (fused_vs_unfused informs)


@dataclass(frozen=True)
class GateOptions:
    baseline: Path | None
    candidate: Path | None
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
    min_tests: int = 1  # kernel tests the candidate must execute
    fused_world: int | None = None  # GPUs for the fused timing; None: the runner's count
    fused_args: tuple[str, ...] = ()  # more arguments for fused_perf.py
    installs: tuple[tuple[InstallSpec, ...], tuple[InstallSpec, ...]] | None = None
    install_timeout: float = 1800.0
    select: tuple[str, ...] = ()  # pytest node ids to run instead of the whole suite (bisect)


def default_tests_dir() -> Path:
    env = os.environ.get("PINBUMP_GPU_TESTS")
    return Path(env) if env else shipped_dir("gpu_tests")


def validate(opts: GateOptions) -> None:
    """Every numeric option checked before anything runs: one line, exit 2."""
    for name, value in (("--rounds", opts.rounds),
                        ("--samples-per-round", opts.samples_per_round)):
        if value < 1:
            raise InputError(f"{name} {value}: must be at least 1")
    if opts.perf and opts.rounds * opts.samples_per_round < MIN_SAMPLES:
        need = math.ceil(MIN_SAMPLES / opts.samples_per_round)
        raise InputError(f"--rounds {opts.rounds} x --samples-per-round "
                         f"{opts.samples_per_round} = {opts.rounds * opts.samples_per_round} "
                         f"samples per version; the statistics need at least {MIN_SAMPLES} "
                         f"(use --rounds {need} or more, or --no-perf)")
    if not (math.isfinite(opts.threshold) and 0 < opts.threshold < 1):
        raise InputError(f"--threshold {opts.threshold}: must be a fraction between 0 and 1 "
                         "(0.05 = 5% slower)")
    if opts.min_tests < 0:
        raise InputError(f"--min-tests {opts.min_tests}: must not be negative")
    if opts.fused_world is not None and opts.fused_world not in (0, 2, 4, 8, 16):
        raise InputError(f"--fused-world {opts.fused_world}: FlashInfer's fusion runs on 2, "
                         "4, 8 or 16 GPUs (0: no fused timing)")
    if opts.installs is None and (opts.baseline is None or opts.candidate is None):
        raise InputError("name both installs: --baseline and --candidate site directories, "
                         "or --install FILE")


def pytest_selection(args: tuple[str, ...]) -> tuple[str, ...]:
    """``-m gpu`` unless the caller selects by marker: the version-independent CPU
    self-tests of gpu_tests/ belong in CI, not in an A/B gate on a GPU runner."""
    if any(a.startswith("-m") for a in args):
        return args
    return ("-m", "gpu", *args)


def _env(site: Path, opts: GateOptions, label: str) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(site), *(str(p) for p in opts.extra_paths)]
    if opts.installs is not None:
        paths.append(str(write_probe(opts.out / "probe")))
        env["PINBUMP_LOAD_PROBE"] = str(opts.out / f"loaded-{label}")
        env["PINBUMP_PROBE_SITE"] = str(site)
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("CUDA_HOME", "/usr/local/cuda")
    env["FLASHINFER_WORKSPACE_BASE"] = str(workspace_of(site, opts))
    env["PINBUMP_GPU_REPORT"] = str(opts.out / f"observations-{label}.json")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def workspace_of(site: Path, opts: GateOptions) -> Path:
    return (opts.workspace or opts.out) / f"workspace-{site.resolve().name}"


def run_suite(site: Path, label: str, opts: GateOptions, log: IO[str]) -> None:
    junit = opts.out / f"junit-{label}.xml"
    cmd = [sys.executable, "-m", "pytest", *(opts.select or (str(opts.tests),)), "-q",
           f"--junitxml={junit}",
           "-o", f"junit_suite_name=gpu-{label}", *pytest_selection(opts.pytest_args)]
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
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


def run_perf(sites: dict[str, Path], opts: GateOptions, report: GateReport,
             log: IO[str]) -> None:
    workers = {label: Worker(site, label, opts) for label, site in sites.items()}
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


def gpu_count(site: Path, opts: GateOptions) -> int:
    """GPUs the candidate's processes see (0 without torch or CUDA)."""
    code = "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
    try:
        proc = subprocess.run([sys.executable, "-c", code], env=_env(site, opts, "probe"),
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return 0
    out = proc.stdout.strip()
    return int(out) if proc.returncode == 0 and out.isdigit() else 0


def fused_comparisons(data: object) -> list[Comparison]:
    """The ``new_vs_old/*`` rows of fused-<N>gpu.json as Comparisons (a fused or unfused
    regression fails the gate like a single-GPU one); anything malformed is an error."""
    if not isinstance(data, dict) or not isinstance(data.get("comparisons"), dict):
        raise GateRunError("fused timing: its JSON has no comparisons")
    out = []
    for key, rows in sorted(data["comparisons"].items()):
        if not str(key).startswith(FUSED_PREFIX):
            continue
        if not isinstance(rows, list):
            raise GateRunError(f"fused timing: comparisons {key!r} is not a list")
        for row in rows:
            try:
                ci = row.get("ci95") or [float("nan"), float("nan")]
                samples = row.get("samples") or [0, 0]
                out.append(Comparison(
                    name=f"{key.removeprefix(FUSED_PREFIX)} {row['case']}",
                    baseline_median=float(row["baseline_median"]),
                    candidate_median=float(row["candidate_median"]),
                    ratio=float(row["ratio"]), ci_low=float(ci[0]), ci_high=float(ci[1]),
                    threshold=float(row["threshold"]),
                    samples=(int(samples[0]), int(samples[1])), verdict=_verdict(row["verdict"]),
                    note=str(row.get("note", ""))))
            except (KeyError, TypeError, ValueError, IndexError, AttributeError):
                raise GateRunError(f"fused timing: a malformed row under {key!r}") from None
    return out


_VERDICTS = {v.value: v for v in PerfVerdict}


def _verdict(value: object) -> PerfVerdict:
    verdict = _VERDICTS.get(str(value))
    if verdict is None:
        raise GateRunError(f"fused timing: unknown verdict {str(value)!r}")
    return verdict


def run_fused(sites: dict[str, Path], world: int, opts: GateOptions, report: GateReport,
              log: IO[str]) -> None:
    script = opts.tests / "fused_perf.py"
    cmd = [sys.executable, str(script), "--baseline", str(sites["baseline"]), "--candidate",
           str(sites["candidate"]), "--world", str(world), "--out", str(opts.out),
           "--workspace", str(opts.workspace or opts.out), "--threshold", str(opts.threshold)]
    for p in opts.extra_paths:
        cmd += ["--extra-path", str(p)]
    cmd += list(opts.fused_args)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).resolve().parents[2]), *filter(None, [env.get("PYTHONPATH")])])
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=opts.test_timeout, cwd=opts.out)
    except subprocess.TimeoutExpired:
        raise GateRunError(f"the fused allreduce timing did not finish in "
                           f"{opts.test_timeout:.0f} s") from None
    write_file(opts.out / f"fused-{world}gpu.log", (proc.stdout + proc.stderr).encode())
    path = opts.out / f"fused-{world}gpu.json"
    if proc.returncode != 0 or not path.exists():
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1][:300]
        raise GateRunError(f"the fused allreduce timing on {world} GPUs failed (exit "
                           f"{proc.returncode}): {last}; see {opts.out / f'fused-{world}gpu.log'}")
    try:
        data = json.loads(path.read_text())
    except ValueError:
        raise GateRunError(f"{path}: not JSON") from None
    rows = fused_comparisons(data)
    report.perf.extend(rows)
    table = opts.out / f"fused-{world}gpu.md"
    if table.exists():
        report.fused_table = f"#### Fused allreduce + RMSNorm on {world} GPUs\n\n" + \
            table.read_text()[:30_000]
    log.write(f"[fused] {world} GPUs: {len(rows)} old-vs-new rows, "
              f"{sum(r.verdict == 'regression' for r in rows)} regression(s)\n")


def site_version(site: Path) -> str:
    """The flashinfer-python version installed in a site directory."""
    found = sorted(site.glob("flashinfer_python-*.dist-info"))
    return found[0].name.removesuffix(".dist-info").split("-", 1)[1] if found else str(site)


def install_sides(opts: GateOptions, log: IO[str]) -> dict[str, Path]:
    """Install each side's deploy list into out/site-<label> (fresh)."""
    import shutil

    assert opts.installs is not None
    sites = {}
    for label, specs in zip(("baseline", "candidate"), opts.installs, strict=True):
        site = opts.out / f"site-{label}"
        if site.exists():
            shutil.rmtree(site)
        install(specs, site, log, timeout=opts.install_timeout)
        sites[label] = site
    return sites


def _read_junit(path: Path) -> Any:
    try:
        return parse_junit(path.read_text())
    except (ET.ParseError, ValueError) as exc:
        raise GateRunError(f"{path}: not a JUnit report ({exc})") from None


def _prepare_sites(opts: GateOptions, log: IO[str]) -> tuple[GateOptions, dict[str, Path]]:
    """The two site directories (installed first with ``--install``), each checked to hold a
    flashinfer package; the options then name them."""
    if opts.installs is not None:
        sites = install_sides(opts, log)
        opts = replace(opts, baseline=sites["baseline"], candidate=sites["candidate"])
    else:
        assert opts.baseline is not None and opts.candidate is not None
        sites = {"baseline": opts.baseline, "candidate": opts.candidate}
    for label, site in sites.items():
        if not (site / "flashinfer").is_dir():
            raise InputError(f"--{label} {site}: no flashinfer package there (install one "
                             "with pip install --target)")
    return opts, sites


def _read_observations(path: Path) -> dict[str, Any]:
    try:
        loaded = json.loads(path.read_text()) if path.exists() else {}
    except ValueError:
        raise GateRunError(f"{path}: not JSON") from None
    return loaded if isinstance(loaded, dict) else {}


def _run_suites(sites: dict[str, Path], opts: GateOptions, report: GateReport,
                log: IO[str]) -> dict[str, dict[str, Any]]:
    """Each side's test run (JUnit into the report) and the observations it recorded."""
    observations: dict[str, dict[str, Any]] = {"baseline": {}, "candidate": {}}
    if not opts.tests_run:
        return observations
    for label, site in sites.items():
        run_suite(site, label, opts, log)
        report.junit[label] = _read_junit(opts.out / f"junit-{label}.xml")
        observations[label] = _read_observations(opts.out / f"observations-{label}.json")
    return observations


def _run_timings(sites: dict[str, Path], opts: GateOptions, report: GateReport,
                 log: IO[str]) -> None:
    """Old-vs-new timing, and the fused allreduce timing on 2, 4 or 8 of the GPUs seen."""
    run_perf(sites, opts, report, log)
    world = opts.fused_world if opts.fused_world is not None else min(
        gpu_count(sites["candidate"], opts), 8)
    world = 1 << (world.bit_length() - 1) if world >= 2 else 0  # 2, 4, 8 of those seen
    if world >= 2:
        run_fused(sites, world, opts, report, log)


def _account_sides(sites: dict[str, Path], opts: GateOptions, report: GateReport,
                   log: IO[str]) -> None:
    """What each installed side deployed, loaded prebuilt, JIT-built or downloaded."""
    assert opts.installs is not None
    for (label, site), specs in zip(sites.items(), opts.installs, strict=True):
        report.artifacts[label] = account(
            [s.package for s in specs], listing(site), listing(workspace_of(site, opts)),
            read_loaded(opts.out / f"loaded-{label}"))
        for failure in report.artifacts[label].failures:
            log.write(f"[artifacts] {label}: {failure}\n")


def gate_json(report: GateReport) -> str:
    """The gate's report as JSON: ``gate.json``, and what ``gpu-gate --json`` prints."""
    return to_json(report.as_dict(), default=str)


def run_gate(opts: GateOptions, log: IO[str]) -> GateReport:
    validate(opts)
    if not (opts.tests / "conftest.py").is_file():
        raise InputError(f"{opts.tests}: not the gpu_tests folder (pass --tests)")
    opts.out.mkdir(parents=True, exist_ok=True)
    opts, sites = _prepare_sites(opts, log)
    report = GateReport(baseline="", candidate="", device="", copy_bandwidth=0.0,
                        min_tests=opts.min_tests if opts.tests_run else 0)
    observations = _run_suites(sites, opts, report, log)
    report.baseline = site_version(sites["baseline"])
    report.candidate = site_version(sites["candidate"])
    env = observations["candidate"].get("environment", {})
    report.device = env.get("gpu", "") if isinstance(env, dict) else ""
    report.observation_diff = diff_observations(observations["baseline"],
                                                observations["candidate"])
    if opts.perf:
        _run_timings(sites, opts, report, log)
    if opts.installs is not None:
        _account_sides(sites, opts, report, log)
    write_file(opts.out / "gate.json", gate_json(report).encode())
    write_file(opts.out / "summary.md", gate_markdown(report).encode())
    return report


def runner_cuda_variant() -> str:
    """This runner's CUDA variant (cu129, cu130) from the CUDA version torch was built for."""
    from bot.core.indexmodel import cuda_variant

    code = "import torch; print(torch.version.cuda or '')"
    try:
        proc = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True,
                              text=True, timeout=300)
    except subprocess.TimeoutExpired:
        raise GateRunError("--cuda-variant auto: torch did not answer in 300 s") from None
    found = cuda_variant(proc.stdout.strip()) if proc.returncode == 0 else None
    if found is None:
        raise InputError("--cuda-variant auto: no CUDA build of torch here (pass "
                         "--cuda-variant cuXYZ)")
    return found


def read_install_file(path: Path) -> tuple[tuple[InstallSpec, ...], tuple[InstallSpec, ...]]:
    """``{"baseline": [...], "candidate": [...]}``, each a list of
    ``{"package", "version", "index_urls"}``."""
    from bot.core.artifacts import parse_install_list

    try:
        raw = json.loads(path.read_bytes()[:1_000_000])
    except OSError as exc:
        raise InputError(f"--install {path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise InputError(f"--install {path}: not JSON ({exc})") from None
    if not isinstance(raw, dict) or set(raw) != {"baseline", "candidate"}:
        raise InputError(f"--install {path}: expected an object with exactly the keys "
                         "baseline and candidate")
    return (tuple(parse_install_list(raw["baseline"], f"--install {path}: baseline")),
            tuple(parse_install_list(raw["candidate"], f"--install {path}: candidate")))


def package_indexes(model: IndexModel, packages: Sequence[str], variant: str | None
                    ) -> dict[str, list[str]]:
    """The plan's index URLs of each package, for the runner's CUDA variant."""
    indexes: dict[str, list[str]] = {}
    for package in packages:
        refs = [r for r in model.for_package(package) if not r.flat]
        if any(r.variant for r in refs):
            variants = sorted({r.variant for r in refs if r.variant})
            if variant is None:
                raise InputError(f"{package} is published per CUDA variant "
                                 f"({', '.join(variants)}): name the runner's with "
                                 "--cuda-variant")
            refs = [r for r in refs if r.variant in ("", variant)]
        indexes[package] = [r.url for r in refs]
    return indexes


def deploy_lists(base_repo: Path, head_repo: Path, variant: str | None
                 ) -> tuple[tuple[InstallSpec, ...], tuple[InstallSpec, ...]]:
    """What each side deploys: the lead and lockstep packages the target pins exactly, each
    from the plan's indexes for it (the runner's CUDA variant for per-variant indexes). The
    policy and the indexes come from the base side only: a pull request's config must not
    point the runner at another index."""
    from bot.commands.context import load_workspace
    from bot.commands.plan import index_model
    from bot.core.artifacts import deploy_specs

    base = load_workspace(base_repo)
    policy = base.policy
    group = policy.active_group
    packages = (group.lead, *group.lockstep)
    indexes = package_indexes(index_model(base.target, policy), packages, variant)

    def pinned(root: Path, ws: Any) -> list[tuple[str, str]]:
        out = []
        for package in packages:
            versions = sorted({str(p.exact) for p in ws.target.pins
                               if p.package == package and p.exact is not None})
            if len(versions) > 1:
                raise InputError(f"{root}: {package} is pinned at {', '.join(versions)}; "
                                 "one version is deployed")
            if versions:
                out.append((package, versions[0]))
        if not out or out[0][0] != group.lead:
            raise InputError(f"{root}: no exact pin of {group.lead} to install")
        return out

    head = base if head_repo.resolve() == base_repo.resolve() else load_workspace(head_repo)
    return (tuple(deploy_specs(pinned(base_repo, base), indexes, str(base_repo))),
            tuple(deploy_specs(pinned(head_repo, head), indexes, str(head_repo))))


def nightly_lists(base_repo: Path, versions_text: str, variant: str | None
                  ) -> tuple[tuple[InstallSpec, ...], tuple[InstallSpec, ...]]:
    """The nightly gate's installs: the baseline is what the base deploys; the candidate the
    same packages at the nightly versions (validated: canonical names of the group, normalized
    versions), each from the base policy's nightly indexes for it."""
    from bot.commands.context import load_workspace
    from bot.commands.plan import index_model
    from bot.core.artifacts import install_spec
    from bot.core.nightly import parse_versions

    wanted = parse_versions(versions_text)
    baseline, _ = deploy_lists(base_repo, base_repo, variant)
    ws = load_workspace(base_repo, {"channel": "nightly"})
    group = ws.policy.active_group
    packages = (group.lead, *group.lockstep)
    parse_versions(versions_text, packages)
    if group.lead not in wanted:
        raise InputError(f"--nightly-versions: names no version of {group.lead}")
    indexes = package_indexes(index_model(ws.target, ws.policy), packages, variant)
    candidate = tuple(
        install_spec(f"--nightly-versions: {s.package}", s.package, wanted[s.package],
                     indexes.get(s.package, ())) if s.package in wanted else s
        for s in baseline)
    return baseline, candidate
