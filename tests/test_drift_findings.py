"""drift's findings, one API change at a time: what each kind of call meets under the new
version (severity, what changed, why this call is affected), what a vanished name became
(moved, renamed, removed) and how a report counts. Versions are real Python sources loaded
with griffe, as drift loads a wheel's."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest
from test_drift_reach import build

from bot.core.api import ApiIndex
from bot.core.drift import (
    CallSite,
    DriftReport,
    Finding,
    analyse,
    find_rename,
    is_public,
    reachable_breakages,
    scan_source,
)
from bot.core.models import SiteKind, Via

BINDS = "the call binds as before; review whether it should pass the new or changed parameters"


def versions(tmp_path: Path, old: dict[str, str], new: dict[str, str]
             ) -> tuple[ApiIndex, ApiIndex]:
    return (build(tmp_path, {"kernelpkg/__init__.py": "", **old}, "1.0"),
            build(tmp_path, {"kernelpkg/__init__.py": "", **new}, "2.0"))


@pytest.mark.parametrize(("old", "new", "call", "expected"), [
    # arguments passed through *args / **kwargs cannot be checked
    ("def g(a, b=1): ...", "def g(a, c=2, b=1): ...", "kernelpkg.g(*xs)",
     ("unverifiable", "parameter `c` inserted before `b`",
      "arguments are passed through *args: check by hand whether this call needs: "
      "parameter `c` inserted before `b`")),
    ("def g(a, b=1): ...", "def g(a, c=2, b=1): ...", "kernelpkg.g(x, *xs, **kw)",
     ("unverifiable", "parameter `c` inserted before `b`",
      "arguments are passed through *args and **kwargs: check by hand whether this call "
      "needs: parameter `c` inserted before `b`")),
    # a positional argument the new signature has no slot for
    ("def g(a, b): ...", "def g(a): ...", "kernelpkg.g(1, 2)",
     ("breaking", "parameter `b` removed", "positional argument 2 (`b`) no longer fits")),
    # a positional argument that now goes into *scales still fits
    ("def g(x, scale): ...", "def g(x, *scales): ...", "kernelpkg.g(t, s)",
     ("notice", "new optional parameter `*scales=()`; parameter `scale` removed", BINDS)),
    # a renamed keyword: an error, unless the new signature takes **kwargs
    ("def g(a, eps=1e-6): ...", "def g(a, epsilon=1e-6): ...", "kernelpkg.g(x, eps=1e-5)",
     ("breaking", "parameter `eps` renamed to `epsilon`", "keyword `eps` no longer exists")),
    ("def g(a, eps=1e-6): ...", "def g(a, epsilon=1e-6, **kwargs): ...",
     "kernelpkg.g(x, eps=1e-5)",
     ("notice", "parameter `eps` renamed to `epsilon`; new optional parameter `**kwargs={}`",
      BINDS)),
    # a keyword for a parameter that became positional-only
    ("def g(a, b): ...", "def g(a, b, /): ...", "kernelpkg.g(1, b=2)",
     ("breaking", "`a` changed from positional or keyword to positional-only; `b` changed "
      "from positional or keyword to positional-only", "keyword `b` no longer exists")),
    # a new required parameter this call already passes by keyword
    ("def g(a): ...", "def g(a, group): ...", "kernelpkg.g(x, group=pg)",
     ("notice", "new required parameter `group`", BINDS)),
    # a required parameter of both versions that the call leaves out is not new
    ("def g(a, b, c=1): ...", "def g(a, b, c=2): ...", "kernelpkg.g(x)",
     ("review", "default of `c` changed: 1 -> 2",
      "check that the new default suits this call: `c` now defaults to `2` (was `1`)")),
    ("def g(a, b=1, c=2): ...", "def g(a, b=3, c=4): ...", "kernelpkg.g(x)",
     ("review", "default of `b` changed: 1 -> 3; default of `c` changed: 2 -> 4",
      "check that the new default suits this call: `b` now defaults to `3` (was `1`); `c` "
      "now defaults to `4` (was `2`)")),
    # a default the call passes explicitly is no concern
    ("def g(a, b=1, c=2): ...", "def g(a, b=3, c=2): ...", "kernelpkg.g(x, 5)",
     ("notice", "default of `b` changed: 1 -> 3", BINDS)),
    # a moved positional argument and a vanished keyword: both named, nothing rewritten
    ("def g(a, b=1, eps=1e-6): ...", "def g(a, z=0, b=1): ...", "kernelpkg.g(x, y, eps=1)",
     ("breaking", "parameter `z` inserted before `b`; parameter `eps` removed",
      "positional argument 2 bound to `b` and now binds to `z`; keyword `eps` no longer "
      "exists")),
    # deprecation is news only when it is new
    ("def g(a): ...", "@deprecated('use h')\ndef g(a): ...", "kernelpkg.g(1)",
     ("notice", "deprecated (deprecated('use h'))", BINDS)),
    ("@deprecated('use h')\ndef g(a): ...", "@deprecated('use h')\ndef g(a, b=1): ...",
     "kernelpkg.g(1)", ("notice", "new optional parameter `b=1`", BINDS)),
    # a documented default already there in the old version is no news
    ('def ws(backend="auto", group=None):\n    """Args:\n        group: Process group. '
     'Defaults to torch.distributed.group.WORLD.\n    """\n',
     'def ws(backend="auto", group=None, tile=None):\n    """Args:\n        group: Process '
     'group. Defaults to torch.distributed.group.WORLD.\n    """\n', "kernelpkg.ws()",
     ("notice", "new optional parameter `tile=None`", BINDS)),
    # a class that gained a constructor: nothing to compare the call with
    ("class Plan:\n    pass", "class Plan:\n    def __init__(self, n): ...", "kernelpkg.Plan(4)",
     None),
])
def test_what_a_call_meets_under_the_new_signature(
        tmp_path: Path, old: str, new: str, call: str,
        expected: tuple[str, str, str] | None) -> None:
    old_api, new_api = versions(tmp_path, {"kernelpkg/__init__.py": old + "\n"},
                                {"kernelpkg/__init__.py": new + "\n"})
    report = analyse({"t.py": f"import kernelpkg\n{call}\n"}, {"kernelpkg"}, old_api, new_api,
                     "kernelpkg")
    got = [(f.severity, f.change, f.detail) for f in report.findings]
    assert got == ([expected] if expected else [])
    if expected:
        [f] = report.findings
        assert (f.file, f.line, f.column, f.function, f.fix) == \
            ("t.py", 2, 0, f"kernelpkg.{call[10:call.index('(')]}", ())
        name = call[10:call.index("(")]
        assert f.old_signature == old_api.lookup(f"kernelpkg.{name}").render()  # type: ignore[union-attr]
        assert f.new_signature == new_api.lookup(f"kernelpkg.{name}").render()  # type: ignore[union-attr]


