"""drift: map API changes of the lead package onto the target's call sites; fix what is safe.

Pure: source texts and two ``ApiIndex`` values in, findings and rewritten texts out.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from itertools import pairwise
from typing import Protocol

from bot.core.api import ApiIndex, ParamKind, Signature
from bot.core.models import Severity, SiteKind, Via
from bot.core.pysource import python_lines

SEVERITY_ORDER = {s: i for i, s in enumerate(Severity)}  # breaking first, notice last


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
    kind: SiteKind = SiteKind.CALL
    via: Via = Via.DIRECT  # how a reference reaches it

    def __post_init__(self) -> None:
        if not isinstance(self.kind, SiteKind):  # read back from the scan cache's JSON
            object.__setattr__(self, "kind", SiteKind(self.kind))
            object.__setattr__(self, "via", Via(self.via))


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    function: str
    severity: Severity
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
    api_breakages_elsewhere: int = 0  # griffe's breakages outside what the target reaches
    reached: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)

    @property
    def breaking(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == Severity.BREAKING]

    def of(self, severity: Severity) -> list[Finding]:
        return [f for f in self.findings if f.severity == severity]

    @property
    def unfixed(self) -> list[Finding]:
        """Breaking findings the codemod cannot rewrite: they need a hand fix."""
        return [f for f in self.breaking if not f.fix]

    def notice_groups(self) -> list[NoticeGroup]:
        """Notices grouped per function and change, with their call counts."""
        groups: dict[tuple[str, str], NoticeGroup] = {}
        for f in self.of(Severity.NOTICE):
            group = groups.setdefault((f.function, f.change), NoticeGroup(f.function, f.change))
            group.where.append(f"{f.file}:{f.line}")
        return sorted(groups.values(), key=lambda g: (-len(g.where), g.function))


@dataclass
class NoticeGroup:
    function: str
    change: str
    where: list[str] = field(default_factory=list)


class ReviewSource(Protocol):
    """Something that turns call sites into review findings (advisories, gate observations)."""

    def findings(self, sites: Sequence[CallSite], old: ApiIndex, new: ApiIndex,
                 package: str) -> list[Finding]: ...


# -- scanning ------------------------------------------------------------------------------
# The scanner is a pure function of one file, (path, text, roots) -> sites, on the standard
# library's ``ast`` (libcst is kept for the codemod): it can be cached by content hash and run
# in worker processes around it.
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_IMPORTERS = {"importlib.import_module", "import_module", "__import__"}
_PROBES = {"getattr": Via.GETATTR, "hasattr": Via.HASATTR}  # getattr(mod, "name")


def _dotted_string(value: object, roots: set[str]) -> str | None:
    """A string constant naming a module or object of ``roots`` ("flashinfer.gemm")."""
    if not isinstance(value, str) or value.split(".", 1)[0] not in roots:
        return None
    return value if all(_IDENT.match(part) for part in value.split(".")) else None


def _syntax_name(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _string_arg(node: ast.Call, index: int) -> str | None:
    arg = node.args[index] if len(node.args) > index else None
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    return None


class _Scope:
    """Names bound in one function (or the module): a name is looked up in its own function
    first, then in the enclosing ones, then in the module; ``global`` names go to the module."""

    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        self.names: dict[str, str] = {}
        self.globals: set[str] = set()

    @property
    def module(self) -> _Scope:
        return self if self.parent is None else self.parent.module

    def lookup(self, name: str) -> str | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None

    def bind(self, name: str, path: str) -> bool:
        target = self.module if name in self.globals else self
        if target.names.get(name) == path:
            return False
        target.names[name] = path
        return True


class _Resolver:
    """What each name, attribute and lazy-import call of one module stands for."""

    def __init__(self, roots: set[str]) -> None:
        self.roots = roots
        self.attributes: dict[str, str] = {}  # "self._comm" -> "flashinfer.comm", file-wide

    def bind_import(self, node: ast.Import | ast.ImportFrom, scope: _Scope) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                head = alias.name.split(".")[0]
                if head not in self.roots:
                    continue
                if alias.asname:
                    scope.bind(alias.asname, alias.name)
                else:
                    scope.bind(head, head)
            return
        if node.level or not node.module or node.module.split(".")[0] not in self.roots:
            return
        for alias in node.names:
            if alias.name != "*":
                scope.bind(alias.asname or alias.name, f"{node.module}.{alias.name}")

    def resolve(self, node: ast.expr, scope: _Scope) -> str | None:
        """The lead-package path an expression evaluates to, when it can be told."""
        text = _syntax_name(node)
        if text is not None:
            parts = text.split(".")
            for i in range(len(parts), 0, -1):  # the longest bound prefix: self._comm.x
                bound = scope.lookup(parts[0]) if i == 1 else \
                    self.attributes.get(".".join(parts[:i]))
                if bound is not None:
                    return ".".join([bound, *parts[i:]])
            return None
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value, scope)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call):
            return self.resolve_call_value(node, scope)
        return None

    def resolve_call_value(self, node: ast.Call, scope: _Scope) -> str | None:
        """What a lazy-import call returns: ``getattr(mod, "name")``,
        ``importlib.import_module("flashinfer.x")``, ``helper("flashinfer.x", "Name")``."""
        func = _syntax_name(node.func)
        if func == "getattr" and len(node.args) >= 2:
            base = self.resolve(node.args[0], scope)
            name = _string_arg(node, 1)
            return f"{base}.{name}" if base and name and _IDENT.match(name) else None
        module = _dotted_string(_string_arg(node, 0), self.roots)
        if module is None:
            return None
        if func in _IMPORTERS:
            return module
        name = _string_arg(node, 1)
        if name is not None and _IDENT.match(name):
            return f"{module}.{name}"
        return module if len(node.args) == 1 else None

    def bind_assign(self, targets: list[ast.expr], value: ast.expr, scope: _Scope) -> bool:
        path = self.resolve(value, scope)
        if path is None:
            return False
        changed = False
        for target in targets:
            if isinstance(target, ast.Name):
                changed = scope.bind(target.id, path) or changed
                continue
            key = _syntax_name(target)
            if key is not None and self.attributes.get(key) != path:
                self.attributes[key] = path
                changed = True
        return changed


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _walk_scoped(tree: ast.AST, has_global: bool = True) -> Iterator[tuple[ast.AST, _Scope]]:
    """Every node with the scope its names live in (functions nest; classes do not).
    ``has_global`` off (the text has no ``global``): function bodies are not searched for
    ``global`` statements (a second walk of every function)."""
    module = _Scope(None)
    stack: list[tuple[ast.AST, _Scope]] = [(tree, module)]
    while stack:
        node, scope = stack.pop()
        yield node, scope
        for child in reversed(list(ast.iter_child_nodes(node))):
            if isinstance(child, _FUNCTIONS):
                inner = _Scope(scope)
                body = child.body if isinstance(child.body, list) else [child.body]
                for stmt in body if has_global else ():
                    for sub in ast.walk(stmt):
                        if isinstance(sub, ast.Global):
                            inner.globals.update(sub.names)
                # decorators, defaults and annotations are evaluated in the enclosing scope
                for part in ast.iter_child_nodes(child):
                    stack.append((part, inner if part in body or part is child.args
                                   else scope))
                yield child, scope
            else:
                stack.append((child, scope))


def _column(lines: Sequence[str], node: ast.expr) -> int:
    """ast counts UTF-8 bytes; libcst (the codemod) counts characters."""
    line = lines[node.lineno - 1] if node.lineno - 1 < len(lines) else ""
    return len(line.encode("utf-8")[:node.col_offset].decode("utf-8", "replace"))


@dataclass
class _Nodes:
    """What one walk of a module collects for the scanner."""

    assigns: list[tuple[list[ast.expr], ast.expr, _Scope]] = field(default_factory=list)
    calls: list[tuple[ast.Call, _Scope]] = field(default_factory=list)
    strings: list[ast.Constant] = field(default_factory=list)
    imported: bool = False


def _collect(tree: ast.AST, resolver: _Resolver, has_global: bool = True) -> _Nodes:
    """Imports are bound as they are met; assignments, calls and string constants are kept
    for the later passes."""
    nodes = _Nodes()
    for node, scope in _walk_scoped(tree, has_global):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            resolver.bind_import(node, scope)
            nodes.imported = True
        elif isinstance(node, ast.Assign):
            nodes.assigns.append((node.targets, node.value, scope))
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            nodes.assigns.append(([node.target], node.value, scope))
        elif isinstance(node, ast.Call):
            nodes.calls.append((node, scope))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            nodes.strings.append(node)
    return nodes


class _Sites:
    """The call sites and references of one file, each once (the first one added wins)."""

    def __init__(self, file: str, text: str, roots: set[str]) -> None:
        self.file = file
        self.roots = roots
        self.lines = python_lines(text)  # as ast numbers them, not str.splitlines
        self.sites: dict[tuple[int, int, str, str], CallSite] = {}
        self.called: set[tuple[int, str]] = set()  # (line, path) of every resolved call

    def add(self, node: ast.expr, path: str, kind: SiteKind, via: Via,
            call: ast.Call | None = None) -> None:
        if path.split(".")[0] not in self.roots:
            return
        line = node.lineno
        lines = self.lines
        text_line = lines[line - 1].strip()[:160] if line - 1 < len(lines) else ""
        args = call.args if call is not None else []
        keywords = call.keywords if call is not None else []
        site = CallSite(
            file=self.file, line=line, column=_column(lines, node), path=path,
            positional=sum(1 for a in args if not isinstance(a, ast.Starred)),
            keywords=tuple(k.arg for k in keywords if k.arg is not None),
            star_args=any(isinstance(a, ast.Starred) for a in args),
            star_kwargs=any(k.arg is None for k in keywords),
            text=text_line, kind=kind, via=via)
        self.sites.setdefault((site.line, site.column, site.kind, site.path), site)

    def reference(self, node: ast.expr, path: str, via: Via) -> None:
        """A reference, unless a call of the same path on the same line was found."""
        if (node.lineno, path) not in self.called:
            self.add(node, path, SiteKind.REFERENCE, via)

    def sorted(self) -> list[CallSite]:
        return sorted(self.sites.values(),
                      key=lambda s: (s.line, s.column, s.kind != SiteKind.CALL))


def _calls(out: _Sites, nodes: _Nodes, resolver: _Resolver) -> None:
    for node, scope in nodes.calls:
        path = resolver.resolve(node.func, scope)
        if path is not None:
            out.add(node, path, SiteKind.CALL, Via.DIRECT, node)
            out.called.add((node.lineno, path))


def _attribute_probes(out: _Sites, nodes: _Nodes, resolver: _Resolver) -> None:
    """``getattr(mod, "name")`` and ``hasattr(mod, "name")``."""
    for node, scope in nodes.calls:
        func = _syntax_name(node.func)
        if func not in _PROBES or len(node.args) < 2:
            continue
        base, name = resolver.resolve(node.args[0], scope), _string_arg(node, 1)
        if base and name and _IDENT.match(name):
            out.reference(node, f"{base}.{name}", _PROBES[func])


def _string_pairs(out: _Sites, tree: ast.AST) -> set[int]:
    """``("flashinfer.gemm", "Name")`` side by side in a tuple, list or call; returns the ids
    of the module strings so paired."""
    paired: set[int] = set()
    for seq in [n for n in ast.walk(tree) if isinstance(n, (ast.Tuple, ast.List, ast.Call))]:
        items = seq.args if isinstance(seq, ast.Call) else seq.elts
        for first, second in pairwise(items):
            module = _dotted_string(first.value, out.roots) \
                if isinstance(first, ast.Constant) else None
            attr: object = second.value if isinstance(second, ast.Constant) else None
            if module and isinstance(attr, str) and _IDENT.match(attr):
                paired.add(id(first))
                out.reference(first, f"{module}.{attr}", Via.STRING)
    return paired


def _dotted_strings(out: _Sites, nodes: _Nodes, paired: set[int]) -> None:
    """A lone string naming something inside a root ("flashinfer.gemm.Runner")."""
    for node in nodes.strings:
        module = _dotted_string(node.value, out.roots)
        if module and id(node) not in paired and "." in module:
            out.add(node, module, SiteKind.REFERENCE, Via.STRING)


def scan_source(file: str, text: str, roots: set[str]) -> list[CallSite]:
    """Calls into ``roots`` (import names) and references to them, anywhere in the file:
    every import form, modules bound to names or attributes (``x = comm``,
    ``self._comm = flashinfer.comm``, ``global`` assignments in ``try:``), ``getattr``,
    ``importlib.import_module`` and string references in lazy-import helpers."""
    if not any(r in text for r in roots):
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []  # not valid Python: nothing we can map
    resolver = _Resolver(roots)
    nodes = _collect(tree, resolver, has_global="global" in text)
    named = any(_dotted_string(s.value, roots) for s in nodes.strings)
    if not nodes.imported and not named:
        return []
    for _ in range(8):  # a binding may use one made later in the file (x = comm)
        if not any([resolver.bind_assign(t, v, sc) for t, v, sc in nodes.assigns]):
            break
    out = _Sites(file, text, roots)
    _calls(out, nodes, resolver)
    _attribute_probes(out, nodes, resolver)
    paired = _string_pairs(out, tree) if named else set()  # pairs start with such a string
    _dotted_strings(out, nodes, paired)
    return out.sorted()


# -- comparing signatures ------------------------------------------------------------------
def _new_params(old: Signature, new: Signature) -> tuple[list[str], set[str]]:
    """Parameters only ``new`` has: renamed (same slot and kind, old name gone), inserted
    before a positional parameter, new required or new optional; and the old names renamed."""
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
    return out, renamed


def _reordered(old: Signature, new: Signature) -> bool:
    """The positional parameters both have, in another order."""
    old_names = {p.name for p in old.params}
    new_names = {p.name for p in new.params}
    old_pos = [n for n in (q.name for q in old.positionals) if n in new_names]
    new_pos = [n for n in (q.name for q in new.positionals) if n in old_names]
    return old_pos != new_pos and sorted(old_pos) == sorted(new_pos)


def _kept_params(old: Signature, new: Signature) -> list[str]:
    """Parameters both have whose kind or default changed."""
    out: list[str] = []
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
    return out


def describe_changes(old: Signature, new: Signature) -> list[str]:
    """Human one-liners for what changed between two signatures."""
    out, renamed = _new_params(old, new)
    new_names = {p.name for p in new.params}
    out += [f"parameter `{p.name}` removed" for p in old.params
            if p.name not in new_names and p.name not in renamed]
    if _reordered(old, new):
        out.append("positional parameters reordered")
    out += _kept_params(old, new)
    if new.deprecated and not old.deprecated:
        out.append(f"deprecated ({new.deprecated})")
    return out


def _positional_name(sig: Signature, index: int) -> str | None:
    pos = sig.positionals
    if index < len(pos):
        return pos[index].name
    star = next((p for p in sig.params if p.kind == ParamKind.VAR_POSITIONAL), None)
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
    accepts_any = new.has(ParamKind.VAR_KEYWORD)
    for kw in site.keywords:
        param = new.param(kw)
        if (param is None or param.kind == ParamKind.POSITIONAL_ONLY) and not accepts_any:
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
        if target is None or target.kind in (ParamKind.POSITIONAL_ONLY, ParamKind.VAR_POSITIONAL,
                                             ParamKind.VAR_KEYWORD) or name in used:
            return ()
        used.add(name)
        rewrites.append((i, name))
    return tuple(rewrites)


def _moved_to(path: str, old_sig: Signature, new: ApiIndex) -> str | None:
    name = old_sig.path.rsplit(".", 1)[-1]
    candidates = sorted(p for p in new.functions if p.rsplit(".", 1)[-1] == name)
    return candidates[0] if candidates else None


def find_rename(path: str, old: ApiIndex, new: ApiIndex) -> str | None:
    """The new name of an object the new version no longer has under ``path``: an object of
    the same kind that only the new version has, with the same body (source with the name
    blanked) or the same shape (parameters, members) and a similar name; None when no single
    candidate stands out."""
    old_path = old.canonical(path)
    info = old.objects.get(old_path or "")
    if old_path is None or info is None:
        return None
    kind, shape, body = info
    parent, _, name = old_path.rpartition(".")
    old_names = {p.rpartition(".")[2] for p in old.objects}
    scored = []
    for cand, (k, sh, b) in new.objects.items():
        if k != kind or k not in ("class", "function"):
            continue
        cparent, _, cname = cand.rpartition(".")
        if cname in old_names or cname.startswith("_") != name.startswith("_"):
            continue  # a name the old version had is a move, not a rename
        same_body = bool(body) and b == body
        if not (same_body or (shape and sh == shape)):
            continue  # the cheap test first: difflib's ratio is most of a large API's cost
        ratio = SequenceMatcher(None, name, cname).ratio()
        if ratio >= 0.5:
            scored.append(((same_body, cparent == parent, round(ratio, 3)), cand))
    scored.sort(reverse=True)
    if not scored or (len(scored) > 1 and scored[0][0] == scored[1][0]):
        return None
    found = scored[0][1]
    public = f"{path.rpartition('.')[0]}.{found.rpartition('.')[2]}"
    return public if new.canonical(public) == found else found


_VIA = {Via.STRING: "the string reference", Via.GETATTR: "`getattr`",
        Via.HASATTR: "`hasattr` now answers False and the code silently takes its fallback: "
                   "the check"}


def _missing(site: CallSite, old: ApiIndex, new: ApiIndex) -> Finding:
    """A name the target reaches that the new version no longer has."""
    old_sig = old.lookup(site.path)
    moved = _moved_to(site.path, old_sig, new) if old_sig is not None else None
    renamed = None if moved else find_rename(site.path, old, new)
    if moved:
        change = f"moved to `{moved}` without a re-export at `{site.path}`"
    elif renamed:
        change = f"`{site.path}` was renamed to `{renamed}`"
    else:
        change = f"`{site.path}` was removed"
    if site.kind == SiteKind.CALL:
        detail = (f"the call `{site.text}` fails with AttributeError or ImportError under "
                  "the new version")
    else:
        detail = f"{_VIA.get(site.via, 'the reference')} `{site.text}` finds nothing under " \
                 "the new version"
    if renamed or moved:
        detail += f": use `{renamed or moved}`"
    target = renamed or moved
    new_sig = new.lookup(target) if target else None
    return Finding(file=site.file, line=site.line, column=site.column, function=site.path,
                   severity=Severity.BREAKING, change=change,
                   old_signature=old_sig.render() if old_sig else (old.kind(site.path) or ""),
                   new_signature=new_sig.render() if new_sig else "", detail=detail)


def _changed_defaults(site: CallSite, old: Signature, new: Signature) -> list[str]:
    """Defaults this call leaves alone that now mean something else: a changed default, or
    a new parameter whose documented default is a behaviour ("Defaults to ...WORLD")."""
    bound = {_positional_name(new, i) for i in range(site.positional)} | set(site.keywords)
    out = []
    for p in old.params:
        q = new.param(p.name)
        if q is not None and q.kind == p.kind and p.default is not None and \
                q.default is not None and q.default != p.default and p.name not in bound:
            out.append(f"`{p.name}` now defaults to `{q.default}` (was `{p.default}`)")
    for q in new.params:
        if old.param(q.name) is None and q.default_doc and q.name not in bound:
            out.append(f"new `{q.name}` is left to its default: {q.default_doc}")
    return out


def classify(site: CallSite, old: ApiIndex, new: ApiIndex) -> Finding | None:
    if not old.exists(site.path):
        return None  # not something of the old version we know (a method on an object, say)
    if not new.exists(site.path):
        return _missing(site, old, new)
    old_sig = old.lookup(site.path)
    new_sig = new.lookup(site.path)
    if site.kind != SiteKind.CALL or old_sig is None or new_sig is None:
        return None
    base = {"file": site.file, "line": site.line, "column": site.column, "function": site.path,
            "old_signature": old_sig.render(), "new_signature": new_sig.render()}
    changes = describe_changes(old_sig, new_sig)
    if not changes:
        return None
    summary = "; ".join(changes)
    if site.star_args or site.star_kwargs:
        how = " and ".join(x for x, on in (("*args", site.star_args),
                                            ("**kwargs", site.star_kwargs)) if on)
        return Finding(severity=Severity.UNVERIFIABLE, change=summary,
                       detail=f"arguments are passed through {how}: check by hand whether "
                              f"this call needs: {summary}", **base)  # type: ignore[arg-type]
    problems, first = _binding_problems(site, old_sig, new_sig)
    if problems:
        fix = _safe_fix(site, old_sig, new_sig, first) if first is not None and len(
            problems) == sum(1 for p in problems if p.startswith("positional")) else ()
        return Finding(severity=Severity.BREAKING, change=summary, detail="; ".join(problems),
                       fix=fix, **base)  # type: ignore[arg-type]
    defaults = _changed_defaults(site, old_sig, new_sig)
    if defaults:
        return Finding(severity=Severity.REVIEW, change=summary,
                       detail=f"check that the new default suits this call: "
                              f"{'; '.join(defaults)}", **base)  # type: ignore[arg-type]
    return Finding(severity=Severity.NOTICE, change=summary,
                   detail="the call binds as before; review whether it should pass the new "
                          "or changed parameters", **base)  # type: ignore[arg-type]


def reached(sites: Iterable[CallSite], old: ApiIndex) -> set[str]:
    """Paths of the lead's API the target reaches (as written and where they are defined)."""
    out: set[str] = set()
    for site in sites:
        out.add(site.path)
        found = old.canonical(site.path)
        if found:
            out.add(found)
    return out


