"""drift's reach (every way a target gets at the package), renames, review findings from
advisories and from the GPU gate's observations, and what counts as signal."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.adapters.apisource import importable, main_package, shipped_advisories
from bot.core.api import ApiIndex, blank_name, build_api, default_doc
from bot.core.drift import analyse, find_rename, reachable_breakages, scan_source
from bot.core.review import Advisories, parse_advisories, parse_observations
from bot.errors import InputError
from drift_fixture import REACH, REACH_EXPECTED, REACH_V1, REACH_V2

GATE_JSON = Path(__file__).resolve().parents[1] / "gpu_tests" / "results" / \
    "2026-11-29-h200" / "ab-gate.json"


def build(tmp_path: Path, files: dict[str, str], version: str, dist: str = "kernelpkg"
          ) -> ApiIndex:
    root = tmp_path / f"{dist}-{version}"
    members = importable({k: v.encode() for k, v in files.items()})
    for rel, data in members.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    package = main_package(list(members), dist)
    assert package is not None
    return build_api(root, package, version)[0]


@pytest.fixture
def reach_apis(tmp_path: Path) -> tuple[ApiIndex, ApiIndex]:
    return build(tmp_path, REACH_V1, "1.0"), build(tmp_path, REACH_V2, "2.0")


def test_every_reach_form_is_found() -> None:
    sites = scan_source("r.py", REACH, {"kernelpkg"})
    assert [(s.line, s.kind, s.via, s.path) for s in sites] == REACH_EXPECTED


@pytest.mark.parametrize(("code", "expected"), [
    # a module bound to a name inside try:, used in a function through `global`
    ("try:\n    from kernelpkg import comm\nexcept ImportError:\n    comm = None\n"
     "x = comm\ndef f():\n    global x\n    x.g()\n", ["call kernelpkg.comm.g"]),
    # an attribute holding a module
    ("import kernelpkg\nclass A:\n    def __init__(self):\n        self.c = kernelpkg.comm\n"
     "    def f(self):\n        self.c.g(1)\n", ["call kernelpkg.comm.g"]),
    # importlib, plain and imported by name
    ("from importlib import import_module\nm = import_module('kernelpkg.comm')\nm.g()\n",
     ["reference kernelpkg.comm", "call kernelpkg.comm.g"]),
    # getattr called directly, and a hasattr probe
    ("import kernelpkg as k\ngetattr(k, 'g')(1)\nhasattr(k, 'H')\n",
     ["call kernelpkg.g", "reference kernelpkg.H"]),
    # string pairs in a table and a lazy wrapper
    ("T = [('kernelpkg.gemm', 'K')]\nf = wrap('kernelpkg.moe', 'fused')\nf(1)\n",
     ["reference kernelpkg.gemm.K", "reference kernelpkg.moe.fused", "call kernelpkg.moe.fused"]),
    # one name, two functions, two modules: each function sees its own (vLLM reuses `mod`)
    ("import importlib\ndef a():\n    mod = importlib.import_module('kernelpkg')\n"
     "    return getattr(mod, 'f')\ndef b():\n    mod = importlib.import_module('kernelpkg.gemm')\n"
     "    return hasattr(mod, 'K')\n",
     ["reference kernelpkg.f", "reference kernelpkg.gemm", "reference kernelpkg.gemm.K"]),
    # a module imported inside a function is bound there, unless declared global
    ("def a():\n    import kernelpkg.comm as c\n    c.g()\ndef b():\n    c.g()\n",
     ["call kernelpkg.comm.g"]),
    # look-alikes that are not the package: a prose string, another root, a relative import
    ("s = 'kernelpkg is fast'\nimport otherpkg\notherpkg.g()\nfrom . import kernelpkg\n", []),
    ("def broken(:\n    kernelpkg.g()\n", []),  # not Python: nothing to map
    # a log message naming a module is prose, not a reference
    ("import kernelpkg\nkernelpkg.log('kernelpkg.gemm failed: %s')\n", ["call kernelpkg.log"]),
    # a three-part string is a reference to the whole path
    ("x = 'kernelpkg.comm.allreduce'\n", ["reference kernelpkg.comm.allreduce"]),
    # bindings made later in the file, by name and by attribute, still resolve
    ("import kernelpkg\ndef run(x):\n    return b.allreduce(x)\nb = a\na = kernelpkg.comm\n",
     ["call kernelpkg.comm.allreduce"]),
    ("import kernelpkg\ndef run():\n    return fast.allreduce(1)\nfast = Ops.comm\n"
     "Ops.comm = kernelpkg.comm\n", ["call kernelpkg.comm.allreduce"]),
    # a chained assignment binds every name; annotated and walrus assignments bind too
    ("import kernelpkg\na = b = kernelpkg.comm\nb.allreduce(1)\n",
     ["call kernelpkg.comm.allreduce"]),
    ("import kernelpkg\ncomm: object = kernelpkg.comm\ncomm.allreduce(1)\n",
     ["call kernelpkg.comm.allreduce"]),
    ("import kernelpkg\nif (c := kernelpkg.comm):\n    c.allreduce(1)\n",
     ["call kernelpkg.comm.allreduce"]),
    # the package imported after another one in one statement
    ("import os, kernelpkg\nkernelpkg.g(1)\n", ["call kernelpkg.g"]),
    # a fallback import from another package does not hide the package's own
    ("try:\n    from kernelpkg import rmsnorm\nexcept ImportError:\n"
     "    from fallback import rmsnorm\nrmsnorm(x)\n", ["call kernelpkg.rmsnorm"]),
    # a relative import of a vendored copy with the same name is not the package
    ("from .kernelpkg import helper\nhelper(1)\n", []),
    # a module returned by a call, used at once
    ("import importlib\nimportlib.import_module('kernelpkg.comm').allreduce(x)\n",
     ["call kernelpkg.comm.allreduce", "reference kernelpkg.comm"]),
    # getattr with a name only known at run time, and a lazy helper whose second argument is
    # not a name: nothing more can be told
    ("import kernelpkg\ngetattr(kernelpkg, op_name)(x)\n", []),
    ("m = lazy('kernelpkg.gemm', fallback)\nm.run(1)\n", ["reference kernelpkg.gemm"]),
    ("TABLE = [('kernelpkg.gemm', 3)]\n", ["reference kernelpkg.gemm"]),
    # setattr is no probe of the package's API
    ("import kernelpkg\nsetattr(kernelpkg, 'debug', True)\n", []),
    # a call in a lambda
    ("import kernelpkg\nf = lambda x: kernelpkg.g(x)\n", ["call kernelpkg.g"]),
    # a decorator is evaluated in the enclosing scope, the body in the function's own
    ("import kernelpkg\nops = kernelpkg.ops\n@ops.register('fused')\ndef fused(x):\n"
     "    ops = kernelpkg.comm\n    return ops.allreduce(x)\n",
     ["call kernelpkg.ops.register", "call kernelpkg.comm.allreduce"]),
    # at one position the call comes before the reference it goes through
    ("import kernelpkg as k\ngetattr(k, 'comm').allreduce(x)\n",
     ["call kernelpkg.comm.allreduce", "reference kernelpkg.comm"]),
])
def test_reach_forms_one_by_one(code: str, expected: list[str]) -> None:
    assert [f"{s.kind} {s.path}" for s in scan_source("t.py", code, {"kernelpkg"})] == expected


def test_a_call_site_records_its_arguments_and_its_line() -> None:
    code = ("import kernelpkg\n"
            "kernelpkg.gemm(a, b, *rest, alpha=1, **extra)  # " + "x" * 200 + "\n"
            "if a:\n    kernelpkg.gemm(a, beta=2)\n")
    first, second = scan_source("t.py", code, {"kernelpkg"})
    assert (first.positional, first.keywords, first.star_args, first.star_kwargs) == \
        (2, ("alpha",), True, True)
    assert first.text == code.splitlines()[1].strip()[:160] and len(first.text) == 160
    assert (second.line, second.column, second.positional, second.keywords, second.star_args,
            second.star_kwargs, second.text) == (4, 4, 1, ("beta",), False, False,
                                                 "kernelpkg.gemm(a, beta=2)")


def test_columns_count_characters_for_the_codemod() -> None:
    [site] = scan_source("t.py", "import kernelpkg\nx = 'é'; kernelpkg.g(1)\n", {"kernelpkg"})
    assert site.column == 9  # characters, as libcst counts them, not UTF-8 bytes (10)


def test_reach_findings(reach_apis: tuple[ApiIndex, ApiIndex]) -> None:
    report = analyse({"r.py": REACH}, {"kernelpkg"}, *reach_apis, "kernelpkg")
    got = {(f.line, f.function): (f.severity, f.change) for f in report.findings}
    assert {k: v[0] for k, v in got.items()} == {
        (27, "kernelpkg.comm.create_workspace"): "notice",
        (31, "kernelpkg.comm.create_workspace"): "notice",
        (35, "kernelpkg.comm.create_workspace"): "notice",
        (40, "kernelpkg.norm.rmsnorm"): "breaking",
        (46, "kernelpkg.rmsnorm"): "breaking",
        (46, "kernelpkg.layernorm"): "review",
        (49, "kernelpkg.gemm.Sm120BlockScaledDenseGemmKernel"): "breaking",
        (53, "kernelpkg.fused_moe.b12x_fused_moe"): "breaking",
        (55, "kernelpkg.gemm.Sm120BlockScaledDenseGemmKernel"): "breaking",
        (56, "kernelpkg.fused_moe.b12x_fused_moe"): "breaking",
    }
    assert got[(53, "kernelpkg.fused_moe.b12x_fused_moe")][1] == \
        "`kernelpkg.fused_moe.b12x_fused_moe` was removed"
    assert report.calls_scanned == 7
    groups = report.notice_groups()
    assert [(g.function, len(g.where)) for g in groups] == [
        ("kernelpkg.comm.create_workspace", 3)]


def test_rename_through_a_string(reach_apis: tuple[ApiIndex, ApiIndex]) -> None:
    report = analyse({"r.py": REACH}, {"kernelpkg"}, *reach_apis, "kernelpkg")
    pair, probe = (next(f for f in report.findings if f.line == n) for n in (49, 55))
    new_name = "kernelpkg.gemm.Sm120BlockScaledGemmKernel"
    assert pair.change == f"`kernelpkg.gemm.Sm120BlockScaledDenseGemmKernel` was renamed to " \
                          f"`{new_name}`"
    assert pair.detail.startswith("the string reference `_KERNELS = ")
    assert pair.detail.endswith(f"use `{new_name}`")
    assert "`hasattr` now answers False" in probe.detail and new_name in probe.detail


def test_rename_needs_one_clear_candidate(tmp_path: Path) -> None:
    cls = "class {}:\n    def run(self):\n        return 1\n"
    old = build(tmp_path, {"kernelpkg/__init__.py": cls.format("GemmKernel")}, "1")
    two = build(tmp_path, {"kernelpkg/__init__.py": cls.format("GemmKernelA") +
                           cls.format("GemmKernelB")}, "2")
    one = build(tmp_path, {"kernelpkg/__init__.py": cls.format("GemmKernelV2")}, "3")
    other = build(tmp_path, {"kernelpkg/__init__.py": cls.format("Unrelated")}, "4")
    assert find_rename("kernelpkg.GemmKernel", old, two) is None  # a tie: no guess
    assert find_rename("kernelpkg.GemmKernel", old, one) == "kernelpkg.GemmKernelV2"
    assert find_rename("kernelpkg.GemmKernel", old, other) is None  # names too far apart


ADVISORY = '''
[[advisory]]
package = "KernelPkg"
function = "kernelpkg.comm.create_workspace"
since = "2.0"
unless-passed = "group"
check = "pass the sub-group"
'''


def test_review_from_an_advisory(reach_apis: tuple[ApiIndex, ApiIndex]) -> None:
    code = REACH + "\n\ndef grouped(g):\n    return _comm.create_workspace(group=g)\n"
    advisories = Advisories(parse_advisories(ADVISORY, "a.toml"))
    report = analyse({"r.py": code}, {"kernelpkg"}, *reach_apis, "kernelpkg",
                     reviews=[advisories])
    review = [f for f in report.of("review") if f.function.endswith("create_workspace")]
    assert [f.line for f in review] == [27, 31, 35]  # not 61: that call passes group
    assert {f.detail for f in review} == {"check: pass the sub-group"}
    assert {f.change for f in review} == {"advisory for 2.0: behaviour changed"}
    # a bump that does not cross 2.0 gets none
    old, new = reach_apis
    same = analyse({"r.py": code}, {"kernelpkg"}, new, new, "kernelpkg", reviews=[advisories])
    assert not same.of("review") or all("advisory" not in f.change for f in same.of("review"))
    assert old.version == "1.0"


@pytest.mark.parametrize(("text", "message"), [
    ("[[advisory]]\npackage = 'x'\n", "needs package, function, since and check"),
    ("[[advisory]]\npackage='x'\nfunction='f'\nsince='soon'\ncheck='c'\n", "not a version"),
    ("[[advisory]\n", "invalid TOML"),
])
def test_bad_advisory_files(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_advisories(text, "a.toml")


FLASHINFER = {
    "0.6.8.post1": {
        "flashinfer/__init__.py": "from flashinfer.quantization import fp4_quantize\n"
                                  "from flashinfer import comm\n",
        "flashinfer/quantization.py": "def fp4_quantize(input, global_scale=None, "
                                      "enable_pdl=None):\n    return input\n",
        "flashinfer/comm/__init__.py": "def create_allreduce_fusion_workspace(backend='auto', "
                                       "world_size=None):\n    return None\n"},
    "0.6.11": {
        "flashinfer/__init__.py": "from flashinfer.quantization import fp4_quantize\n"
                                  "from flashinfer import comm\n",
        "flashinfer/quantization.py": "def fp4_quantize(input, global_scale=None, "
                                      "is_global_scale_inversed=False, enable_pdl=None):\n"
                                      "    return input\n",
        "flashinfer/comm/__init__.py": "def create_allreduce_fusion_workspace(backend='auto', "
                                       "world_size=None, group=None):\n    return None\n"},
}
SERVING = '''from flashinfer import fp4_quantize
import flashinfer.comm as comm

_ws = comm.create_allreduce_fusion_workspace("trtllm", 8)
_ws_tp = comm.create_allreduce_fusion_workspace("trtllm", 8, group=None)
_ws_kw = comm.create_allreduce_fusion_workspace(**options)  # cannot tell: advised


def quantize(x, scale):
    return fp4_quantize(x, scale)
'''


@pytest.fixture
def flashinfer_apis(tmp_path: Path) -> tuple[ApiIndex, ApiIndex]:
    return tuple(build(tmp_path, files, v, "flashinfer-python")  # type: ignore[return-value]
                 for v, files in FLASHINFER.items())


def test_shipped_advisories_for_the_built_in_group(
        flashinfer_apis: tuple[ApiIndex, ApiIndex]) -> None:
    advisories = parse_advisories(shipped_advisories(), "advisories.toml")
    assert {(a.function, str(a.since)) for a in advisories} == {
        ("flashinfer.comm.create_allreduce_fusion_workspace", "0.6.10"),
        ("flashinfer.fp4_quantize", "0.6.11")}
    report = analyse({"serving.py": SERVING}, {"flashinfer"}, *flashinfer_apis,
                     "flashinfer-python", reviews=[Advisories(advisories)])
    review = {(f.line, f.detail) for f in report.of("review")}
    assert len(review) == 3  # the workspace calls not seen passing group, the quantize call
    (ws_line, ws), (kw_line, kw), (q_line, q) = sorted(review)
    assert (ws_line, kw_line) == (4, 6) and ws == kw and "pass the sub-group (group=...)" in ws
    assert q_line == 10 and "global_scale must have shape [1] or [num_tokens]" in q
    assert all("\n" not in d for _, d in review)  # one line each


def test_review_from_the_gpu_gate_observations(
        flashinfer_apis: tuple[ApiIndex, ApiIndex]) -> None:
    gate = parse_observations(GATE_JSON.read_text(), str(GATE_JSON))  # as gpu-gate wrote it
    assert (gate.baseline, gate.candidate) == ("0.6.8.post1", "0.6.11")
    assert set(gate.per_function()) == {"create_allreduce_fusion_workspace", "fp4_quantize"}
    report = analyse({"serving.py": SERVING}, {"flashinfer"}, *flashinfer_apis,
                     "flashinfer-python", reviews=[gate])
    review = {f.line: f for f in report.of("review")}
    assert sorted(review) == [4, 5, 6, 10]
    assert review[10].change == "GPU gate: recorded behaviour changed"
    assert review[10].detail.startswith("check the inputs this call passes: the GPU gate saw "
                                       "`global_scale[2]` change from 'accepted' to 'rejected")
    assert review[10].detail.endswith("(+1 more)")
    assert "`accepts_group` change from False to True" in review[4].detail
    # a report of other versions maps onto nothing
    other = parse_observations(GATE_JSON.read_text().replace('"0.6.11"', '"0.6.12"'), "g")
    assert not analyse({"serving.py": SERVING}, {"flashinfer"}, *flashinfer_apis,
                       "flashinfer-python", reviews=[other]).of("review")


@pytest.mark.parametrize("text", ["[]", "{}", "not json", '{"baseline": "1", "candidate": "2", '
                                  '"observation_diff": [{"no": "key"}]}'])
def test_bad_gate_reports(text: str) -> None:
    with pytest.raises(InputError):
        parse_observations(text, "gate.json")


def test_only_the_reachable_public_api_counts(reach_apis: tuple[ApiIndex, ApiIndex]) -> None:
    old, _ = reach_apis
    breakages = [
        ("kernelpkg.norm.rmsnorm", "rmsnorm: renamed eps"),  # called by the target
        ("kernelpkg.norm.rmsnorm(eps)", "a parameter of a function it calls"),
        ("kernelpkg.fused_moe", "a module holding something it reaches"),
        ("kernelpkg.launch", "public, but the target never reaches it"),
        ("kernelpkg._internal.K", "private"),
    ]
    reached = {"kernelpkg.norm.rmsnorm", "kernelpkg.fused_moe.b12x_fused_moe", "kernelpkg"}
    assert reachable_breakages(breakages, reached, old) == [
        "rmsnorm: renamed eps", "a module holding something it reaches"]


WS_DOC = '''def ws(backend="auto"{extra}):
    """Create the workspace.

    Args:
        backend: Which backend. Defaults to "auto".{doc}
        world_size: Ranks.
    """
'''


def test_a_new_parameter_whose_documented_default_is_a_behaviour_is_review(
        tmp_path: Path) -> None:
    old = build(tmp_path, {"kernelpkg/__init__.py": WS_DOC.format(extra="", doc="")}, "1.0")
    new = build(tmp_path, {"kernelpkg/__init__.py": WS_DOC.format(
        extra=", group=None, tile=None",
        doc="\n        group: Process group for symmetric memory rendezvous (trtllm only). "
            "Defaults to torch.distributed.group.WORLD.\n        tile: Tile size.")}, "2.0")
    code = ("import kernelpkg\nkernelpkg.ws()\nkernelpkg.ws(group=g)\n")
    report = analyse({"t.py": code}, {"kernelpkg"}, old, new, "kernelpkg")
    by_line = {f.line: f for f in report.findings}
    assert by_line[2].severity == "review"
    assert by_line[2].detail == ("check that the new default suits this call: new `group` is "
                                 "left to its default: Defaults to "
                                 "torch.distributed.group.WORLD")
    assert by_line[3].severity == "notice"  # it passes group; tile has no documented default


@pytest.mark.parametrize(("doc", "name", "expected"), [
    ("Args:\n    group: The group. Defaults to torch.distributed.group.WORLD.\n", "group",
     "Defaults to torch.distributed.group.WORLD"),
    ("Args:\n    group (ProcessGroup): If None, the WORLD group is used. More.\n", "group",
     "If None, the WORLD group is used"),
    ("Parameters\n----------\ngroup : ProcessGroup, optional\n    The group.\n    Default is"
     " WORLD.\nrank : int\n", "group", "Default is WORLD"),
    ("Args:\n    group: The group.\n    rank: Defaults to 0.\n", "group", None),  # not its own
    ("Args:\n    rank: The rank.\n", "group", None),
    # a default that only restates the literal, or that does nothing, is no behaviour
    ("Args:\n    swizzled: Whether. Defaults to True.\n", "swizzled", None),
    ("Args:\n    out: If None, no routing replay recording occurs (zero overhead).\n", "out",
     None),
])
def test_default_doc(doc: str, name: str, expected: str | None) -> None:
    assert default_doc(doc, name, {"swizzled": "True"}.get(name, "None")) == expected


@pytest.mark.parametrize(("text", "word"), [
    ("def mm(a):\n    return mm_fp4(a) + mm(a) + xmm + mm_ + _mm", "mm"),
    ("mm", "mm"), ("", "mm"), ("mmmm mm mmm", "mm"), ("a_b a_ba _a_b a_b", "a_b"),
    ("é éa aé é", "é"), ("ｘx x ×x", "x"), ("x1 1x x 1 x", "x"),  # non-ASCII word characters
    ("__init__(self) __init__x", "__init__"), ("-- a-b --", "--"),  # not a word: the regex
])
def test_blanking_a_name_is_the_regex_substitution(text: str, word: str) -> None:
    """The rename detector's body hash blanks the object's own name without compiling a
    pattern per name; the result is the word-boundary substitution's, character for
    character."""
    assert blank_name(text, word) == re.sub(rf"\b{re.escape(word)}\b", "_", text)