MOVES_V1 = {"kernelpkg/__init__.py": "from kernelpkg.legacy import moved_fn\n",
            "kernelpkg/legacy.py": "def moved_fn(x):\n    return x\n",
            "kernelpkg/gemm.py": "def run(a):\n    return a + 1\n",
            "kernelpkg/old.py": "def f():\n    pass\n"}
MOVES_V2 = {"kernelpkg/util.py": "def moved_fn(x, y=0):\n    return x\n",
            "kernelpkg/gemm.py": "def run_batch(a):\n    return a + 1\n"}
MOVES_TARGET = """import importlib
import kernelpkg
from kernelpkg.legacy import moved_fn
moved_fn(1)
from kernelpkg import gemm
gemm.run(2)
hasattr(gemm, 'run')
getattr(gemm, 'run')
importlib.import_module('kernelpkg.old')
"""


def test_what_a_vanished_name_became(tmp_path: Path) -> None:
    old, new = versions(tmp_path, MOVES_V1, MOVES_V2)
    report = analyse({"t.py": MOVES_TARGET}, {"kernelpkg"}, old, new, "kernelpkg")
    renamed = "`kernelpkg.gemm.run` was renamed to `kernelpkg.gemm.run_batch`"
    use = "finds nothing under the new version: use `kernelpkg.gemm.run_batch`"
    assert [(f.line, f.column, f.function, f.severity, f.change, f.detail, f.old_signature,
             f.new_signature) for f in report.findings] == [
        (4, 0, "kernelpkg.legacy.moved_fn", "breaking",
         "moved to `kernelpkg.util.moved_fn` without a re-export at `kernelpkg.legacy.moved_fn`",
         "the call `moved_fn(1)` fails with AttributeError or ImportError under the new "
         "version: use `kernelpkg.util.moved_fn`", "moved_fn(x)", "moved_fn(x, y=0)"),
        (6, 0, "kernelpkg.gemm.run", "breaking", renamed,
         "the call `gemm.run(2)` fails with AttributeError or ImportError under the new "
         "version: use `kernelpkg.gemm.run_batch`", "run(a)", "run_batch(a)"),
        (7, 0, "kernelpkg.gemm.run", "breaking", renamed,
         "`hasattr` now answers False and the code silently takes its fallback: the check "
         f"`hasattr(gemm, 'run')` {use}", "run(a)", "run_batch(a)"),
        (8, 0, "kernelpkg.gemm.run", "breaking", renamed,
         f"`getattr` `getattr(gemm, 'run')` {use}", "run(a)", "run_batch(a)"),
        # a module has no signature: its kind stands for it
        (9, 24, "kernelpkg.old", "breaking", "`kernelpkg.old` was removed",
         "the string reference `importlib.import_module('kernelpkg.old')` finds nothing under "
         "the new version", "module", ""),
    ]
    assert [f.as_dict()["function"] for f in report.unfixed] == [f.function
                                                                 for f in report.findings]


