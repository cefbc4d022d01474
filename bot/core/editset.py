"""apply: turn a plan into edits over the target's files (pure), and render them."""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.core.config import Policy
from bot.core.edits import (
    BUILTIN_DOC_PATTERNS,
    Bump,
    EditSet,
    FileEdit,
    bumps_from_plan,
    edit_assertions,
    edit_dockerfile,
    edit_docs,
    edit_literals,
    edit_requirements,
    left_unchanged,
    merge_bumps,
    validate_dockerfile,
    validate_requirements,
)
from bot.core.models import Pin, PinKind, Plan
from bot.errors import ApplyError

DOC_SUFFIXES = (".py", ".md", ".rst", ".txt")
DOCKERFILE_GLOBS = ("Dockerfile", "*.Dockerfile", "Dockerfile.*", "*.dockerfile")


def is_dockerfile(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(name, g) for g in DOCKERFILE_GLOBS)


def apply_bumps(plan: Plan, policy: Policy, resumed: Sequence[Bump] = ()) -> list[Bump]:
    """What moves: the plan's bumps, plus those of an interrupted apply being finished."""
    return merge_bumps(bumps_from_plan(plan, policy.active_group), resumed)


def apply_reads(plan: Plan, policy: Policy, resumed: Sequence[Bump] = ()
                ) -> tuple[tuple[bytes, ...], Callable[[str], bool]]:
    """What apply must look at: files whose bytes hold an old version (the needles), plus the
    pin files and Dockerfiles (``keep``). No editor can change any other file, so the rest of
    the tree is passed over at byte-search speed, never decoded."""
    bumps = apply_bumps(plan, policy, resumed)
    needles = tuple(sorted({v.encode() for b in bumps for v in b.old}))
    pin_files = {pin.file for change in plan.changes for pin in change.pins}
    return needles, lambda rel: rel in pin_files or is_dockerfile(rel)


def partial_note(plan: Plan, policy: Policy) -> str | None:
    """A note when the plan finds the tree partly bumped: the lead already at the target in
    some files, the group's pins older in others (an interrupted or hand-made bump)."""
    group = policy.active_group
    if not plan.lead_current or plan.lead_current != plan.lead_target:
        return None
    behind = list(dict.fromkeys(pin.where for c in plan.changes
                                if c.package in (group.lead, *group.lockstep) for pin in c.pins))
    if not behind:
        return None
    return (f"the tree was partly bumped: {group.lead} is at {plan.lead_target} in some files "
            f"but older in {', '.join(behind)}; this apply completes it")


def _chain(first: FileEdit, second: FileEdit) -> FileEdit:
    return FileEdit(first.path, first.old, second.new, first.edits + second.edits)


_PinEdits = dict[str, list[tuple[Pin, str]]]  # file -> (pin, its new specifier or version)


def _pins_by_file(plan: Plan) -> tuple[_PinEdits, _PinEdits]:
    """The plan's requirement pins (with their new specifier) and literal pins (with their
    new version), per file."""
    requirements: _PinEdits = {}
    literals: _PinEdits = {}
    for change in plan.changes:
        for pin in change.pins:
            if pin.kind == PinKind.LITERAL:
                new = change.specifier_after.lstrip("=")
                literals.setdefault(pin.file, []).append((pin, new))
            else:
                requirements.setdefault(pin.file, []).append((pin, change.specifier_after))
    return requirements, literals


def _requirement_edits(requirements: _PinEdits, files: Mapping[str, str], names: set[str]
                       ) -> dict[str, FileEdit]:
    results = {}
    for path, pins in requirements.items():
        edit = edit_requirements(path, files[path], pins)
        validate_requirements(edit, names, {
            (pin.package, spec): pin.requirement for pin, spec in pins})
        results[path] = edit
    return results


