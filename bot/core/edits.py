"""Compute every edit a bump needs, in memory. Pure: texts and a plan in, new texts out.

Editors, one per kind of place a pin lives:
- requirement: pyproject*.toml and requirements*.txt pins (only the version moves);
- dockerfile-arg / dockerfile-run: ``ARG``/``ENV`` defaults and literal pins in ``RUN``;
- assertion: calls such as ``assert_pkg_version("flashinfer_python", "0.6.8.post1", ...)``;
- doc: documented examples next to a version check, plus patterns from the config.
Every other occurrence of an old version is reported as left unchanged.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from bot.core.config import Group
from bot.core.discovery import file_kind, find_pins, parse_pyproject, parse_requirements
from bot.core.models import EditKind, FileKind, Pin, Plan
from bot.core.pysource import python_lines
from bot.core.specs import split_requirement, with_specifier
from bot.errors import ApplyError, DockerfileConflict, InputError


@dataclass(frozen=True)
class Bump:
    package: str
    old: frozenset[str]
    new: str


@dataclass(frozen=True)
class Edit:
    file: str
    line: int
    kind: EditKind
    before: str
    after: str


@dataclass(frozen=True)
class Mention:
    file: str
    line: int
    package: str
    version: str
    text: str


@dataclass
class FileEdit:
    path: str
    old: str
    new: str
    edits: list[Edit] = field(default_factory=list)


@dataclass
class EditSet:
    files: list[FileEdit]
    left_unchanged: list[Mention]

    @property
    def edits(self) -> list[Edit]:
        return [e for f in self.files for e in f.edits]


def bumps_from_plan(plan: Plan, group: Group) -> list[Bump]:
    """What moves: each changed pin, plus lockstep packages that follow the lead."""
    found: dict[str, tuple[set[str], str]] = {}
    for change in plan.changes:
        olds, _ = found.setdefault(change.package, (set(), change.target))
        if change.current:
            olds.add(change.current)
        olds.update(_written_versions(change.pins))
    # Lockstep packages (and the lead's assertions and docs) follow every old version of the
    # lead: in a partly bumped tree the lead is already at the target in one file and older in
    # another, so lead_current alone would miss the older one.
    lead_olds = set(found[group.lead][0]) if group.lead in found else set()
    if plan.lead_current:
        lead_olds.add(plan.lead_current)
    lead_olds.discard(plan.lead_target)
    if lead_olds:
        for package in (group.lead, *group.lockstep):
            olds, _ = found.setdefault(package, (set(), plan.lead_target))
            olds.update(lead_olds)
    return [Bump(p, frozenset(o - {new}), new) for p, (o, new) in found.items() if o - {new}]


def merge_bumps(bumps: Sequence[Bump], resumed: Sequence[Bump]) -> list[Bump]:
    """The plan's bumps plus those of an interrupted apply: a file the killed run did not
    reach still holds one of its old versions (or its target, when the plan has moved on)."""
    found = {b.package: (set(b.old), b.new) for b in bumps}
    for r in resumed:
        if r.package not in found:
            found[r.package] = (set(r.old), r.new)
            continue
        olds, new = found[r.package]
        olds.update(r.old)
        if _older(r.new, new):
            olds.add(r.new)
    return [Bump(p, frozenset(o - {new}), new) for p, (o, new) in found.items() if o - {new}]


def _older(a: str, b: str) -> bool:
    try:
        return Version(a) < Version(b)
    except InvalidVersion:
        return False


def bumps_to_intent(bumps: Sequence[Bump]) -> dict[str, Any]:
    """What an apply journals before writing (see ``bumps_from_intent``)."""
    return {"bumps": [{"package": b.package, "old": sorted(b.old), "new": b.new}
                      for b in bumps]}


def bumps_from_intent(intent: Any, where: str) -> list[Bump]:
    """The bumps an interrupted apply journalled; a malformed journal is an error."""
    items = intent.get("bumps") if isinstance(intent, dict) else None
    if not isinstance(items, list):
        raise ApplyError(f"{where}: not a pinbump apply journal; remove it and run again")
    out = []
    for item in items:
        if not (isinstance(item, dict) and isinstance(item.get("package"), str)
                and isinstance(item.get("new"), str) and isinstance(item.get("old"), list)
                and all(isinstance(v, str) for v in item["old"])):
            raise ApplyError(f"{where}: not a pinbump apply journal; remove it and run again")
        out.append(Bump(item["package"], frozenset(item["old"]), item["new"]))
    return out


def _written_versions(pins: Iterable[Pin]) -> set[str]:
    """Versions exactly as the target wrote them (0.6.8.post1, not a normalized form)."""
    out = set()
    for pin in pins:
        spec = split_requirement(pin.requirement)[1]
        m = re.search(r"(?:==|>=)\s*([^\s,;)]+)", spec)
        if m:
            out.add(m.group(1))
    return out


# A version goes on after its last character with a letter or digit, a "." and a digit
# (0.6.8.post1.2) or a separator and a pre-, post- or dev-release segment (0.6.8.post1.dev0,
# 0.6.8-rc1); "+cu130" (a local build of the same release), ".tar.gz" or "-py3" end it.
_VERSION_END = (r"(?![\w]|\.[0-9]|[._-](?i:dev|post|rev|rc|alpha|beta|preview|pre)[0-9]*"
                r"(?![A-Za-z])|\.(?i:[abcr])[0-9]+(?![A-Za-z]))")


def version_pattern(version: str) -> re.Pattern[str]:
    """An old version as a whole token: 0.6.8.post1 (also the git tag v0.6.8.post1) but not
    0.6.8.post10, 10.6.8.post1 or 0.6.8.post1.dev0."""
    return re.compile(rf"(?:(?<![\w.])|(?<=(?<![\w.])[vV])){re.escape(version)}{_VERSION_END}")


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _replace_line(lines: list[str], index: int, new: str, file: str, kind: EditKind,
                  edits: list[Edit]) -> None:
    if lines[index] != new:
        edits.append(Edit(file, index + 1, kind, lines[index].strip(), new.strip()))
        lines[index] = new


# -- requirement pins ----------------------------------------------------------------------
def edit_requirements(path: str, text: str, pins: Sequence[tuple[Pin, str]]) -> FileEdit:
    """Move each pin (with its new specifier) on its own line, keeping everything else."""
    lines = _lines(text)
    edits: list[Edit] = []
    for pin, new_spec in pins:
        new_req = with_specifier(pin.requirement, new_spec)
        if new_req == pin.requirement:
            continue
        index = pin.line - 1
        if 0 <= index < len(lines) and pin.requirement in lines[index]:
            _replace_line(lines, index, lines[index].replace(pin.requirement, new_req, 1),
                          path, EditKind.REQUIREMENT, edits)
            continue
        # A requirement continued over several lines (requirements files): move the version.
        old_spec = split_requirement(pin.requirement)[1]
        m = re.search(r"(==|>=)\s*([^\s,;)]+)", old_spec)
        n = re.search(r"(==|>=)\s*([^\s,;)]+)", new_spec)
        done = False
        if m and n:
            for i in range(max(index, 0), min(len(lines), index + 20)):
                pattern = re.compile(rf"({re.escape(m.group(1))}\s*){re.escape(m.group(2))}"
                                     r"(?![\w.])")
                if pattern.search(lines[i]):
                    _replace_line(lines, i, pattern.sub(rf"\g<1>{n.group(2)}", lines[i], 1),
                                  path, EditKind.REQUIREMENT, edits)
                    done = True
                    break
        if not done:
            raise ApplyError(f"{path}:{pin.line}: cannot find {pin.requirement!r} to edit; "
                             "the file changed since it was read?")
    return FileEdit(path, text, "".join(lines), edits)


def validate_requirements(edit: FileEdit, names: set[str],
                          expected: Mapping[tuple[str, str], str]) -> None:
    """Re-parse an edited file and check that every new pin is there.

    ``expected`` maps (package, new specifier) -> requirement we wrote.
    """
    kind = file_kind(edit.path)
    if edit.path.endswith(".toml"):
        pins = parse_pyproject(edit.new, edit.path, names).pins
    elif kind in (FileKind.SETUP_PY, FileKind.SETUP_CFG):
        from pathlib import Path

        pins = find_pins(Path("."), {edit.path: edit.new}, names).pins
    else:
        pins = tuple(parse_requirements(edit.new, edit.path, names))
    present = {(p.package, split_requirement(p.requirement)[1].strip()) for p in pins}
    for (package, spec), req in expected.items():
        if (package, spec.strip()) not in present:
            raise ApplyError(f"{edit.path}: after editing, {req!r} is not found; nothing written")


# -- version literals ----------------------------------------------------------------------
def literal_pattern(version: str) -> re.Pattern[str]:
    """A version written bare: after "=", a quote, "v" (git tags) or white space, and not
    followed by more version characters (0.6.8.post1, not 0.6.8.post10)."""
    return re.compile(rf"(?<![0-9.]){re.escape(version)}{_VERSION_END}")


def _pin_literal(pin: Pin, version: str) -> re.Pattern[str]:
    """Where ``version`` stands for ``pin`` on its line (group "v"): right after ``NAME=`` for
    a variable set by a shell or ``ENV`` (another variable of the line may hold the same
    value: ``CUDA=12.9 FI=12.9``), anywhere on the line for the other literals."""
    variable = re.fullmatch(r"(?P<how>shell|dockerfile RUN|dockerfile ENV|dockerfile ARG) "
                            r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)", pin.section)
    if variable:
        name = variable.group("name")
        equals = r"(?:=|\s+)" if variable.group("how") == "dockerfile ENV" else "="  # ENV N v
        return re.compile(rf"(?<![\w$]){name}{equals}[\"']?(?:\$\{{\w+:?[-=][\"']?)?[vV]?"
                          rf"(?P<v>{re.escape(version)}){_VERSION_END}")
    return re.compile(rf"(?<![0-9.])(?P<v>{re.escape(version)}){_VERSION_END}")


def edit_literals(path: str, text: str, pins: Sequence[tuple[Pin, str]]) -> FileEdit:
    """A bare version on a known line (a Dockerfile ARG, a CI variable, a versions.json value,
    ``git clone --branch v<version>``, an ``-e git+...@v<version>`` ref): only it moves.
    A line another editor already moved (the Dockerfile ARG editor) is left as it is."""
    lines = _lines(text)
    edits: list[Edit] = []
    for pin, new in pins:
        index = pin.line - 1
        if not 0 <= index < len(lines):
            raise ApplyError(f"{path}:{pin.line}: line not found; the file changed since it "
                             "was read? Nothing written")
        found = _pin_literal(pin, pin.literal).search(lines[index])
        if not found:
            if _pin_literal(pin, new).search(lines[index]):
                continue  # already moved
            raise ApplyError(f"{path}:{pin.line}: cannot find {pin.literal!r} to edit; the "
                             "file changed since it was read? Nothing written")
        kind = EditKind.DOCKERFILE_ARG if pin.section.startswith("dockerfile ARG") \
            else EditKind.LITERAL
        line = lines[index]
        _replace_line(lines, index, line[:found.start("v")] + new + line[found.end("v"):],
                      path, kind, edits)
    return FileEdit(path, text, "".join(lines), edits)


# -- Dockerfiles ---------------------------------------------------------------------------
_INSTRUCTION = re.compile(r"^\s*(?P<op>[A-Za-z]+)\s+(?P<rest>.*)$")
_ASSIGN = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<q>[\"']?)(?P<value>[^\s\"']*)(?P=q)")
_RUN_PIN = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?P<extras>\[[^\]]*\])?"
                      r"(?P<op>==|>=)(?P<version>[0-9][A-Za-z0-9._+!-]*)")


def _logical_lines(lines: list[str]) -> list[tuple[int, int]]:
    """(start, end) line indexes of each instruction, following backslash continuations."""
    spans = []
    i = 0
    while i < len(lines):
        start = i
        while lines[i].rstrip("\r\n").endswith("\\") and i + 1 < len(lines):
            i += 1
        spans.append((start, i))
        i += 1
    return spans


# Name parts that say nothing about which package an ARG belongs to.
_GENERIC_WORDS = {"version", "ver", "v", "python", "py", "nvidia", "cuda", "cu", "pkg",
                  "package", "kernels", "kernel", "lib", "tag", "release", "pin"}
_VAR_PIN = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?P<extras>\[[^\]]*\])?\s*"
                      r"(?:===|==|>=|~=|<=|!=)\s*[\"']?\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)"
                      r"(?::?[-+?][^}]*)?\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))")


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if w} - _GENERIC_WORDS


def dockerfile_uses(text: str) -> dict[str, set[str]]:
    """ARG/ENV name -> the packages installed at that version (``pkg==${NAME}``, ``$NAME``)."""
    out: dict[str, set[str]] = {}
    lines = _lines(text)
    for start, end in _logical_lines(lines):
        m = _INSTRUCTION.match(lines[start])
        if not m or m.group("op").upper() != "RUN":
            continue
        for pin in _VAR_PIN.finditer("".join(lines[start:end + 1])):
            var = pin.group("braced") or pin.group("bare")
            out.setdefault(var, set()).add(canonicalize_name(pin.group("name")))
    return out


def _named(name: str, matches: Sequence[Bump]) -> set[str]:
    """The packages an ARG/ENV name is named for, the most specific first: a name holding every
    word of a package's name (FLASHINFER_CUBIN_VERSION: flashinfer-cubin; FLASHINFER_VERSION:
    flashinfer-python) is that package's, the one with the most words winning; failing that,
    every package sharing a word with it."""
    words = _words(name)
    own = {b.package: _words(b.package) for b in matches}
    whole = {package: w for package, w in own.items() if w and w <= words}
    if whole:
        most = max(len(w) for w in whole.values())
        return {package for package, w in whole.items() if len(w) == most}
    return {package for package, w in own.items() if w & words}


def _bump_for(value: str, name: str, bumps: Sequence[Bump], uses: Mapping[str, set[str]],
              configured: Mapping[str, str]) -> Bump | str | None:
    """The bump an ARG/ENV default belongs to; a string saying why not when it holds an old
    version but nothing ties it to one package; None when it holds no old version.

    Ties, strongest first: the config names it (``[dockerfile-args]``); the file installs a
    group package at ``${NAME}``; the name carries a package's words (``_named``:
    FLASHINFER_CUBIN_VERSION: flashinfer-cubin; FLASHINFER_VERSION: flashinfer-python;
    CUTLASS_VER: nvidia-cutlass-dsl)."""
    matches = [b for b in bumps if value in b.old]
    if not matches:
        return None
    ties = (
        ("configured", {configured[name]} if name in configured else set()),
        ("used", uses.get(name, set())),
        ("named", _named(name, matches)),
    )
    for how, packages in ties:
        tied = [b for b in matches if b.package in packages]
        if len({b.new for b in tied}) == 1:
            return tied[0]
        if tied:
            return f"{how} for {', '.join(sorted(b.package for b in tied))}, which move to " \
                   "different versions"
        if how != "named" and packages:  # tied to a package that does not hold this value
            return f"{how} for {', '.join(sorted(packages))}, whose old version is not {value}"
    return ("its name and use tie it to no package of the group (it equals the old version of "
            f"{', '.join(sorted(b.package for b in matches))}); name it under "
            "[dockerfile-args] in the config if it is one")


def dockerfile_ties(text: str, bumps: Sequence[Bump], configured: Mapping[str, str] = {}
                    ) -> dict[str, Bump | str]:
    """Every ARG/ENV name holding an old version -> its bump, or why it stays."""
    uses = dockerfile_uses(text)
    out: dict[str, Bump | str] = {}
    for line in text.splitlines():
        m = _INSTRUCTION.match(line)
        if m and m.group("op").upper() in ("ARG", "ENV"):
            for a in _ASSIGN.finditer(m.group("rest")):
                tie = _bump_for(a.group("value"), a.group("name"), bumps, uses, configured)
                if tie is not None:
                    out.setdefault(a.group("name"), tie)
    return out


@dataclass
class _DockerfileEdit:
    """One Dockerfile being edited: its lines, the edits and notes so far, and every ARG's
    defaults (to refuse one file that gives an ARG two different defaults)."""

    path: str
    lines: list[str]
    bumps: Sequence[Bump]
    uses: Mapping[str, set[str]]
    configured: Mapping[str, str]
    edits: list[Edit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    defaults: dict[str, list[tuple[int, str]]] = field(default_factory=dict)

    def assignments(self, index: int, op: str, rest: str) -> None:
        """``ARG``/``ENV`` defaults tied to a bump move to its new version."""
        line = self.lines[index]
        new_line = line
        for a in _ASSIGN.finditer(rest):
            name, value = a.group("name"), a.group("value")
            if op == "ARG":
                self.defaults.setdefault(name, []).append((index + 1, value))
            bump = _bump_for(value, name, self.bumps, self.uses, self.configured)
            if isinstance(bump, str):
                self.notes.append(f"{self.path}:{index + 1}: {op} {name}={value} left "
                                  f"unchanged: {bump}")
            elif bump is not None:
                new_line = re.sub(rf"(\b{name}=[\"']?){re.escape(value)}(?=[\"']?(\s|$))",
                                  rf"\g<1>{bump.new}", new_line, count=1)
        _replace_line(self.lines, index, new_line, self.path, EditKind.DOCKERFILE_ARG, self.edits)

    def run_pins(self, start: int, end: int) -> None:
        """Literal pins of group packages in a ``RUN`` (over its continuation lines)."""
        by_name = {b.package: b for b in self.bumps}

        def sub(p: re.Match[str]) -> str:
            bump = by_name.get(canonicalize_name(p.group("name")))
            if bump is None or p.group("version") not in bump.old:
                return p.group(0)
            return p.group(0)[: p.start("version") - p.start()] + bump.new

        for i in range(start, end + 1):
            _replace_line(self.lines, i, _RUN_PIN.sub(sub, self.lines[i]), self.path,
                          EditKind.DOCKERFILE_RUN, self.edits)

    def check_defaults(self) -> None:
        """One ARG with different defaults in one file, one of them a version that moves."""
        relevant = {v for b in self.bumps for v in (*b.old, b.new)}
        for name, values in self.defaults.items():
            distinct = {v for _, v in values if v}
            if len(distinct) > 1 and distinct & relevant:
                where = ", ".join(f"line {n} ({v})" for n, v in values if v)
                raise DockerfileConflict(f"{self.path}: ARG {name} has different defaults in "
                                         f"one file: {where}; make them agree, then run again. "
                                         "Nothing was written")


def edit_dockerfile(path: str, text: str, bumps: Sequence[Bump],
                    configured: Mapping[str, str] = {}) -> tuple[FileEdit, list[str]]:
    """Edit the ARG/ENV defaults tied to a group package, and RUN pins of group packages;
    returns the edit and a note for each default holding an old version that stays."""
    work = _DockerfileEdit(path, _lines(text), bumps, dockerfile_uses(text), configured)
    for start, end in _logical_lines(work.lines):
        m = _INSTRUCTION.match(work.lines[start])
        if not m:
            continue
        op = m.group("op").upper()
        if op in ("ARG", "ENV"):
            work.assignments(start, op, m.group("rest"))
        elif op == "RUN":
            work.run_pins(start, end)
    work.check_defaults()
    return FileEdit(path, text, "".join(work.lines), work.edits), work.notes


def dockerfile_args(text: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for line in text.splitlines():
        m = _INSTRUCTION.match(line)
        if m and m.group("op").upper() == "ARG":
            for a in _ASSIGN.finditer(m.group("rest")):
                out.setdefault(a.group("name"), set()).add(a.group("value"))
    return out


def validate_dockerfile(edit: FileEdit, bumps: Sequence[Bump],
                        configured: Mapping[str, str] = {}) -> None:
    """Re-read the ARGs: every default tied to a package now holds its new version, none an
    old one (defaults tied to nothing are left as they were, and noted)."""
    before, after = dockerfile_args(edit.old), dockerfile_args(edit.new)
    ties = dockerfile_ties(edit.old, bumps, configured)
    for name, values in before.items():
        for bump in bumps:
            if isinstance(ties.get(name), Bump) and values & bump.old and \
                    (after.get(name, set()) & bump.old):
                raise ApplyError(f"{edit.path}: ARG {name} still holds an old version after "
                                 "editing; nothing written")


# -- Python version assertions -------------------------------------------------------------
_PACKAGE_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_QUOTES = ('"""', "'''", '"', "'")


