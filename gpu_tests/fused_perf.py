"""Fused allreduce + residual + RMSNorm against torch.distributed.all_reduce + RMSNorm, across
the GPUs of one host, for one or two FlashInfer installs (old vs new), with the gate's
statistics (ratio of medians, bootstrap 95% interval, threshold rule) and a bandwidth sanity
check.

    python gpu_tests/fused_perf.py --baseline SITE --candidate SITE [--extra-path DIR]
        --world N --out DIR [--workspace DIR] [--tokens 1,64,128,1024,4096]
        [--hidden 4096,8192] [--rounds 8] [--samples 5] [--inner 20]

Each install runs as its own set of N rank processes (one per GPU, NCCL), started with that
install first on PYTHONPATH and its own JIT workspace (``workspace-<site dir name>``, as
``pinbump gpu-gate`` names it). Both sets live side by side for the whole run; the driver
interleaves their rounds (order alternating) so drift hits both alike, and only one set works
at a time. A sample is one CUDA-graph replay of ``inner`` launches (eager if a graph cannot be
captured on every install) between CUDA events after a barrier; its time is the slowest rank's.

The variants, per token count and hidden size, bf16:
- fused: ``flashinfer.comm.allreduce_fusion(kARResidualRMSNorm)``, FlashInfer's one-shot /
  two-shot heuristic, residual and norm written to their own outputs (what SGLang calls);
- unfused: ``torch.distributed.all_reduce`` (NCCL) in place, then
  ``flashinfer.fused_add_rmsnorm`` in place (SGLang's path without the fusion).
Sanity: every variant reads x and the residual and writes two outputs (4 x bytes through HBM
at the least) and each rank must receive at least one value per element from its peers
(x bytes over the links). A figure faster than the measured copy bandwidth, or than 1.25x the
best measured link figure (NCCL all_reduce bus bandwidth, peer copy), is rejected.

Writes fused-<N>gpu.json (setups, every sample, comparisons) and fused-<N>gpu.md (tables).
``--impl cpu --backend gloo`` runs the same driver on the CPU with torch stand-ins (tests).
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"}
SETS = 2  # input sets rotated between samples
LINK_SLACK = 1.25  # measured link figures are achieved rates, not the physical limit
EPS = 1e-6


def case_name(tokens: int, hidden: int) -> str:
    return f"t{tokens}_h{hidden}"


# ----------------------------------------------------------------------------- rank worker


class _Kernels:
    """One rank's buffers, workspace and launches for every case."""

    def __init__(self, rank: int, world: int, impl: str, tokens: list[int],
                 hidden: list[int], dtype: str, inner: int) -> None:
        import torch
        import torch.distributed as dist

        self.torch, self.dist = torch, dist
        self.rank, self.world, self.impl, self.inner = rank, world, impl, inner
        self.device = "cuda" if impl == "flashinfer" else "cpu"
        self.dt = getattr(torch, dtype)
        self.workspace = None
        self.version = "cpu"
        if impl == "flashinfer":
            import flashinfer
            from flashinfer import comm

            self.fi, self.comm = flashinfer, comm
            self.version = flashinfer.__version__
            self.workspace = comm.create_allreduce_fusion_workspace(
                backend="trtllm", world_size=world, rank=rank, max_token_num=max(tokens),
                hidden_dim=max(hidden), dtype=self.dt)
        self.bufs: dict[str, list[dict[str, Any]]] = {}
        self.graphs: dict[tuple[str, str, int], Any] = {}
        for n in tokens:
            for h in hidden:
                gen = torch.Generator(device=self.device).manual_seed(
                    1_000_003 * n + 7919 * h + rank)
                gamma = torch.randn(h, device=self.device, dtype=self.dt, generator=gen)
                sets = []
                for _ in range(SETS):
                    x = torch.randn(n, h, device=self.device, dtype=self.dt, generator=gen)
                    r = torch.randn(n, h, device=self.device, dtype=self.dt, generator=gen)
                    sets.append({"x": x, "r": r, "xu": x.clone(), "ru": r.clone(),
                                 "ro": torch.empty_like(x), "no": torch.empty_like(x),
                                 "gamma": gamma})
                self.bufs[case_name(n, h)] = sets

    def oneshot(self, n: int, h: int) -> bool | None:
        """What FlashInfer's heuristic picks for this size (None: not known)."""
        if self.impl != "flashinfer":
            return None
        try:
            from flashinfer.comm.trtllm_ar import _should_use_oneshot
        except ImportError:
            return None
        return bool(_should_use_oneshot(n, h, self.dt, self.world))

    def launch(self, case: str, variant: str, s: int) -> None:
        b = self.bufs[case][s]
        if self.impl != "flashinfer":  # torch stand-ins, same data flow
            if variant == "fused":
                t = b["x"].clone()
                self.dist.all_reduce(t)
                b["ro"].copy_(t + b["r"])
                var = b["ro"].float().pow(2).mean(-1, keepdim=True)
                b["no"].copy_(b["ro"] * self.torch.rsqrt(var + EPS) * b["gamma"])
            else:
                self.dist.all_reduce(b["xu"])
                b["ru"].add_(b["xu"])
                var = b["ru"].float().pow(2).mean(-1, keepdim=True)
                b["xu"].copy_(b["ru"] * self.torch.rsqrt(var + EPS) * b["gamma"])
            return
        if variant == "fused":
            self.comm.allreduce_fusion(
                input=b["x"], workspace=self.workspace,
                pattern=self.comm.AllReduceFusionPattern.kARResidualRMSNorm,
                launch_with_pdl=True, residual_out=b["ro"], norm_out=b["no"],
                residual_in=b["r"], rms_gamma=b["gamma"], rms_eps=EPS)
        else:
            self.dist.all_reduce(b["xu"])
            self.fi.fused_add_rmsnorm(b["xu"], b["ru"], b["gamma"], EPS)

    def run(self, case: str, variant: str, s: int, mode: str) -> None:
        if mode == "graph":
            self.graphs[(case, variant, s)].replay()
        else:
            for _ in range(self.inner):
                self.launch(case, variant, s)

    def capture(self) -> dict[str, str]:
        """A CUDA graph of ``inner`` launches per case, variant and input set; the mode each
        case and variant can run in ("graph", or "eager: why")."""
        torch = self.torch
        modes: dict[str, str] = {}
        for case in self.bufs:
            for variant in ("fused", "unfused"):
                for s in range(SETS):
                    self.launch(case, variant, s)  # first launches, JIT loads
                key = f"{case}/{variant}"
                if self.impl != "flashinfer":
                    modes[key] = "eager: no CUDA graphs on the CPU"
                    continue
                try:
                    stream = torch.cuda.Stream()
                    stream.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(stream):
                        for s in range(SETS):
                            self.launch(case, variant, s)
                    torch.cuda.current_stream().wait_stream(stream)
                    torch.cuda.synchronize()
                    for s in range(SETS):
                        g = torch.cuda.CUDAGraph()
                        with torch.cuda.graph(g):
                            for _ in range(self.inner):
                                self.launch(case, variant, s)
                        self.graphs[(case, variant, s)] = g
                    modes[key] = "graph"
                except Exception as exc:  # a capture failure is recorded, eager still runs
                    modes[key] = f"eager: {type(exc).__name__}: {str(exc)[:200]}"
                torch.cuda.synchronize()
        return modes

    def sync(self) -> None:
        if self.impl == "flashinfer":
            self.torch.cuda.synchronize()

    def time(self, case: str, variant: str, samples: int, mode: str) -> list[float]:
        torch = self.torch
        times = []
        for i in range(samples):
            s = i % SETS
            self.dist.barrier()
            self.sync()
            if self.impl == "flashinfer":
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                self.run(case, variant, s, mode)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / 1e3 / self.inner)
            else:
                t0 = time.perf_counter()
                self.run(case, variant, s, mode)
                times.append((time.perf_counter() - t0) / self.inner)
        return times

    def copy_bandwidth(self) -> float:
        """Bytes read plus written per second of a large copy on this rank's device."""
        torch = self.torch
        size = (1 << 30) if self.impl == "flashinfer" else (64 << 20)
        src = torch.empty(size, dtype=torch.uint8, device=self.device)
        dst = torch.empty_like(src)
        best = 0.0
        for _ in range(8):
            self.sync()
            t = self._timed(lambda: dst.copy_(src))
            best = max(best, 2 * size / t)
        return best

    def nccl_busbw(self) -> float:
        """NCCL-style bus bandwidth of one large all_reduce (256 MiB, bf16)."""
        torch = self.torch
        n = (128 << 20) if self.impl == "flashinfer" else (4 << 20)
        t = torch.ones(n, dtype=self.dt, device=self.device)
        self.dist.all_reduce(t)
        best = float("inf")
        for _ in range(5):
            self.dist.barrier()
            best = min(best, self._timed(lambda: self.dist.all_reduce(t)))
        size: int = t.numel() * t.element_size()
        return size / best * 2 * (self.world - 1) / self.world

    def peer_copy(self) -> float:
        """Bytes per second this rank's GPU writes into the next rank's GPU (all ranks at
        once, so every link carries traffic both ways)."""
        if self.impl != "flashinfer":
            return 0.0
        torch = self.torch
        size = 256 << 20
        peer = (self.rank + 1) % self.world
        src = torch.empty(size, dtype=torch.uint8, device=self.device)
        dst = torch.empty(size, dtype=torch.uint8, device=f"cuda:{peer}")
        dst.copy_(src)
        best = float("inf")
        for _ in range(5):
            torch.cuda.synchronize(peer)
            self.dist.barrier()
            self.sync()
            t0 = time.perf_counter()
            dst.copy_(src)
            torch.cuda.synchronize(self.rank)
            torch.cuda.synchronize(peer)
            best = min(best, time.perf_counter() - t0)
        del src, dst
        torch.cuda.empty_cache()
        return size / best

    def _timed(self, fn: Callable[[], Any]) -> float:
        torch = self.torch
        if self.impl != "flashinfer":
            t0 = time.perf_counter()
            fn()
            return time.perf_counter() - t0
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        elapsed_ms: float = start.elapsed_time(end)
        return elapsed_ms / 1e3