def is_public(path: str) -> bool:
    return not any(part.startswith("_") and not (part.startswith("__") and part.endswith("__"))
                   for part in path.split("."))


def reachable_breakages(breakages: Sequence[tuple[str, str]], paths: set[str], old: ApiIndex
                        ) -> list[str]:
    """griffe's breakages (object path, explanation) on the public API the target reaches:
    the object itself, a member of a function or class it calls, or a container of one."""
    keep = []
    for path, text in breakages:
        if not is_public(path):
            continue
        for r in paths:
            if path == r or r.startswith(path + ".") or (
                    path.startswith(r + ".") and old.kind(r) in ("function", "class")):
                keep.append(text)
                break
    return keep


def analyse(files: Mapping[str, str], roots: set[str], old: ApiIndex, new: ApiIndex,
            package: str, sites: Mapping[str, list[CallSite]] | None = None,
            reviews: Sequence[ReviewSource] = ()) -> DriftReport:
    """Findings for every call site; ``sites`` may come pre-scanned (e.g. in parallel);
    ``reviews`` add review findings (advisories, the GPU gate's observations)."""
    report = DriftReport(package=package, old_version=old.version, new_version=new.version)
    everything: list[CallSite] = []
    for path in sorted(files):
        found = sites[path] if sites is not None and path in sites else \
            scan_source(path, files[path], roots)
        report.files_scanned += 1
        report.calls_scanned += sum(1 for s in found if s.kind == SiteKind.CALL)
        everything += found
        for site in found:
            finding = classify(site, old, new)
            if finding is not None:
                report.findings.append(finding)
    for source in reviews:
        report.findings += source.findings(everything, old, new, package)
    report.reached = reached(everything, old)
    report.findings.sort(key=lambda f: (SEVERITY_ORDER[f.severity], f.file, f.line, f.column))
    return report


