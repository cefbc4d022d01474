"""drift: synthetic versions of a package (every kind of API change), call sites in every
import form, the codemod, and the command end to end against a real pypiserver."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import libcst as cst
import pytest

from bot.adapters.apisource import importable, main_package
from bot.cli import main
from bot.core.api import ApiIndex, build_api
from bot.core.drift import (
    SEVERITY_ORDER,
    analyse,
    describe_changes,
    fix_source,
    scan_source,
)
from drift_fixture import EXPECTED, TARGET, V1, V2
from servers import PypiServer

GOLDEN = Path(__file__).parent / "golden"
OLD = datetime.now(timezone.utc) - timedelta(days=60)


def api_of(tmp_path: Path, files: dict[str, str], version: str) -> ApiIndex:
    root = tmp_path / version
    members = importable({k: v.encode() for k, v in files.items()})
    for rel, data in members.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    package = main_package(list(members), "kernelpkg")
    assert package == "kernelpkg"
    return build_api(root, package, version)[0]


@pytest.fixture
def apis(tmp_path: Path) -> tuple[ApiIndex, ApiIndex]:
    return api_of(tmp_path, V1, "1.0"), api_of(tmp_path, V2, "2.0")


def test_importable_leaves_out_vendored_sources() -> None:
    members = importable({k: v.encode() for k, v in V1.items()})
    assert "kernelpkg/data/vendored/thirdparty.py" not in members
    assert "kernelpkg/comm/allreduce.py" in members and "build_helper.py" in members


def test_api_index_follows_re_exports(apis: tuple[ApiIndex, ApiIndex]) -> None:
    old, new = apis
    assert old.resolve("kernelpkg.fp4_quantize") == "kernelpkg.quantization.fp4.fp4_quantize"
    assert new.resolve("kernelpkg.fp4_quantize") == "kernelpkg.quant.fp4.fp4_quantize"
    assert new.resolve("kernelpkg.quantization.fp4.fp4_quantize") is None
    assert old.resolve("kernelpkg.comm.create_workspace") == \
        "kernelpkg.comm.allreduce.create_workspace"
    assert ApiIndex.from_json(json.loads(json.dumps(old.to_json()))) == old


def test_every_import_form_is_found() -> None:
    sites = scan_source("t.py", TARGET, {"kernelpkg"})
    assert [(s.line, s.path) for s in sites] == [
        (16, "kernelpkg.fp4_quantize"), (17, "kernelpkg.fp4_quantize"),
        (18, "kernelpkg.rmsnorm"), (19, "kernelpkg.rmsnorm"), (20, "kernelpkg.old_helper"),
        (21, "kernelpkg.quantization.fp4.fp4_quantize"), (22, "kernelpkg.legacy.moved_fn"),
        (23, "kernelpkg.comm.create_workspace"), (24, "kernelpkg.comm.create_workspace"),
        (25, "kernelpkg.launch"), (26, "kernelpkg.layernorm"),
        (27, "kernelpkg.comm.create_workspace")]
    assert sites[0].positional == 8 and sites[8].star_kwargs


@pytest.mark.parametrize(("line", "function", "severity", "change", "detail"), EXPECTED,
                         ids=[f"{e[0]}-{e[2]}" for e in EXPECTED])
def test_classification(apis: tuple[ApiIndex, ApiIndex], line: int, function: str,
                        severity: str, change: str, detail: str) -> None:
    report = analyse({"t.py": TARGET}, {"kernelpkg"}, *apis, "kernelpkg")
    found = [f for f in report.findings if f.line == line]
    assert len(found) == 1, [(f.line, f.severity) for f in report.findings]
    f = found[0]
    assert (f.function, f.severity) == (function, severity)
    assert change in f.change and detail in f.detail, (f.change, f.detail)


def test_findings_are_sorted_breaking_first(apis: tuple[ApiIndex, ApiIndex]) -> None:
    report = analyse({"t.py": TARGET}, {"kernelpkg"}, *apis, "kernelpkg")
    assert [f.severity for f in report.findings] == [e[2] for e in sorted(
        EXPECTED, key=lambda e: (SEVERITY_ORDER[e[2]], e[0]))]
    assert list(SEVERITY_ORDER) == ["breaking", "review", "unverifiable", "notice"]
    assert report.calls_scanned == 12


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("def f(a, b=1): ...", "def f(a, b=1, c=2): ...", ["new optional parameter `c=2`"]),
    ("def f(a, b=1): ...", "def f(a, c=2, b=1): ...", ["parameter `c` inserted before `b`"]),
    ("def f(a, b): ...", "def f(b, a): ...", ["positional parameters reordered"]),
    ("def f(a, b=1): ...", "def f(a, *, b=1): ...",
     ["`b` changed from positional or keyword to keyword-only"]),
    ("def f(a, b=1): ...", "def f(a, b): ...", ["`b` is now required"]),
    ("def f(a): ...", "def f(a, x): ...", ["new required parameter `x`"]),
    # a parameter inserted before another new one is just new
    ("def f(a): ...", "def f(a, x=1, y=2): ...",
     ["new optional parameter `x=1`", "new optional parameter `y=2`"]),
    # a rename, then a new parameter after it
    ("def f(a, b): ...", "def f(a, c, d=1): ...",
     ["parameter `b` renamed to `c`", "new optional parameter `d=1`"]),
    # a removed parameter, then a changed default after it
    ("def f(a, b, c=1): ...", "def f(a, c=2): ...",
     ["parameter `b` removed", "default of `c` changed: 1 -> 2"]),
])
def test_describe_changes(tmp_path: Path, old: str, new: str, expected: list[str]) -> None:
    a = api_of(tmp_path, {"kernelpkg/__init__.py": old + "\n"}, "a")
    b = api_of(tmp_path, {"kernelpkg/__init__.py": new + "\n"}, "b")
    assert describe_changes(a.functions["kernelpkg.f"], b.functions["kernelpkg.f"]) == expected


def test_codemod_golden_and_idempotent(apis: tuple[ApiIndex, ApiIndex]) -> None:
    report = analyse({"t.py": TARGET}, {"kernelpkg"}, *apis, "kernelpkg")
    fixed_text, fixed = fix_source(TARGET, report.findings)
    assert fixed_text == (GOLDEN / "drift_fixed.py").read_text()
    assert [(f.line, f.fix) for f in fixed] == [(16, ((6, "enable_pdl"), (7, "backend")))]
    cst.parse_module(fixed_text)
    compile(fixed_text, "t.py", "exec")
    again = analyse({"t.py": fixed_text}, {"kernelpkg"}, *apis, "kernelpkg")
    assert fix_source(fixed_text, again.findings) == (fixed_text, [])
    line16 = [f for f in again.findings if f.line == 16]
    assert [f.severity for f in line16] == ["notice"]  # binds as it did under 1.0


def test_unsafe_calls_are_listed_not_touched(tmp_path: Path) -> None:
    """The third argument bound to `c`, which 2.0 removed: no keyword form binds as before."""
    old = api_of(tmp_path, {"kernelpkg/__init__.py": "def g(a, b=1, c=2): ...\n"}, "a")
    new = api_of(tmp_path, {"kernelpkg/__init__.py": "def g(a, z=0, b=1): ...\n"}, "b")
    text = "import kernelpkg\nkernelpkg.g(1, 2, 3)\n"
    report = analyse({"t.py": text}, {"kernelpkg"}, old, new, "kernelpkg")
    [finding] = report.breaking
    assert finding.fix == ()
    assert "positional argument 2 bound to `b` and now binds to `z`" in finding.detail
    assert fix_source(text, report.findings) == (text, [])


# -- end to end -----------------------------------------------------------------------------
def publish(pypi: PypiServer) -> None:
    pypi.add("kernelpkg", "1.0", files=V1, uploaded=OLD)
    pypi.add("kernelpkg", "2.0", files=V2, uploaded=OLD, padding=2_000_000)


def target_repo(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "model.py").write_text(TARGET)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "t"\nrequires-python = ">=3.10"\n'
        'dependencies = ["kernelpkg==1.0"]\n\n'
        '[tool.pinbump]\ngroup = "k"\n[tool.pinbump.groups.k]\nlead = "kernelpkg"\n')
    return root


def test_drift_command_json_fix_and_cache(pypi: PypiServer, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    repo = target_repo(tmp_path / "repo")
    cache = tmp_path / "cache"
    argv = ["drift", "--repo", str(repo), "--index-url", pypi.url, "--cache-dir", str(cache)]
    assert main([*argv, "--json"]) == 1  # no --from/--to: the pin and the plan's target
    doc = json.loads(capsys.readouterr().out)
    assert {(f["line"], f["severity"]) for f in doc} == {(e[0], e[2]) for e in EXPECTED}
    first = next(f for f in doc if f["line"] == 16)
    assert set(first) == {"file", "line", "function", "severity", "change", "old_signature",
                          "new_signature", "detail"}
    assert first["file"] == "src/model.py"
    assert first["new_signature"].startswith("fp4_quantize(input, global_scale=None")
    # sources came through range requests: the 2 MB wheel was not downloaded
    assert len([p for p in (cache / "src").glob("*/*") if (p / "kernelpkg").is_dir()]) == 2

    assert main([*argv, "--from", "1.0", "--to", "2.0", "--fix"]) == 1  # others stay breaking
    captured = capsys.readouterr()
    assert "pinbump: fixed src/model.py:16 kernelpkg.fp4_quantize" in captured.err
    assert "pinbump: not fixed src/model.py:18 kernelpkg.rmsnorm" in captured.err
    assert (repo / "src" / "model.py").read_text() == (GOLDEN / "drift_fixed.py").read_text()
    before = (repo / "src" / "model.py").stat().st_mtime_ns
    assert main([*argv, "--from", "1.0", "--to", "2.0", "--fix"]) == 1
    assert "pinbump: fixed" not in capsys.readouterr().err
    assert (repo / "src" / "model.py").stat().st_mtime_ns == before

    assert main([*argv, "--from", "1.0", "--to", "2.0", "--markdown"]) == 1
    md = capsys.readouterr().out
    assert md.startswith("### API drift: `kernelpkg` 1.0 → 2.0")
    assert "| breaking | `src/model.py:18` | `kernelpkg.rmsnorm` |" in md
    # griffe's own finder, over the whole public API
    assert "griffe: " in md and "breaking change(s) in the public API of kernelpkg" in md
    assert "`launch(stream)`: *Parameter was added as required*" in md


def test_drift_range_reads_and_bad_version(pypi: PypiServer, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from bot.commands.context import PlanOptions, open_services
    from planning import run_drift

    publish(pypi)
    repo = target_repo(tmp_path / "repo")
    opts = PlanOptions(repo=repo, index_url=pypi.url, cache_dir=tmp_path / "cache")
    with open_services(opts) as services:
        outcome = run_drift(opts, "1.0", "2.0", services)
        assert outcome.new is not None and outcome.new.how == "range"
        assert services.http.stats.bytes_received < 500_000  # the wheel is over 2 MB
    outcome = run_drift(opts, "1.0", "2.0")
    assert outcome.new is not None and outcome.new.how == "cache"
    assert main(["drift", "--repo", str(repo), "--index-url", pypi.url, "--from", "1.0",
                 "--to", "9.9"]) == 2
    assert capsys.readouterr().err == f"pinbump: error: kernelpkg 9.9: no wheel on {pypi.url}\n"


@pytest.mark.network
def test_flashinfer_0_6_8_post1_to_0_6_11(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    example = Path(__file__).resolve().parents[1] / "examples" / "sglang"
    code = main(["drift", "--repo", str(example), "--from", "0.6.8.post1", "--to", "0.6.11",
                 "--json", "--cache-dir", str(tmp_path / "cache")])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    fp4 = [f for f in doc if f["function"] == "flashinfer.fp4_quantize"]
    assert fp4 and fp4[0]["severity"] == "breaking"
    assert fp4[0]["file"] == "python/sglang/srt/layers/quantization/fp4_utils.py"
    assert fp4[0]["line"] == 16
    assert "`is_global_scale_inversed` inserted before `enable_pdl`" in fp4[0]["change"]
    ws = [f for f in doc if f["function"] == "flashinfer.comm.create_allreduce_fusion_workspace"]
    assert ws and ws[0]["severity"] in ("notice", "unverifiable")
    assert "`group=None`" in ws[0]["change"]


@pytest.mark.parametrize(("paths", "dist", "expected"), [
    (["build_backend.py", "flashinfer/__init__.py", "flashinfer/a.py"], "flashinfer-python",
     "flashinfer"),
    (["flashinfer_python/__init__.py", "flashinfer/__init__.py", "flashinfer/a.py"],
     "flashinfer-python", "flashinfer"),
    (["quack/__init__.py", "quack/x.py", "tests/__init__.py"], "quack-kernels", "quack"),
    (["other/__init__.py", "other/y.py", "helpers/__init__.py"], "zzz", "other"),
    (["single.py"], "single", "single"),
    ([], "none", None),
])
def test_main_package(paths: list[str], dist: str, expected: str | None) -> None:
    assert main_package(paths, dist) == expected


def test_sources_come_from_a_verified_download_without_range(static, tmp_path: Path) -> None:
    """A static index served without Range support: the whole wheel, sha256 checked."""
    from bot.commands.context import PlanOptions
    from planning import run_drift

    static.add("kernelpkg", "1.0", files=V1, uploaded=OLD)
    static.add("kernelpkg", "2.0", files=V2, uploaded=OLD)
    static.publish()
    repo = target_repo(tmp_path / "repo")
    outcome = run_drift(PlanOptions(repo=repo, index_url=static.url, no_cache=True), "1.0",
                        "2.0")
    assert outcome.new is not None and outcome.new.how == "download"
    assert {(f.line, f.severity) for f in outcome.report.findings} == \
        {(e[0], e[2]) for e in EXPECTED}


@pytest.mark.parametrize("ranges", [True, False])
def test_sources_are_written_member_by_member_and_only_the_importable_kept(
        pypi: PypiServer, static, tmp_path: Path, ranges: bool) -> None:
    """Each source member goes to disk as it is inflated (never all held: flashinfer 0.7 is
    92 MB of them), through range requests or a whole download; what is left is the
    importable package alone, as if the bundled third-party sources were never written."""
    from bot.commands.context import PlanOptions
    from planning import run_drift

    bundled = {"kernelpkg/data/cutlass/python/gen.py": "x = 1\n", "setup_helper.py": "y = 2\n",
               "kernelpkg/notpkg/deep/z.py": "z = 3\n"}
    server = pypi if ranges else static
    for version, files in (("1.0", V1), ("2.0", V2)):
        server.add("kernelpkg", version, files={**files, **bundled}, uploaded=OLD)
    if not ranges:
        static.publish()
    repo = target_repo(tmp_path / "repo")
    cache = tmp_path / "cache"
    outcome = run_drift(PlanOptions(repo=repo, index_url=server.url, cache_dir=cache), "1.0",
                        "2.0")
    assert outcome.new is not None and outcome.new.how == ("range" if ranges else "download")
    roots = list((cache / "src").glob("*/*"))
    written = {frozenset(p.relative_to(root).as_posix() for p in root.rglob("*")
                         if p.is_file()) for root in roots}
    assert written == {frozenset({*(f for f in files if f.endswith(".py") and
                                    not f.startswith("kernelpkg/data/")), "setup_helper.py"})
                       for files in (V1, V2)}
    assert not [p for root in roots for p in root.rglob("*") if p.is_dir() and
                p.name in ("data", "notpkg")]
    assert {(f.line, f.severity) for f in outcome.report.findings} == \
        {(e[0], e[2]) for e in EXPECTED}


def test_drift_fetches_no_page_and_no_byte_range_twice(
        pypi: PypiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """drift plans (the pages), then reads both versions' sources (range requests): within
    one command no page is fetched twice and no range is asked for twice."""
    from collections import Counter

    from bot.adapters.http import HttpClient

    asked: Counter[tuple[str, str, str]] = Counter()
    request = HttpClient.request

    def counting(self: HttpClient, method: str, url: str, headers: object = None,
                 *args: object, **kwargs: object) -> object:
        asked[(method, url, dict(headers or {}).get("Range", ""))] += 1  # type: ignore[call-overload]
        return request(self, method, url, headers, *args, **kwargs)  # type: ignore[arg-type]

    publish(pypi)
    repo = target_repo(tmp_path / "repo")
    monkeypatch.setattr(HttpClient, "request", counting)
    assert main(["drift", "--repo", str(repo), "--index-url", pypi.url, "--cache-dir",
                 str(tmp_path / "cache")]) == 1, capsys.readouterr().err
    assert any(url.endswith("/kernelpkg/") for _, url, _ in asked)
    assert [k for k, n in asked.items() if n > 1] == []