def test_a_move_is_told_before_a_rename(tmp_path: Path) -> None:
    """The old name still exists elsewhere: it moved, even if a look-alike was added."""
    old, new = versions(tmp_path, {"kernelpkg/legacy.py": "def moved_fn(x):\n    return x\n"},
                        {"kernelpkg/util.py": "def moved_fn(x):\n    return x\n"
                                              "def moved_fn_v2(x):\n    return x\n"})
    code = "from kernelpkg.legacy import moved_fn\nmoved_fn(1)\n"
    [finding] = analyse({"t.py": code}, {"kernelpkg"}, old, new, "kernelpkg").findings
    assert finding.change == ("moved to `kernelpkg.util.moved_fn` without a re-export at "
                              "`kernelpkg.legacy.moved_fn`")


OPS = "kernelpkg/ops.py"
QUANTS = "def quant(x):\n    return x + 1\ndef quantize(x):\n    return x - 1\n"
NORM_V1 = {"kernelpkg/ops/__init__.py": "from kernelpkg.ops.norm import rms_norm\n",
           "kernelpkg/ops/norm.py": "def rms_norm(x, eps):\n    return x / eps\n"}


@pytest.mark.parametrize(("path", "old", "new", "expected"), [
    # a function without parameters is known by its body
    ("kernelpkg.ops.init", {OPS: "def init():\n    return 0\n"},
     {OPS: "def initialize():\n    return 0\n"}, "kernelpkg.ops.initialize"),
    # a class by its public members
    ("kernelpkg.ops.Runner",
     {OPS: "class Runner:\n    def run(self): ...\n    def stop(self): ...\n"},
     {OPS: "class KernelRunner:\n    def run(self): ...\n    def stop(self):\n        pass\n"},
     "kernelpkg.ops.KernelRunner"),
    # a class is never the new name of a function, even with matching names
    ("kernelpkg.ops.make", {OPS: "def make(a, b):\n    return a\n"},
     {OPS: "class Maker:\n    def a(self): ...\n    def b(self): ...\n"}, None),
    # a name the old version had is a move, not a rename; a different shape is skipped
    ("kernelpkg.ops.quant", {OPS: QUANTS},
     {OPS: "def quantize(x):\n    return x - 1\ndef quanta(a, b, c):\n    return a\n"
           "def quant_fp4(x):\n    return x + 1\n"}, "kernelpkg.ops.quant_fp4"),
    ("kernelpkg.ops.quant", {OPS: QUANTS},
     {OPS: "def quantize(x):\n    return x + 1\n"}, None),
    # public never becomes private, nor private public
    ("kernelpkg.ops.fused", {OPS: "def fused(x):\n    return x\n"},
     {OPS: "def _fused(x):\n    return x\n"}, None),
    ("kernelpkg.ops._fused", {OPS: "def _fused(x):\n    return x\n"},
     {OPS: "def fused(x):\n    return x\n"}, None),
    # of two candidates with the same parameters, the one with the same body
    ("kernelpkg.ops.quant", {OPS: "def quant(x):\n    return x + 1\n"},
     {OPS: "def quant_fp8(x):\n    return x * 2\ndef quant_fp4(x):\n    return x + 1\n"},
     "kernelpkg.ops.quant_fp4"),
    # neither the parameters nor the body: no rename
    ("kernelpkg.ops.quant", {OPS: "def quant(x):\n    return x + 1\n"},
     {OPS: "def quant_v2(a, b):\n    return a * b\n"}, None),
    # of two equal bodies, the closer name
    ("kernelpkg.ops.quant", {OPS: "def quant(x):\n    return x + 1\n"},
     {OPS: "def quant_fp4_v2(x):\n    return x + 1\ndef quant_fp4(x):\n    return x + 1\n"},
     "kernelpkg.ops.quant_fp4"),
    # the package itself is never renamed
    ("kernelpkg", {OPS: "def quant(x):\n    return x + 1\n"}, {}, None),
    # of two equal bodies and names, the one in the same module
    ("kernelpkg.ops.norm.rms_norm", NORM_V1,
     {"kernelpkg/ops/__init__.py": "from kernelpkg.ops.norm import rmsnorm\n",
      "kernelpkg/ops/norm.py": "def rmsnorm(x, eps):\n    return x / eps\n",
      "kernelpkg/legacy.py": "def rmsnorm(x, eps):\n    return x / eps\n"},
     "kernelpkg.ops.norm.rmsnorm"),
    # reached through a re-export: the public name when the new version re-exports it too,
    # else where it is defined
    ("kernelpkg.ops.rms_norm", NORM_V1,
     {"kernelpkg/ops/__init__.py": "from kernelpkg.ops.norm import rmsnorm\n",
      "kernelpkg/ops/norm.py": "def rmsnorm(x, eps):\n    return x / eps\n"},
     "kernelpkg.ops.rmsnorm"),
    ("kernelpkg.ops.rms_norm", NORM_V1,
     {"kernelpkg/ops/__init__.py": "",
      "kernelpkg/ops/norm.py": "def rmsnorm(x, eps):\n    return x / eps\n"},
     "kernelpkg.ops.norm.rmsnorm"),
    # names alike by one half are enough; less is not
    ("kernelpkg.ops.run", {OPS: "def run(a):\n    return a + 1\n"},
     {OPS: "def run_batch(a):\n    return a + 1\n"}, "kernelpkg.ops.run_batch"),
    ("kernelpkg.ops.run", {OPS: "def run(a):\n    return a + 1\n"},
     {OPS: "def gemm_batch(a):\n    return a + 1\n"}, None),
])
def test_find_rename(tmp_path: Path, path: str, old: dict[str, str], new: dict[str, str],
                     expected: str | None) -> None:
    assert find_rename(path, *versions(tmp_path, old, new)) == expected


