"""pinbump gpu-gate on the CPU: bad options at the edge, a gate that tested nothing, the -m gpu
selection, failure texts, fused timing rows, and the install as deployed (stub FlashInfer trio
from a loopback index) with the account of which kernels came prebuilt."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bot.cli import main
from bot.core.artifacts import account, install_spec, parse_install_list, pip_install_args
from bot.errors import InputError
from gpu_stubs import install_plan, serve_trio, stub_suite
from servers import static_index

REPO = Path(__file__).resolve().parents[1]


def _sites(tmp_path: Path) -> tuple[Path, Path]:
    old, new = tmp_path / "old", tmp_path / "new"
    for site, version in ((old, "0.6.8.post1"), (new, "0.6.11")):
        (site / "flashinfer").mkdir(parents=True)
        (site / "flashinfer" / "__init__.py").write_text(f'__version__ = "{version}"\n')
        (site / f"flashinfer_python-{version}.dist-info").mkdir()
    return old, new


@pytest.mark.parametrize(("args", "message"), [
    (["--rounds", "4"], "--rounds 4 x --samples-per-round 5 = 20 samples per version; the "
                        "statistics need at least 30 (use --rounds 6 or more, or --no-perf)"),
    (["--rounds", "0"], "--rounds 0: must be at least 1"),
    (["--samples-per-round", "-1"], "--samples-per-round -1: must be at least 1"),
    (["--threshold", "nan"], "--threshold nan: must be a fraction between 0 and 1 (0.05 = 5% "
                             "slower)"),
    (["--threshold", "1.5"], "--threshold 1.5: must be a fraction between 0 and 1 (0.05 = 5% "
                             "slower)"),
    (["--min-tests", "-2"], "--min-tests -2: must not be negative"),
    (["--fused-world", "3"], "--fused-world 3: FlashInfer's fusion runs on 2, 4, 8 or 16 GPUs "
                             "(0: no fused timing)"),
])
def test_bad_numbers_are_one_line_errors_before_anything_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
        message: str) -> None:
    old, new = _sites(tmp_path)
    out = tmp_path / "out"
    code = main(["gpu-gate", "--baseline", str(old), "--candidate", str(new), "--out",
                 str(out), *args])
    assert code == 2
    assert capsys.readouterr().err == f"pinbump: error: {message}\n"
    assert not out.exists()


def test_installs_named_one_way_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, _ = _sites(tmp_path)
    assert main(["gpu-gate", "--baseline", str(old), "--install", str(tmp_path / "x.json"),
                 "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.startswith("pinbump: error: gpu-gate: give the installs "
                                              "one way")


def test_every_test_skipped_is_a_failed_gate(tmp_path: Path) -> None:
    """The real gpu_tests/ with no torch and a stub flashinfer: everything skips, so the gate
    fails (it passed with exit 0 before)."""
    old, new = _sites(tmp_path)
    out = tmp_path / "out"
    code = main(["gpu-gate", "--baseline", str(old), "--candidate", str(new), "--out",
                 str(out), "--no-perf", "--tests", str(REPO / "gpu_tests")])
    assert code == 1
    gate = json.loads((out / "gate.json").read_text())
    assert gate["passed"] is False
    cand = gate["tests"]["candidate"]
    assert cand["executed"] == 0 and cand["skipped"] == cand["tests"] > 0
    assert gate["too_few_tests"].startswith("0 kernel test(s) executed on the candidate")
    assert "**Not enough tested:**" in (out / "summary.md").read_text()


def test_the_jobs_minimum_counts_executed_tests_and_cpu_self_tests_are_deselected(
        tmp_path: Path) -> None:
    old, new = _sites(tmp_path)
    for site in (old, new):  # the stub suite calls these
        (site / "flashinfer" / "__init__.py").write_text(
            "def load_module(name):\n    return b'x'\n\n"
            "def load_cubin(rel):\n    return b'x'\n")
    suite = stub_suite(tmp_path / "suite")
    base = ["gpu-gate", "--baseline", str(old), "--candidate", str(new), "--no-perf",
            "--tests", str(suite)]
    assert main([*base, "--out", str(tmp_path / "a")]) == 0
    gate = json.loads((tmp_path / "a" / "gate.json").read_text())
    assert gate["passed"] is True
    # 4 gpu tests selected (the unmarked CPU self-test deselected by -m gpu), 3 executed
    assert (gate["tests"]["candidate"]["tests"], gate["tests"]["candidate"]["executed"]) == \
        (4, 3)
    assert main([*base, "--out", str(tmp_path / "b"), "--min-tests", "4"]) == 1
    gate = json.loads((tmp_path / "b" / "gate.json").read_text())
    assert "3 kernel test(s) executed on the candidate (4 selected, 1 skipped), fewer than " \
           "the job's minimum of 4" in gate["too_few_tests"]
    # an explicit marker selection replaces the default: the CPU self-test now runs and fails
    assert main([*base, "--out", str(tmp_path / "c"), "--pytest-arg=-m",
                 "--pytest-arg=not gpu"]) == 1
    failed = json.loads((tmp_path / "c" / "gate.json").read_text())["tests"]["candidate"]
    assert failed["failed"] == ["test_kernels::test_cpu_self_test"]
    assert "a CPU self-test must not run" in failed["failures_text"][0]["text"]


FUSED_PERF = '''\
"""A stand-in for gpu_tests/fused_perf.py: writes what the real driver writes."""
import argparse, json, pathlib
ap = argparse.ArgumentParser()
for flag in ("--baseline", "--candidate", "--out", "--workspace", "--threshold", "--world"):
    ap.add_argument(flag)
ap.add_argument("--extra-path", action="append", default=[])
a = ap.parse_args()
row = lambda case, verdict, ratio, lo, hi: {"case": case, "name": case,
    "baseline_median": 1e-5, "candidate_median": 1e-5 * ratio, "ratio": ratio,
    "ci95": [lo, hi], "threshold": float(a.threshold), "samples": [40, 40],
    "verdict": verdict, "note": ""}
out = pathlib.Path(a.out)
report = {"world": int(a.world), "comparisons": {
    "new_vs_old/fused": [row("t1_h4096", "no change", 1.0, 0.97, 1.03),
                         row("t128_h4096", "regression", 1.3, 1.2, 1.4)],
    "new_vs_old/unfused": [row("t1_h4096", "no change", 1.0, 0.98, 1.02),
                           row("t128_h4096", "no change", 1.01, 0.99, 1.03)],
    "fused_vs_unfused/candidate": [row("t1_h4096", "improvement", 0.6, 0.55, 0.65)]}}
(out / ("fused-%sgpu.json" % a.world)).write_text(json.dumps(report))
(out / ("fused-%sgpu.md" % a.world)).write_text("| tokens | hidden |\\n| 1 | 4096 |\\n")
'''

PERF_WORKER = '''\
import json, sys
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "setup":
        ans = {"ok": True, "device": "stub", "version": "x", "copy_bandwidth": 4e12,
               "bytes": {"rmsnorm": 1000}}
    else:
        ans = {"ok": True, "times": [1e-4 + i * 1e-9 for i in range(req["samples"])]}
    print(json.dumps(ans), flush=True)
'''


def test_fused_timing_rows_gate_like_single_gpu_ones(tmp_path: Path) -> None:
    """--fused-world 2 runs the suite's fused_perf.py; its new_vs_old rows join the perf table
    (a fused regression fails the gate), fused_vs_unfused only informs, the table reaches the
    summary."""
    old, new = _sites(tmp_path)
    suite = stub_suite(tmp_path / "suite")
    (suite / "fused_perf.py").write_text(FUSED_PERF)
    (suite / "perf_worker.py").write_text(PERF_WORKER)
    out = tmp_path / "out"
    code = main(["gpu-gate", "--baseline", str(old), "--candidate", str(new), "--out",
                 str(out), "--no-tests", "--fused-world", "2", "--tests", str(suite)])
    assert code == 1
    gate = json.loads((out / "gate.json").read_text())
    names = [(p["name"], p["verdict"]) for p in gate["perf"]]
    assert names == [("rmsnorm", "no change"), ("fused t1_h4096", "no change"),
                     ("fused t128_h4096", "regression"), ("unfused t1_h4096", "no change"),
                     ("unfused t128_h4096", "no change")]
    summary = (out / "summary.md").read_text()
    assert "#### Fused allreduce + RMSNorm on 2 GPUs" in summary and "| 1 | 4096 |" in summary


# ---------------------------------------------------------------- install as deployed


@pytest.mark.parametrize(("package", "version", "urls", "message"), [
    ("flashinfer-python", "--index-url=http://evil", ["https://pypi.org/simple"],
     "is not a version"),
    ("flashinfer-python", "0.6.11; rm -rf /", ["https://pypi.org/simple"], "is not a version"),
    ("--pre", "0.6.11", ["https://pypi.org/simple"], "is not a package name"),
    ("flashinfer-python", "0.6.11", ["--trusted-host=evil"], "is not an http(s) index URL"),
    ("flashinfer-python", "0.6.11", ["file:///etc"], "is not an http(s) index URL"),
    ("flashinfer-python", "0.6.11", ["https://u:p@example.org/simple"],
     "without credentials"),
    ("flashinfer-python", "0.6.11", ["http://example.org/simple"], "loopback only"),
    ("flashinfer-python", "0.6.11", ["https://example.org/simple x"], "is not an index URL"),
    ("flashinfer-python", "0.6.11", [], "no index URL"),
    ("flashinfer-python", "v0.6.11", ["https://pypi.org/simple"], "not a normalized version"),
])
def test_install_specs_from_untrusted_text_are_validated(
        package: str, version: str, urls: list[str], message: str) -> None:
    with pytest.raises(InputError) as info:
        install_spec("plan.json", package, version, urls)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_pip_arguments_come_only_from_the_spec() -> None:
    spec = install_spec("x", "flashinfer-jit-cache", "0.6.11+cu130",
                        ["https://flashinfer.ai/whl/cu130", "https://mirror.example/cu130"])
    args = pip_install_args(spec, "/t")
    assert args[-1] == "flashinfer-jit-cache==0.6.11+cu130"
    assert args[args.index("--index-url") + 1] == "https://flashinfer.ai/whl/cu130"
    assert args[args.index("--extra-index-url") + 1] == "https://mirror.example/cu130"
    assert "--no-deps" in args and "--only-binary=:all:" in args
    with pytest.raises(InputError, match="item 0: expected exactly the keys"):
        parse_install_list([{"package": "a", "version": "1", "index_urls": [], "x": 1}], "f")


@pytest.mark.parametrize(("deployed", "site", "workspace", "opened", "failures", "jit"), [
    # everything prebuilt and loaded from the packages
    (("flashinfer-python", "flashinfer-jit-cache", "flashinfer-cubin"),
     ["flashinfer_jit_cache/jit_cache/norm/norm.so", "flashinfer_cubin/cubins/g/a.cubin"],
     [], ["site:flashinfer_jit_cache/jit_cache/norm/norm.so",
          "site:flashinfer_cubin/cubins/g/a.cubin"], 0, ()),
    # a module the jit-cache does not ship is built on the runner, as it would be deployed
    (("flashinfer-python", "flashinfer-jit-cache"),
     ["flashinfer_jit_cache/jit_cache/norm/norm.so"],
     [".cache/flashinfer/0.6.11/90/cached_ops/fp4/fp4.so"], [], 0, ("fp4",)),
    # a module the jit-cache ships was JIT-built: the tested kernel is not the deployed one
    (("flashinfer-python", "flashinfer-jit-cache"),
     ["flashinfer_jit_cache/jit_cache/norm/norm.so"],
     [".cache/flashinfer/0.6.11/90/cached_ops/norm/norm.so"], [], 1, ("norm",)),
    # JIT-only deploy (no jit-cache): building is what the target does
    (("flashinfer-python",), [], [".cache/flashinfer/0.6.11/90/cached_ops/norm/norm.so"], [],
     0, ("norm",)),
    # a cubin flashinfer-cubin ships was downloaded instead
    (("flashinfer-python", "flashinfer-cubin"), ["flashinfer_cubin/cubins/g/a.cubin"],
     [".cache/flashinfer/cubins/g/a.cubin"], [], 1, ()),
])
def test_artifact_account(deployed: tuple[str, ...], site: list[str], workspace: list[str],
                          opened: list[str], failures: int, jit: tuple[str, ...]) -> None:
    report = account(deployed, site, workspace, opened)
    assert len(report.failures) == failures
    assert report.jit_built == jit


def test_install_as_deployed_and_account_for_each_kernel(tmp_path: Path) -> None:
    """Both sides install the trio from the plan's per-package indexes on a loopback server;
    the baseline loads its norm module from flashinfer-jit-cache and its cubin from
    flashinfer-cubin; the candidate's loader misses the jit-cache layout, so its norm module is
    JIT-built on the runner although the package ships it: the gate fails and says so."""
    with static_index(tmp_path / "srv") as srv:
        serve_trio(srv.root, srv.base)
        plan = install_plan(tmp_path, srv, ("0.6.8.post1", "0.6.11"))
        out = tmp_path / "out"
        code = main(["gpu-gate", "--install", str(plan), "--out", str(out), "--no-perf",
                     "--tests", str(stub_suite(tmp_path / "suite"))])
    gate = json.loads((out / "gate.json").read_text())
    assert code == 1 and gate["passed"] is False
    assert (gate["baseline"], gate["candidate"]) == ("0.6.8.post1", "0.6.11")
    # flashinfer-python came from /pypi, not the decoy on the jit-cache index
    assert 'aot/{name}.so' in (out / "site-candidate" / "flashinfer" / "__init__.py").read_text()
    assert (out / "site-candidate" / "flashinfer_jit_cache-0.6.11+cu130.dist-info").is_dir()
    base, cand = gate["artifacts"]["baseline"], gate["artifacts"]["candidate"]
    assert base["deployed"] == ["flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache"]
    assert "jit-cache:jit_cache/norm/norm.so" in base["loaded"]
    assert "cubin:gemm/kernel_a.cubin" in base["loaded"]
    assert base["jit_built"] == ["fp4_quantization_90"] and base["failures"] == []
    assert cand["jit_built"] == ["fp4_quantization_90", "norm"]
    assert cand["failures"] == ["norm was JIT-built on the runner although flashinfer-jit-cache "
                                "ships it prebuilt (the deployed module was not the one "
                                "tested)"]
    summary = (out / "summary.md").read_text()
    assert "- **candidate: norm was JIT-built on the runner" in summary
    assert gate["tests"]["candidate"]["failures"] == 0  # the suite itself passed


def test_deploy_lists_come_from_the_pins_and_the_base_policy(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    from bot.commands.gpu_gate import deploy_lists

    monkeypatch.setenv("PINBUMP_FLASHINFER_WHL", "https://mirror.example/whl")
    for name, version, extra in (("base", "0.6.8.post1", ""),
                                 ("head", "0.6.11", '[index]\nflashinfer-python = '
                                                    '"https://evil.example/simple"\n')):
        repo = tmp_path / name
        repo.mkdir()
        (repo / "pyproject.toml").write_text(
            '[project]\nname = "t"\nversion = "1"\ndependencies = [\n'
            f'  "flashinfer-python=={version}",\n  "flashinfer-cubin=={version}",\n'
            f'  "flashinfer-jit-cache=={version}",\n]\n')
        (repo / "pinbump.toml").write_text(extra)
    with pytest.raises(InputError, match="name the runner's with --cuda-variant"):
        deploy_lists(tmp_path / "base", tmp_path / "head", None)
    base, head = deploy_lists(tmp_path / "base", tmp_path / "head", "cu130")
    assert [(s.package, s.version) for s in head] == [
        ("flashinfer-python", "0.6.11"), ("flashinfer-cubin", "0.6.11"),
        ("flashinfer-jit-cache", "0.6.11")]
    urls = {s.package: s.index_urls for s in head}
    assert urls["flashinfer-python"] == ("https://pypi.org/simple",)  # not the head's config
    assert urls["flashinfer-jit-cache"] == ("https://mirror.example/whl/cu130",)
    assert {s.package: s.index_urls for s in base} == urls
    assert os.environ["PINBUMP_FLASHINFER_WHL"] == "https://mirror.example/whl"


# ------------------------------------------------ runner labels of real targets (README)


def _readme_block(after: str) -> str:
    text = (REPO / "README.md").read_text()
    start = text.index("```toml\n", text.index(after)) + len("```toml\n")
    return text[start:text.index("```", start)]


def test_sglang_runner_labels_map_onto_gate_jobs(tmp_path: Path) -> None:
    """The README's SGLang mapping: three jobs on SGLang's runner labels, one required status
    each, a minimum of executed tests per job; install-workflows writes those runners."""
    import tomlkit

    from bot.core.config import parse_config

    block = _readme_block("SGLang (self-hosted runners")
    policy = parse_config(tomlkit.parse(block).unwrap(), "pinbump.toml")
    assert dict(policy.runner_labels) == {"1-gpu": ("1-gpu-runner",),
                                          "2-gpu": ("2-gpu-runner",),
                                          "4-gpu-h100": ("4-gpu-h100",)}
    assert policy.checks_required == ("pinbump/gpu-gate/1-gpu", "pinbump/gpu-gate/2-gpu",
                                      "pinbump/gpu-gate/4-gpu-h100")
    assert dict(policy.gate_min_tests) == {"1-gpu": 10, "2-gpu": 5, "4-gpu-h100": 7}
    repo = tmp_path / "sglang"
    repo.mkdir()
    (repo / "pinbump.toml").write_text(block)
    (repo / "pyproject.toml").write_text('[project]\nname = "t"\nversion = "1"\n'
                                         'dependencies = ["flashinfer-python==0.6.8.post1"]\n')
    assert main(["install-workflows", "--repo", str(repo),
                 "--pinbump-repository", "acme/pinbump", "--pinbump-ref", "v1.0.0"]) == 0
    out = (repo / ".github" / "workflows" / "pinbump-gpu-gate.yml").read_text()
    for job, label in (("1-gpu", "1-gpu-runner"), ("2-gpu", "2-gpu-runner"),
                       ("4-gpu-h100", "4-gpu-h100")):
        assert f"- job: {job}\n            labels: [{label}]" in out


def test_vllm_gates_on_buildkite_statuses_and_dispatches_nothing() -> None:
    """The README's vLLM mapping: Buildkite's statuses are the GPU jobs; no GitHub GPU job
    exists, so nothing is dispatched; green Buildkite merges, red fails, missing waits."""
    import tomlkit

    from bot.commands.pr import required_checks
    from bot.core.config import STATUS_PREFIX, parse_config
    from bot.core.decisions import GateState, decide, undispatched
    from bot.core.models import Check, CheckState

    policy = parse_config(tomlkit.parse(_readme_block("vLLM runs its GPU CI on Buildkite"))
                          .unwrap(), "pinbump.toml")
    assert dict(policy.runner_labels) == {}
    assert policy.checks_required == ("buildkite/ci/pr",)
    assert undispatched([f"{STATUS_PREFIX}/{j}" for j in policy.runner_labels], []) == []
    required = required_checks(policy)

    def state(bk: CheckState) -> GateState:
        checks = [Check("buildkite/ci/pr", bk, "https://buildkite.com/vllm/ci/builds/1", "s")]
        checks += [Check(name, CheckState.SUCCESS, "", "s") for name in required
                   if name != "buildkite/ci/pr"]
        return decide(required, checks).state

    assert state(CheckState.SUCCESS) == GateState.SUCCESS
    assert state(CheckState.FAILURE) == GateState.FAILURE
    assert state(CheckState.PENDING) == GateState.PENDING


def test_the_jobs_minimum_comes_from_the_base_config(tmp_path: Path) -> None:
    old, new = _sites(tmp_path)
    for site in (old, new):
        (site / "flashinfer" / "__init__.py").write_text(
            "def load_module(name):\n    return b'x'\n\n"
            "def load_cubin(rel):\n    return b'x'\n")
    base = tmp_path / "base"
    base.mkdir()
    (base / "pinbump.toml").write_text('[runner-labels]\n1-gpu = ["1-gpu-runner"]\n'
                                       '[gate-min-tests]\n1-gpu = 4\n')
    out = tmp_path / "out"
    assert main(["gpu-gate", "--baseline", str(old), "--candidate", str(new), "--no-perf",
                 "--tests", str(stub_suite(tmp_path / "suite")), "--out", str(out),
                 "--job", "1-gpu", "--policy-repo", str(base)]) == 1
    assert json.loads((out / "gate.json").read_text())["min_tests"] == 4