def worker(argv: Sequence[str]) -> None:
    """One rank: requests on stdin, answers on stdout, one JSON object per line."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--backend", default="nccl")
    ap.add_argument("--impl", default="flashinfer")
    a = ap.parse_args(argv)
    os.environ.update(NO_MULTICAST)
    faulthandler.enable(all_threads=True)  # stderr is the rank's log file
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    import torch
    import torch.distributed as dist

    extra: dict[str, Any] = {}
    if a.backend == "nccl":
        torch.cuda.set_device(a.rank)
        extra["device_id"] = torch.device(f"cuda:{a.rank}")
    dist.init_process_group(a.backend, init_method=f"tcp://127.0.0.1:{a.port}",
                            rank=a.rank, world_size=a.world, **extra)
    kernels: _Kernels | None = None
    out = sys.stdout
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req["op"] == "setup":
                kernels = _Kernels(a.rank, a.world, a.impl, req["tokens"], req["hidden"],
                                   req["dtype"], req["inner"])
                answer: dict[str, Any] = {
                    "ok": True, "version": kernels.version,
                    "device": torch.cuda.get_device_name() if a.impl == "flashinfer"
                    else "cpu",
                    "copy_bandwidth": kernels.copy_bandwidth(),
                    "nccl_busbw": kernels.nccl_busbw(), "peer_copy": kernels.peer_copy(),
                    "oneshot": {case_name(n, h): kernels.oneshot(n, h)
                                for n in req["tokens"] for h in req["hidden"]},
                    "modes": kernels.capture()}
            elif req["op"] == "time":
                assert kernels is not None, "setup first"
                if a.impl == "cpu-hang" and a.rank == 1:
                    stuck_in_time()
                answer = {"ok": True, "times": kernels.time(req["case"], req["variant"],
                                                            int(req["samples"]), req["mode"])}
            else:
                answer = {"ok": False, "error": f"unknown op {req['op']!r}"}
        except Exception as exc:
            import traceback

            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                      "traceback": traceback.format_exc()}
        out.write(json.dumps(answer) + "\n")
        out.flush()
    dist.destroy_process_group()


def stuck_in_time() -> None:
    """impl "cpu-hang": rank 1 stops answering (the driver's deadline test)."""
    time.sleep(3600)


# ----------------------------------------------------------------------------- driver


class WorkerHung(RuntimeError):
    """A rank did not answer in time; the message carries every rank's stack."""


class RankSet:
    """The N rank processes of one install."""

    def __init__(self, label: str, site: Path | None, extra: Sequence[Path], world: int,
                 backend: str, impl: str, workspace: Path, logdir: Path) -> None:
        from harness import free_port

        self.label, self.world = label, world
        env = dict(os.environ)
        paths = [str(p) for p in ([site] if site else []) + list(extra)] + [str(HERE)]
        if env.get("PYTHONPATH"):
            paths.append(env["PYTHONPATH"])
        env.update(NO_MULTICAST, PYTHONPATH=os.pathsep.join(paths), PYTHONUNBUFFERED="1")
        env.setdefault("CUDA_HOME", "/usr/local/cuda")
        if site is not None:
            env["FLASHINFER_WORKSPACE_BASE"] = str(workspace / f"workspace-{site.resolve().name}")
        port = free_port()
        self.logs = [logdir / f"{label}-rank{r}.log" for r in range(world)]
        self.procs = []
        for r in range(world):
            with open(self.logs[r], "w") as err:
                self.procs.append(subprocess.Popen(
                    [sys.executable, str(Path(__file__).resolve()), "worker", "--rank", str(r),
                     "--world", str(world), "--port", str(port), "--backend", backend,
                     "--impl", impl],
                    env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err))
        self.buffers = [b""] * world

    def ask(self, timeout: float, **request: Any) -> list[dict[str, Any]]:
        """Send one request to every rank; every rank's answer, or WorkerHung/RuntimeError."""
        line = (json.dumps(request) + "\n").encode()
        for p in self.procs:
            assert p.stdin is not None
            p.stdin.write(line)
            p.stdin.flush()
        answers: dict[int, dict[str, Any]] = {}
        sel = selectors.DefaultSelector()
        for r, p in enumerate(self.procs):
            assert p.stdout is not None
            sel.register(p.stdout, selectors.EVENT_READ, r)
        deadline = time.monotonic() + timeout
        try:
            while len(answers) < self.world:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise WorkerHung(self._stuck(request, sorted(set(range(self.world))
                                                                - set(answers)), timeout))
                for key, _ in sel.select(min(left, 1.0)):
                    r = key.data
                    chunk = os.read(key.fileobj.fileno(), 1 << 20)  # type: ignore[union-attr]
                    if not chunk:
                        sel.unregister(key.fileobj)
                        raise RuntimeError(f"{self.label} rank {r} exited (code "
                                           f"{self.procs[r].wait()}) during "
                                           f"{request['op']}:\n{self._tail(r)}")
                    self.buffers[r] += chunk
                    if b"\n" in self.buffers[r]:
                        text, self.buffers[r] = self.buffers[r].split(b"\n", 1)
                        answers[r] = json.loads(text)
        finally:
            sel.close()
        for r, ans in sorted(answers.items()):
            if not ans.get("ok"):
                raise RuntimeError(f"{self.label} rank {r}: {ans.get('error')}\n"
                                   f"{ans.get('traceback', '')}")
        return [answers[r] for r in range(self.world)]

    def _tail(self, r: int, chars: int = 4000) -> str:
        try:
            return self.logs[r].read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def _stuck(self, request: dict[str, Any], ranks: list[int], timeout: float) -> str:
        """SIGUSR1 to every rank (faulthandler dumps into its log), then the dumps."""
        sizes = [len(self._tail(r, 1 << 30)) for r in range(self.world)]
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGUSR1)
        time.sleep(2.0)
        parts = [f"{self.label}: ranks {ranks} did not answer {request['op']} "
                 f"{request.get('case', '')} {request.get('variant', '')} within "
                 f"{timeout:.0f} s (hang?)"]
        for r in range(self.world):
            dump = self._tail(r, 1 << 30)[sizes[r]:]
            parts.append(f"--- {self.label} rank {r} stack ---\n{dump.rstrip()}")
        self.close(kill=True)
        return "\n".join(parts)

    def close(self, kill: bool = False) -> None:
        for p in self.procs:
            if p.poll() is not None:
                continue
            if kill:
                p.kill()
            elif p.stdin:
                p.stdin.close()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            for pipe in (p.stdin, p.stdout):
                if pipe is not None and not pipe.closed:
                    pipe.close()