def _string_args(call: ast.Call) -> list[ast.Constant]:
    """String literals among a call's positional and keyword arguments."""
    values = [*call.args, *(k.value for k in call.keywords)]
    return [v for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)]


def _literal_span(lines: list[bytes], node: ast.Constant) -> tuple[int, int, int, str] | None:
    """(line index, start byte, end byte, quote) of a one-line plain string literal; None for
    implicit concatenations, escapes, f-strings or literals over several lines."""
    if node.end_lineno != node.lineno or node.end_col_offset is None:
        return None
    index = node.lineno - 1
    source = lines[index][node.col_offset:node.end_col_offset].decode("utf-8", "replace")
    prefix = source[:1] if source[:1] in ("r", "R", "u", "U") else ""
    rest = source[len(prefix):]
    quote = next((q for q in _QUOTES if len(rest) >= 2 * len(q) and rest.startswith(q)
                  and rest.endswith(q)), None)
    if quote is None or "\\" in source or rest[len(quote):-len(quote)] != node.value:
        return None
    return index, node.col_offset, node.end_col_offset, prefix + quote


def _parse_python(path: str, text: str) -> ast.Module:
    try:
        return ast.parse(text, filename=path)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or 1
        message = getattr(exc, "msg", None) or str(exc)
        raise InputError(f"{path}:{line}: cannot parse Python ({message}); fix the file "
                         "first") from None