@dataclass
class _OtherFiles:
    """Everything but requirement pins: Dockerfiles, version checks in Python, literal pins
    and documented examples; each file's editors run in that order, over one text."""

    policy: Policy
    bumps: Sequence[Bump]
    literals: _PinEdits
    lead: Bump | None
    notes: list[str] = field(default_factory=list)
    # edit_assertions of Python files already made (in worker processes, for a large tree)
    assertions: Mapping[str, FileEdit] = field(default_factory=dict)

    def edit(self, path: str, text: str) -> FileEdit:
        edit = FileEdit(path, text, text)
        if is_dockerfile(path):
            edit, more = edit_dockerfile(path, text, self.bumps, self.policy.dockerfile_args)
            if path in self.literals:
                edit = _chain(edit, edit_literals(path, edit.new, self.literals.pop(path)))
            validate_dockerfile(edit, self.bumps, self.policy.dockerfile_args)
            self.notes += more
        elif path.endswith(".py"):
            found = self.assertions.get(path)
            edit = found if found is not None else edit_assertions(path, text, self.bumps)
        if path in self.literals:
            edit = _chain(edit, edit_literals(path, edit.new, self.literals.pop(path)))
        if path.endswith(DOC_SUFFIXES):
            patterns = (*BUILTIN_DOC_PATTERNS, *self.policy.doc_patterns)
            edit = _chain(edit, edit_docs(path, edit.new, self.lead, patterns))
        if path.endswith(".py") and edit.edits:
            _compiles(edit)
        return edit


def compute_edits(plan: Plan, policy: Policy, files: Mapping[str, str],
                  resumed: Sequence[Bump] = (),
                  assertions: Mapping[str, FileEdit] | None = None
                  ) -> tuple[EditSet, list[str]]:
    """Every edit the plan needs over ``files`` (path -> text), validated; plus notes.
    ``resumed``: the bumps of an interrupted apply, finished by this one. ``assertions``:
    the version checks of Python files, already found (in worker processes, for a large
    tree)."""
    group = policy.active_group
    bumps = apply_bumps(plan, policy, resumed)
    lead = next((b for b in bumps if b.package == group.lead), None)
    requirements, literals = _pins_by_file(plan)
    results = _requirement_edits(requirements, files, set(group.members))
    others = _OtherFiles(policy, bumps, literals, lead, assertions=assertions or {})
    for path, text in files.items():
        if path in results:
            continue
        edit = others.edit(path, text)
        if edit.edits:
            results[path] = edit
    after = {p: (results[p].new if p in results else t) for p, t in files.items()}
    changed = [results[p] for p in sorted(results) if results[p].new != results[p].old]
    return EditSet(files=changed, left_unchanged=left_unchanged(after, bumps)), others.notes


def _compiles(edit: FileEdit) -> None:
    try:
        compile(edit.new, edit.path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ApplyError(f"{edit.path}:{exc.lineno}: edited file does not compile "
                         f"({exc.msg}); nothing written") from None


def unified_diff(edits: EditSet) -> str:
    out: list[str] = []
    for f in edits.files:
        out.extend(difflib.unified_diff(f.old.splitlines(keepends=True),
                                        f.new.splitlines(keepends=True),
                                        fromfile=f"a/{f.path}", tofile=f"b/{f.path}"))
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in out)


def edits_to_dict(edits: EditSet, notes: list[str], written: bool) -> dict[str, Any]:
    return {
        "written": written,
        "edits": [{"file": e.file, "line": e.line, "kind": e.kind, "before": e.before,
                   "after": e.after} for e in edits.edits],
        "left_unchanged": [{"file": m.file, "line": m.line, "package": m.package,
                            "version": m.version, "text": m.text} for m in edits.left_unchanged],
        "notes": notes,
    }


def edits_text(edits: EditSet, notes: list[str], written: bool, bumps: list[Bump]) -> str:
    lines = []
    if not edits.files:
        lines.append("pinbump apply: no change (every pin already matches the plan)")
    else:
        verb = "edited" if written else "would edit"
        lines.append(f"pinbump apply: {verb} {len(edits.files)} file(s), "
                     f"{len(edits.edits)} place(s): " + ", ".join(
                         f"{b.package} {'/'.join(sorted(b.old))} -> {b.new}" for b in bumps))
        for e in edits.edits:
            lines.append(f"  {e.file}:{e.line} [{e.kind}] {e.before}  ->  {e.after}")
    for note in notes:
        lines.append(f"  note: {note}")
    if edits.left_unchanged:
        lines.append("left unchanged (old versions elsewhere; check them by hand):")
        for m in edits.left_unchanged:
            lines.append(f"  {m.file}:{m.line} {m.package} {m.version}: {m.text}")
    return "\n".join(lines) + "\n"