def _perfstats() -> Any:
    """The project's statistics (bot.core.perfstats)."""
    root = str(HERE.parent)
    if root not in sys.path:
        sys.path.append(root)
    from bot.core import perfstats
    return perfstats


def sanity(case: str, world: int, fastest: float, copy_bw: float, link_bw: float
           ) -> str | None:
    """Why a figure is impossible (None if it is not): the bytes a case must move through HBM
    and over the links, at its fastest sample, against the measured ceilings."""
    ps = _perfstats()
    n, h = (int(p[1:]) for p in case.split("_"))
    x_bytes = n * h * 2
    if not ps.physically_possible(4 * x_bytes, fastest, copy_bw):
        return (f"{4 * x_bytes / fastest / 1e12:.2f} TB/s through HBM implied, above the "
                f"measured copy bandwidth {copy_bw / 1e12:.2f} TB/s")
    if world > 1 and link_bw > 0 and not ps.physically_possible(x_bytes, fastest, link_bw,
                                                                 slack=LINK_SLACK):
        return (f"{x_bytes / fastest / 1e9:.0f} GB/s received per rank implied, above "
                f"{LINK_SLACK} x the best measured link figure {link_bw / 1e9:.0f} GB/s")
    return None


def compare_all(samples: dict[str, dict[str, dict[str, list[float]]]], labels: list[str],
                world: int, copy_bw: float, link_bw: float, threshold: float
                ) -> dict[str, list[dict[str, Any]]]:
    """Fused vs unfused per install (ratio fused/unfused) and new vs old per variant (ratio
    candidate/baseline), each a perfstats Comparison as a dict."""
    ps = _perfstats()
    out: dict[str, list[dict[str, Any]]] = {}

    def one(name: str, case: str, base: list[float], cand: list[float]) -> dict[str, Any]:
        why = sanity(case, world, min(min(base), min(cand)), copy_bw, link_bw)
        c = (ps.invalid(name, base, cand, threshold, why) if why
             else ps.compare(name, base, cand, threshold=threshold))
        return {**c.as_dict(), "case": case}

    for label in labels:
        out[f"fused_vs_unfused/{label}"] = [
            one(f"{case} fused/unfused ({label})", case, by["unfused"], by["fused"])
            for case, by in samples[label].items()]
    if len(labels) == 2:
        old, new = labels
        for variant in ("fused", "unfused"):
            out[f"new_vs_old/{variant}"] = [
                one(f"{case} {variant} {new}/{old}", case, samples[old][case][variant],
                    samples[new][case][variant]) for case in samples[new]]
    return out


