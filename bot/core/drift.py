"""drift: map API changes of the lead package onto the target's call sites; fix what is safe.

Pure: source texts and two ``ApiIndex`` values in, findings and rewritten texts out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import MetadataWrapper, PositionProvider

from bot.core.api import ApiIndex, Signature

SEVERITY_ORDER = {"breaking": 0, "unverifiable": 1, "notice": 2}


@dataclass(frozen=True)
class CallSite:
    file: str
    line: int
    column: int
    path: str  # dotted path as imported, e.g. "flashinfer.fp4_quantize"
    positional: int  # number of plain positional arguments
    keywords: tuple[str, ...]
    star_args: bool
    star_kwargs: bool
    text: str  # the call's first line, stripped


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    function: str
    severity: str  # breaking | unverifiable | notice
    change: str
    old_signature: str
    new_signature: str
    detail: str
    column: int = 0
    fix: tuple[tuple[int, str], ...] = ()  # (argument index, keyword) rewrites, when safe

    def as_dict(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "function": self.function,
                "severity": self.severity, "change": self.change,
                "old_signature": self.old_signature, "new_signature": self.new_signature,
                "detail": self.detail}


@dataclass
class DriftReport:
    package: str
    old_version: str
    new_version: str
    findings: list[Finding] = field(default_factory=list)
    api_breakages: list[str] = field(default_factory=list)  # griffe's one-line explanations
    calls_scanned: int = 0
    files_scanned: int = 0

    @property
    def breaking(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "breaking"]


# -- scanning ------------------------------------------------------------------------------
class _Imports(cst.CSTVisitor):
    def __init__(self, roots: set[str]) -> None:
        super().__init__()
        self.roots = roots
        self.bindings: dict[str, str] = {}

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            dotted = get_full_name_for_node(alias.name) or ""
            if dotted.split(".")[0] not in self.roots:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.bindings[alias.asname.name.value] = dotted
            else:
                head = dotted.split(".")[0]
                self.bindings[head] = head

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = get_full_name_for_node(node.module) or ""
        if module.split(".")[0] not in self.roots:
            return
        for alias in node.names:
            name = get_full_name_for_node(alias.name) or ""
            local = alias.asname.name.value if alias.asname is not None and isinstance(
                alias.asname.name, cst.Name) else name
            self.bindings[local] = f"{module}.{name}"


class _Calls(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, file: str, lines: Sequence[str], bindings: Mapping[str, str]) -> None:
        super().__init__()
        self.file, self.lines, self.bindings = file, lines, bindings
        self.sites: list[CallSite] = []

    def visit_Call(self, node: cst.Call) -> None:
        dotted = get_full_name_for_node(node.func)
        if not dotted:
            return
        head, _, rest = dotted.partition(".")
        if head not in self.bindings:
            return
        path = self.bindings[head] + (f".{rest}" if rest else "")
        pos = self.get_metadata(PositionProvider, node).start
        self.sites.append(CallSite(
            file=self.file, line=pos.line, column=pos.column, path=path,
            positional=sum(1 for a in node.args if a.keyword is None and not a.star),
            keywords=tuple(a.keyword.value for a in node.args if a.keyword is not None),
            star_args=any(a.star == "*" for a in node.args),
            star_kwargs=any(a.star == "**" for a in node.args),
            text=self.lines[pos.line - 1].strip()[:160]))


def scan_source(file: str, text: str, roots: set[str]) -> list[CallSite]:
    """Calls into ``roots`` (import names) through every import form, anywhere in the file."""
    if not any(r in text for r in roots):
        return []
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError:
        return []  # not valid Python for libcst: nothing we can map (reported by the caller)
    imports = _Imports(roots)
    module.visit(imports)
    if not imports.bindings:
        return []
    calls = _Calls(file, text.splitlines(), imports.bindings)
    MetadataWrapper(module, unsafe_skip_copy=True).visit(calls)
    return calls.sites


# -- comparing signatures ------------------------------------------------------------------
def describe_changes(old: Signature, new: Signature) -> list[str]:
    """Human one-liners for what changed between two signatures."""
    out: list[str] = []
    old_names = [p.name for p in old.params]
    new_names = [p.name for p in new.params]
    renamed: set[str] = set()
    for i, p in enumerate(new.params):
        if p.name in old_names:
            continue
        if i < len(old.params) and old.params[i].name not in new_names \
                and old.params[i].kind == p.kind:
            out.append(f"parameter `{old.params[i].name}` renamed to `{p.name}`")
            renamed.add(old.params[i].name)
            continue
        later = [q.name for q in new.params[i + 1:] if q.name in old_names and q.positional]
        if p.positional and later:
            out.append(f"parameter `{p.name}` inserted before `{later[0]}`")
        elif p.required:
            out.append(f"new required parameter `{p.name}`")
        else:
            out.append(f"new optional parameter `{p.render()}`")
    for p in old.params:
        if p.name not in new_names and p.name not in renamed:
            out.append(f"parameter `{p.name}` removed")
    old_pos = [n for n in (q.name for q in old.positionals) if n in new_names]
    new_pos = [n for n in (q.name for q in new.positionals) if n in old_names]
    if old_pos != new_pos and sorted(old_pos) == sorted(new_pos):
        out.append("positional parameters reordered")
    for p in old.params:
        q = new.param(p.name)
        if q is None:
            continue
        if q.kind != p.kind:
            out.append(f"`{p.name}` changed from {p.kind} to {q.kind}")
        if q.default != p.default and q.kind == p.kind:
            if q.default is None:
                out.append(f"`{p.name}` is now required")
            else:
                out.append(f"default of `{p.name}` changed: {p.default} -> {q.default}")
    if new.deprecated and not old.deprecated:
        out.append(f"deprecated ({new.deprecated})")
    return out


def _positional_name(sig: Signature, index: int) -> str | None:
    pos = sig.positionals
    if index < len(pos):
        return pos[index].name
    star = next((p for p in sig.params if p.kind == "variadic positional"), None)
    return f"*{star.name}" if star else None


def _binding_problems(site: CallSite, old: Signature, new: Signature
                      ) -> tuple[list[str], int | None]:
    """Why this call binds differently (or fails) under ``new``; and the first moved index."""
    problems: list[str] = []
    first: int | None = None
    old_names = {p.name for p in old.params}
    new_names = {p.name for p in new.params}
    for i in range(site.positional):
        before, after = _positional_name(old, i), _positional_name(new, i)
        renamed = before is not None and after is not None and before not in new_names \
            and after not in old_names  # same slot, new name: binds the same
        if before != after and not renamed:
            first = i if first is None else first
            problems.append(f"positional argument {i + 1} bound to `{before}` and now binds to "
                            f"`{after}`" if after else
                            f"positional argument {i + 1} (`{before}`) no longer fits")
    accepts_any = new.has("variadic keyword")
    for kw in site.keywords:
        param = new.param(kw)
        if (param is None or param.kind == "positional-only") and not accepts_any:
            problems.append(f"keyword `{kw}` no longer exists")
    bound = {_positional_name(new, i) for i in range(site.positional)} | set(site.keywords)
    for p in new.params:
        if p.required and p.name not in bound and old.param(p.name) is None:
            problems.append(f"new required parameter `{p.name}` is not passed")
    return problems, first


def _safe_fix(site: CallSite, old: Signature, new: Signature, first: int
              ) -> tuple[tuple[int, str], ...]:
    """Keywords for positional arguments first..end that bind as under ``old`` and are valid
    under ``new``; empty when that is not possible."""
    rewrites = []
    used = set(site.keywords)
    for i in range(first, site.positional):
        if i >= len(old.positionals):
            return ()
        name = old.positionals[i].name
        target = new.param(name)
        if target is None or target.kind in ("positional-only", "variadic positional",
                                             "variadic keyword") or name in used:
            return ()
        used.add(name)
        rewrites.append((i, name))
    return tuple(rewrites)


def _moved_to(path: str, old_sig: Signature, new: ApiIndex) -> str | None:
    name = old_sig.path.rsplit(".", 1)[-1]
    candidates = sorted(p for p in new.functions if p.rsplit(".", 1)[-1] == name)
    return candidates[0] if candidates else None


def classify(site: CallSite, old: ApiIndex, new: ApiIndex) -> Finding | None:
    old_sig = old.lookup(site.path)
    if old_sig is None:
        return None  # not a function of the old version we know (a method on an object, say)
    new_sig = new.lookup(site.path)
    base = {"file": site.file, "line": site.line, "column": site.column, "function": site.path,
            "old_signature": old_sig.render()}
    if new_sig is None:
        moved = _moved_to(site.path, old_sig, new)
        change = (f"moved to `{moved}` without a re-export at `{site.path}`" if moved
                  else f"`{site.path}` was removed")
        return Finding(severity="breaking", change=change,
                       new_signature=new.functions[moved].render() if moved else "",
                       detail=f"the call `{site.text}` fails with AttributeError or "
                              "ImportError under the new version", **base)  # type: ignore[arg-type]
    changes = describe_changes(old_sig, new_sig)
    if not changes:
        return None
    base["new_signature"] = new_sig.render()
    summary = "; ".join(changes)
    if site.star_args or site.star_kwargs:
        how = " and ".join(x for x, on in (("*args", site.star_args),
                                            ("**kwargs", site.star_kwargs)) if on)
        return Finding(severity="unverifiable", change=summary,
                       detail=f"arguments are passed through {how}: check by hand whether "
                              f"this call needs: {summary}", **base)  # type: ignore[arg-type]
    problems, first = _binding_problems(site, old_sig, new_sig)
    if problems:
        fix = _safe_fix(site, old_sig, new_sig, first) if first is not None and len(
            problems) == sum(1 for p in problems if p.startswith("positional")) else ()
        return Finding(severity="breaking", change=summary, detail="; ".join(problems),
                       fix=fix, **base)  # type: ignore[arg-type]
    return Finding(severity="notice", change=summary,
                   detail="the call binds as before; review whether it should pass the new "
                          "or changed parameters", **base)  # type: ignore[arg-type]


def analyse(files: Mapping[str, str], roots: set[str], old: ApiIndex, new: ApiIndex,
            package: str, sites: Mapping[str, list[CallSite]] | None = None) -> DriftReport:
    """Findings for every call site; ``sites`` may come pre-scanned (e.g. in parallel)."""
    report = DriftReport(package=package, old_version=old.version, new_version=new.version)
    for path in sorted(files):
        found = sites[path] if sites is not None and path in sites else \
            scan_source(path, files[path], roots)
        report.files_scanned += 1
        report.calls_scanned += len(found)
        for site in found:
            finding = classify(site, old, new)
            if finding is not None:
                report.findings.append(finding)
    report.findings.sort(key=lambda f: (SEVERITY_ORDER[f.severity], f.file, f.line))
    return report


# -- the codemod ---------------------------------------------------------------------------
class _KeywordRewriter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, fixes: Mapping[tuple[int, int], tuple[tuple[int, str], ...]]) -> None:
        super().__init__()
        self.fixes = dict(fixes)
        self.done: set[tuple[int, int]] = set()

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        pos = self.get_metadata(PositionProvider, original).start
        key = (pos.line, pos.column)
        if key not in self.fixes:
            return updated
        args = list(updated.args)
        positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
        for index, name in self.fixes[key]:
            k = positional[index]
            args[k] = args[k].with_changes(
                keyword=cst.Name(name),
                equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                      whitespace_after=cst.SimpleWhitespace("")))
        self.done.add(key)
        return updated.with_changes(args=args)


def fix_source(text: str, findings: Iterable[Finding]) -> tuple[str, list[Finding]]:
    """Rewrite the fixable breaking calls of one file; returns the text and what was fixed."""
    fixable = {(f.line, f.column): f for f in findings if f.severity == "breaking" and f.fix}
    if not fixable:
        return text, []
    module = cst.parse_module(text)
    rewriter = _KeywordRewriter({k: f.fix for k, f in fixable.items()})
    new = MetadataWrapper(module).visit(rewriter).code
    cst.parse_module(new)  # the rewrite must still parse
    return new, [fixable[k] for k in sorted(rewriter.done)]