_Spans = dict[int, list[tuple[int, int, bytes]]]  # line index -> (start byte, end byte, new)


def _assertion_bump(call: ast.Call, by_name: Mapping[str, Bump], olds: set[str]
                    ) -> tuple[Bump, list[ast.Constant]] | None:
    """The one bump a call's string arguments name beside an old version, and those strings;
    None for a call naming no package, or two (whose version would it be?)."""
    strings = _string_args(call)
    if not any(s.value in olds for s in strings):
        return None
    named = [by_name[n] for s in strings if _PACKAGE_WORD.fullmatch(str(s.value))
             and (n := canonicalize_name(str(s.value))) in by_name]
    return (named[0], strings) if len(named) == 1 else None


def _assertion_spans(module: ast.Module, raw_lines: list[bytes], bumps: Sequence[Bump],
                     olds: set[str]) -> _Spans:
    """Where each old version literal of a version check sits, and its new text."""
    by_name = {b.package: b for b in bumps}
    spans: _Spans = {}
    for node in ast.walk(module):
        found = _assertion_bump(node, by_name, olds) if isinstance(node, ast.Call) else None
        if found is None:
            continue
        bump, strings = found
        for s in strings:
            span = _literal_span(raw_lines, s) if s.value in bump.old else None
            if span is not None:
                index, start, end, opening = span
                closing = opening.lstrip("rRuU")
                spans.setdefault(index, []).append(
                    (start, end, f"{opening}{bump.new}{closing}".encode()))
    return spans