# -- the codemod (libcst, imported only when there is something to rewrite) ---------------
def _rewrite(text: str, fixes: Mapping[tuple[int, int], tuple[tuple[int, str], ...]]
             ) -> tuple[str, set[tuple[int, int]]]:
    """Keyword-bind the positional arguments of the calls starting at ``fixes``' positions;
    formatting and comments are kept."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    done: set[tuple[int, int]] = set()

    class KeywordRewriter(cst.CSTTransformer):
        METADATA_DEPENDENCIES = (PositionProvider,)

        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
            pos = self.get_metadata(PositionProvider, original).start
            key = (pos.line, pos.column)
            if key not in fixes:
                return updated
            args = list(updated.args)
            positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
            for index, name in fixes[key]:
                k = positional[index]
                args[k] = args[k].with_changes(
                    keyword=cst.Name(name),
                    equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                          whitespace_after=cst.SimpleWhitespace("")))
            done.add(key)
            return updated.with_changes(args=args)

    new = MetadataWrapper(cst.parse_module(text)).visit(KeywordRewriter()).code
    cst.parse_module(new)  # the rewrite must still parse
    return new, done


def fix_source(text: str, findings: Iterable[Finding]) -> tuple[str, list[Finding]]:
    """Rewrite the fixable breaking calls of one file; returns the text and what was fixed."""
    fixable = {(f.line, f.column): f for f in findings if f.severity == Severity.BREAKING and f.fix}
    if not fixable:
        return text, []
    new, done = _rewrite(text, {k: f.fix for k, f in fixable.items()})
    return new, [fixable[k] for k in sorted(done)]