def _ci(c: dict[str, Any], invert: bool) -> str:
    if c["verdict"] == "invalid":
        return "invalid"
    lo, hi = c["ci95"]
    if invert:
        lo, hi = 1 / hi, 1 / lo
    return f"{lo:.3f}–{hi:.3f}"


FUSED_VERDICT = {"improvement": "fused faster", "regression": "fused slower",
                 "no change": "within the threshold", "invalid": "invalid"}


def markdown(report: dict[str, Any]) -> str:
    """Tables: per case, each install's medians and fused speedup, then new/old ratios."""
    labels, world = report["labels"], report["world"]
    comps = report["comparisons"]
    versions = report["versions"]
    lines = [f"Fused allreduce+residual+RMSNorm vs NCCL all_reduce + fused_add_rmsnorm, "
             f"{world} GPUs ({report['device']}), bf16; medians of {report['samples_each']} "
             f"samples of {report['inner']} launches ({report['mode_summary']}). Speedup = "
             "unfused/fused (above 1: the fusion is faster), 95% bootstrap interval.", "",
             f"Measured ceilings: copy {report['copy_bandwidth'] / 1e12:.2f} TB/s; NCCL "
             f"all_reduce bus bandwidth {report['nccl_busbw'] / 1e9:.0f} GB/s; peer copy "
             f"{report['peer_copy'] / 1e9:.0f} GB/s.", ""]
    head = "| tokens | hidden |"
    rule = "| --- | --- |"
    for label in labels:
        v = versions[label]
        head += f" {v} unfused | {v} fused | {v} speedup (CI) | {v} one-shot |"
        rule += " --- | --- | --- | --- |"
    lines += [head, rule]
    cases = [c["case"] for c in comps[f"fused_vs_unfused/{labels[0]}"]]
    for i, case in enumerate(cases):
        n, h = (p[1:] for p in case.split("_"))
        row = f"| {n} | {h} |"
        for label in labels:
            c = comps[f"fused_vs_unfused/{label}"][i]
            speed = (f"{1 / c['ratio']:.2f} ({_ci(c, True)}; {FUSED_VERDICT[c['verdict']]})"
                     if c["verdict"] != "invalid" else f"invalid: {c['note']}")
            row += (f" {c['baseline_median'] * 1e6:.1f} µs | {c['candidate_median'] * 1e6:.1f}"
                    f" µs | {speed} | {report['oneshot'][label].get(case)} |")
        lines.append(row)
    if len(labels) == 2:
        old, new = (versions[x] for x in labels)
        lines += ["", f"New vs old ({new} / {old}; above 1: the new one is slower; a regression "
                  f"is flagged when the whole interval lies above 1 + {report['threshold']}):",
                  "", "| tokens | hidden | fused ratio (CI) | verdict | unfused ratio (CI) | "
                  "verdict |", "| --- | --- | --- | --- | --- | --- |"]
        for i, case in enumerate(cases):
            n, h = (p[1:] for p in case.split("_"))
            f, u = comps["new_vs_old/fused"][i], comps["new_vs_old/unfused"][i]
            lines.append(f"| {n} | {h} | {f['ratio']:.3f} ({_ci(f, False)}) | {f['verdict']} | "
                         f"{u['ratio']:.3f} ({_ci(u, False)}) | {u['verdict']} |")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> dict[str, Any]:
    sites = [(label, site) for label, site in (("baseline", args.baseline),
                                               ("candidate", args.candidate)) if site]
    if not sites:
        sites = [("candidate", None)]
    labels = [label for label, _ in sites]
    tokens, hidden = args.tokens, args.hidden
    args.out.mkdir(parents=True, exist_ok=True)
    logdir = Path(tempfile.mkdtemp(prefix="fused-perf-", dir=args.out))
    sets = {label: RankSet(label, site, args.extra_path, args.world, args.backend, args.impl,
                           args.workspace or args.out, logdir) for label, site in sites}
    try:
        setups = {label: s.ask(args.setup_timeout, op="setup", tokens=tokens, hidden=hidden,
                               dtype="bfloat16", inner=args.inner) for label, s in sets.items()}
        cases = [case_name(n, h) for n in tokens for h in hidden]
        mode = {}
        for case in cases:
            for variant in ("fused", "unfused"):
                key = f"{case}/{variant}"
                ok = all(a["modes"][key] == "graph" for ans in setups.values() for a in ans)
                mode[key] = "graph" if ok else "eager"
        samples: dict[str, dict[str, dict[str, list[float]]]] = {
            label: {c: {"fused": [], "unfused": []} for c in cases} for label in labels}
        order_log = []
        for r in range(args.rounds):
            order = labels if r % 2 == 0 else labels[::-1]
            variants = ("fused", "unfused") if r % 2 == 0 else ("unfused", "fused")
            for case in cases:
                for variant in variants:
                    for label in order:
                        answers = sets[label].ask(args.timeout, op="time", case=case,
                                                  variant=variant, samples=args.samples,
                                                  mode=mode[f"{case}/{variant}"])
                        slowest = [max(ts) for ts in zip(*(a["times"] for a in answers),
                                                         strict=True)]
                        samples[label][case][variant].extend(slowest)
                        order_log.append(f"{r}:{case}:{variant}:{label}")
    finally:
        for s in sets.values():
            s.close()
    first = {label: ans[0] for label, ans in setups.items()}
    copy_bw = min(a["copy_bandwidth"] for ans in setups.values() for a in ans)
    nccl = max(a["nccl_busbw"] for ans in setups.values() for a in ans)
    peer = max(a["peer_copy"] for ans in setups.values() for a in ans)
    modes = sorted(set(mode.values()))
    report = {
        "world": args.world, "labels": labels, "device": first[labels[-1]]["device"],
        "versions": {label: first[label]["version"] for label in labels},
        "tokens": tokens, "hidden": hidden, "inner": args.inner, "rounds": args.rounds,
        "samples_each": args.rounds * args.samples, "threshold": args.threshold,
        "copy_bandwidth": copy_bw, "nccl_busbw": nccl, "peer_copy": peer,
        "mode": mode, "mode_summary": "CUDA graphs" if modes == ["graph"] else
        "eager launches" if modes == ["eager"] else "graphs where every install captured",
        "capture": {label: first[label]["modes"] for label in labels},
        "oneshot": {label: first[label]["oneshot"] for label in labels},
        "order": order_log, "samples": samples,
    }
    report["comparisons"] = compare_all(samples, labels, args.world, copy_bw,
                                        max(nccl, peer), args.threshold)
    stem = args.out / f"fused-{args.world}gpu"
    Path(f"{stem}.json").write_text(json.dumps(report, indent=1, default=str))
    Path(f"{stem}.md").write_text(markdown(report))
    return report


def parse(argv: Sequence[str]) -> argparse.Namespace:
    ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, help="site directory of the current version")
    ap.add_argument("--candidate", type=Path, help="site directory of the proposed version")
    ap.add_argument("--extra-path", type=Path, action="append", default=[])
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--workspace", type=Path, help="JIT caches, workspace-<site name> each")
    ap.add_argument("--tokens", type=ints, default=[1, 64, 128, 1024, 4096])
    ap.add_argument("--hidden", type=ints, default=[4096, 8192])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--samples", type=int, default=5, help="samples per round")
    ap.add_argument("--inner", type=int, default=20, help="launches per sample")
    ap.add_argument("--threshold", type=float, default=0.05)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per timing request")
    ap.add_argument("--setup-timeout", type=float, default=600.0)
    ap.add_argument("--backend", default="nccl")
    ap.add_argument("--impl", default="flashinfer", choices=["flashinfer", "cpu", "cpu-hang"])
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["worker"]:
        worker(argv[1:])
        return 0
    report = run(parse(argv))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