def edit_assertions(path: str, text: str, bumps: Sequence[Bump]) -> FileEdit:
    """Version checks in Python: a call whose string arguments hold a package and its version.

    Found through Python's own syntax tree (``ast``: a file costs one parse at C speed; files
    without an old version are not parsed at all); only the version literal is rewritten, in
    place, so quoting, comments and layout stay as they were."""
    olds = {v for b in bumps for v in b.old}
    if not any(v in text for v in olds):
        return FileEdit(path, text, text)
    module = _parse_python(path, text)
    old_lines = python_lines(text)
    raw_lines = [line.encode("utf-8") for line in old_lines]
    spans = _assertion_spans(module, raw_lines, bumps, olds)
    if not spans:
        return FileEdit(path, text, text)
    new_lines = list(old_lines)
    edits: list[Edit] = []
    for index in sorted(spans):
        line = raw_lines[index]
        for start, end, new in sorted(spans[index], reverse=True):
            line = line[:start] + new + line[end:]
        new_lines[index] = line.decode("utf-8")
        edits += [Edit(path, index + 1, EditKind.ASSERTION, old_lines[index].strip(),
                       new_lines[index].strip()) for _ in spans[index]]
    return FileEdit(path, text, "".join(new_lines), edits)


# -- docs ----------------------------------------------------------------------------------
BUILTIN_DOC_PATTERNS = (
    # "min_version: Minimum version required (e.g., "0.6.8.post1")."
    r"(?i)version[^\n]*?\be\.g\.,?\s*[\"'`]?{version}",
)