@pytest.mark.parametrize(("path", "public"), [
    ("kernelpkg.gemm.run", True),
    ("kernelpkg.Plan.__call__", True),  # a dunder is public
    ("kernelpkg._impl.run", False),  # a private module in the middle
    ("kernelpkg.Plan._run", False),
    ("kernelpkg.Plan.__run", False),  # name-mangled, not a dunder
])
def test_is_public(path: str, public: bool) -> None:
    assert is_public(path) is public


def test_breakages_on_what_the_target_reaches(tmp_path: Path) -> None:
    old, _ = versions(tmp_path, {
        "kernelpkg/__init__.py": "def launch(grid, timeout=None): ...\n"
                                 "class Runner:\n    def run(self): ...\n",
        "kernelpkg/norm.py": "def rmsnorm(x): ...\ndef layernorm(x): ...\n"}, {})
    breakages = [
        ("kernelpkg._impl.K", "private, listed first"),
        ("kernelpkg.launch.timeout", "a parameter of a function it calls"),
        ("kernelpkg.Runner.run", "a method of a class it calls"),
        ("kernelpkg.norm.layernorm", "a sibling in a module it reaches: not reached"),
        ("kernelpkg.norm.rmsnorm", "the function it calls"),
    ]
    reached = {"kernelpkg.launch", "kernelpkg.Runner", "kernelpkg.norm", "kernelpkg.norm.rmsnorm"}
    assert reachable_breakages(breakages, reached, old) == [
        "a parameter of a function it calls", "a method of a class it calls",
        "the function it calls"]