def compile_doc_patterns(patterns: Iterable[str], version: str) -> list[re.Pattern[str]]:
    return [re.compile(p.replace("{version}", f"(?P<pinbump_version>{re.escape(version)})"))
            for p in patterns]


def edit_docs(path: str, text: str, lead: Bump | None, patterns: Sequence[str]) -> FileEdit:
    """The old lead version inside documented examples matched by the patterns."""
    if lead is None:
        return FileEdit(path, text, text)
    lines = _lines(text)
    edits: list[Edit] = []
    for old in sorted(lead.old):
        if old not in text:
            continue
        compiled = compile_doc_patterns(patterns, old)
        for i, line in enumerate(lines):
            new = line
            for pattern in compiled:
                new = pattern.sub(lambda m: m.group(0)[: m.start("pinbump_version") - m.start()]
                                  + lead.new + m.group(0)[m.end("pinbump_version") - m.start():],
                                  new)
            _replace_line(lines, i, new, path, EditKind.DOC, edits)
    return FileEdit(path, text, "".join(lines), edits)


# -- what was left ------------------------------------------------------------------------
def left_unchanged(files: Mapping[str, str], bumps: Sequence[Bump]) -> list[Mention]:
    """Each line still holding an old version, once per version (packages that share it
    are named together)."""
    by_version: dict[str, list[str]] = {}
    for bump in bumps:
        for version in bump.old:
            by_version.setdefault(version, []).append(bump.package)
    patterns = [(v, ", ".join(sorted(p)), version_pattern(v))
                for v, p in sorted(by_version.items())]
    out = []
    for path in sorted(files):
        text = files[path]
        if not any(v in text for v, _, _ in patterns):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            for version, packages, pattern in patterns:
                if version in line and pattern.search(line):
                    out.append(Mention(path, number, packages, version, line.strip()[:200]))
    return out