def test_a_report_counts_every_file_and_call(tmp_path: Path) -> None:
    old, new = versions(tmp_path, {"kernelpkg/__init__.py": "def g(a): ...\ndef h(a): ...\n"},
                        {"kernelpkg/__init__.py": "def g(a, b=1): ...\ndef h(a, c=1): ...\n"})
    files = {"a.py": "import kernelpkg\nkernelpkg.g(1)\nkernelpkg.h(1)\nkernelpkg.h(2)\n",
             "b.py": "from kernelpkg import h\nh(1)\n",
             "c.py": "import kernelpkg\nkernelpkg.g(1)\n"}
    # c.py comes pre-scanned (empty, as a cache would hold for it): it is not scanned again
    report = analyse(files, {"kernelpkg"}, old, new, "kernelpkg", sites={"c.py": []})
    assert (report.files_scanned, report.calls_scanned) == (3, 4)
    assert [(f.file, f.line) for f in report.findings] == [
        ("a.py", 2), ("a.py", 3), ("a.py", 4), ("b.py", 2)]
    assert report.reached == {"kernelpkg.g", "kernelpkg.h"}
    # notices grouped per function and change, the most frequent first
    assert [(g.function, g.where) for g in report.notice_groups()] == [
        ("kernelpkg.h", ["a.py:3", "a.py:4", "b.py:2"]), ("kernelpkg.g", ["a.py:2"])]


def test_reached_names_both_the_path_written_and_where_it_is_defined(tmp_path: Path) -> None:
    old, new = versions(tmp_path, NORM_V1, NORM_V1)
    report = analyse({"t.py": "from kernelpkg.ops import rms_norm\nrms_norm(x, 1e-6)\n"},
                     {"kernelpkg"}, old, new, "kernelpkg")
    assert report.reached == {"kernelpkg.ops.rms_norm", "kernelpkg.ops.norm.rms_norm"}
    assert report.findings == []


def test_only_breaking_findings_without_a_fix_need_a_hand_fix() -> None:
    def finding(severity: str, fix: tuple[tuple[int, str], ...] = ()) -> Finding:
        return Finding("t.py", 1, "kernelpkg.g", severity, "c", "g(a)", "g(b)", "d", fix=fix)

    report = DriftReport("kernelpkg", "1.0", "2.0", findings=[
        finding("breaking"), finding("breaking", ((1, "b"),)), finding("review")])
    assert report.unfixed == [report.findings[0]]
    assert report.breaking == report.findings[:2]


def test_a_site_read_back_from_the_scan_cache_is_the_same_site() -> None:
    """The scan cache stores sites as JSON: read back, kind and via are the vocabularies
    again, not bare strings."""
    code = "import kernelpkg as k\nk.g(1, key=2)\nhasattr(k, 'h')\nx = 'kernelpkg.comm'\n"
    sites = scan_source("t.py", code, {"kernelpkg"})
    rows = json.loads(json.dumps([asdict(s) for s in sites]))
    back = [CallSite(**{k: tuple(v) if isinstance(v, list) else v for k, v in row.items()})
            for row in rows]
    assert back == sites
    assert [(type(s.kind), type(s.via), s.kind, s.via) for s in back] == [
        (SiteKind, Via, SiteKind.CALL, Via.DIRECT),
        (SiteKind, Via, SiteKind.REFERENCE, Via.HASATTR),
        (SiteKind, Via, SiteKind.REFERENCE, Via.STRING)]


@pytest.mark.parametrize("brk", ["\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_a_call_after_a_character_only_str_splitlines_breaks_at_keeps_its_line(brk: str
                                                                              ) -> None:
    """Python numbers lines at \\n, \\r\\n and \\r only; a form feed or \\u2028 in a comment
    or a string does not shift a call's line, column or text."""
    code = (f"import flashinfer\n# page{brk}break\n"
            f"x = 'a{brk}b'; flashinfer.fp4_quantize(x)\nß = flashinfer.gemm(1)\n")
    sites = scan_source("t.py", code, {"flashinfer"})
    assert [(s.line, s.column, s.path, s.text) for s in sites] == [
        (3, 11, "flashinfer.fp4_quantize", f"x = 'a{brk}b'; flashinfer.fp4_quantize(x)"),
        (4, 4, "flashinfer.gemm", "ß = flashinfer.gemm(1)")]
