"""The lead package's public API as plain data, loaded statically with griffe.

``load_api`` (adapter) extracts a wheel's Python sources, loads them with griffe (no import,
no GPU, no compiled code) and condenses them into an ``ApiIndex``: every function's signature
and every re-export, which is all call-site mapping needs; it is cached as JSON per version.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.core.models import Vocabulary

if TYPE_CHECKING:  # griffe is imported where an API is built, not by every reader
    import griffe



class ParamKind(Vocabulary):
    """How a parameter binds (griffe's ``ParameterKind`` values)."""

    POSITIONAL_ONLY = "positional-only"
    POSITIONAL_OR_KEYWORD = "positional or keyword"
    VAR_POSITIONAL = "variadic positional"
    KEYWORD_ONLY = "keyword-only"
    VAR_KEYWORD = "variadic keyword"


_KIND = {k.value: k for k in ParamKind}  # a dict lookup: ParamKind(value) per parameter
                                          # was most of reading a large cached API
FORMAT = 5  # bump when the cached JSON layout changes


@dataclass(frozen=True)
class Param:
    name: str
    kind: ParamKind
    default: str | None = None
    # what the docstring says the default does ("Defaults to torch.distributed.group.WORLD"),
    # when the signature's default (often None) stands for a behaviour
    default_doc: str | None = None

    @property
    def positional(self) -> bool:
        return self.kind in (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)

    @property
    def required(self) -> bool:
        return self.default is None and self.kind not in (ParamKind.VAR_POSITIONAL,
                                                          ParamKind.VAR_KEYWORD)

    def render(self) -> str:
        prefix = {ParamKind.VAR_POSITIONAL: "*", ParamKind.VAR_KEYWORD: "**"}.get(self.kind, "")
        return f"{prefix}{self.name}" + (f"={self.default}" if self.default is not None else "")


@dataclass(frozen=True)
class Signature:
    path: str  # canonical path of the function (or class, for constructors)
    params: tuple[Param, ...]
    deprecated: str | None = None

    def render(self) -> str:
        parts: list[str] = []
        kinds = [p.kind for p in self.params]
        for i, p in enumerate(self.params):
            if p.kind == ParamKind.KEYWORD_ONLY and ParamKind.VAR_POSITIONAL not in kinds and (
                    i == 0 or self.params[i - 1].kind != ParamKind.KEYWORD_ONLY):
                parts.append("*")
            parts.append(p.render())
            if p.kind == ParamKind.POSITIONAL_ONLY and (
                    i + 1 == len(self.params)
                    or self.params[i + 1].kind != ParamKind.POSITIONAL_ONLY):
                parts.append("/")
        return f"{self.path.rsplit('.', 1)[-1]}({', '.join(parts)})"

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    @property
    def positionals(self) -> list[Param]:
        return [p for p in self.params if p.positional]

    def has(self, kind: ParamKind) -> bool:
        return any(p.kind == kind for p in self.params)


@dataclass
class ApiIndex:
    package: str  # import name, e.g. "flashinfer"
    version: str
    functions: dict[str, Signature] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # public path -> target path
    modules: set[str] = field(default_factory=set)
    # every object defined in the package: path -> (kind, shape, body); rename detection
    # compares shapes (parameter or member names) and bodies (source with the name blanked)
    objects: dict[str, tuple[str, str, str]] = field(default_factory=dict)

    def canonical(self, path: str) -> str | None:
        """Follow re-exports to the object ``path`` names (any kind), or None."""
        seen: set[str] = set()
        while path not in self.objects and path not in self.functions \
                and path not in self.modules:
            if path in seen:
                return None
            seen.add(path)
            if path in self.aliases:
                path = self.aliases[path]
                continue
            head, _, tail = path.rpartition(".")
            if not head:
                return None
            parent = self.canonical(head) if head not in seen else None
            if parent is None or parent == head:
                return None
            path = f"{parent}.{tail}"
        return path

    def exists(self, path: str) -> bool:
        return self.canonical(path) is not None

    def kind(self, path: str) -> str | None:
        found = self.canonical(path)
        if found is None:
            return None
        if found in self.objects:
            return self.objects[found][0]
        return "module" if found in self.modules else "function"

    def resolve(self, path: str) -> str | None:
        """Follow re-exports (``flashinfer.fp4_quantize`` -> its defining module) to a
        function path, or None when the name does not exist in this version."""
        seen: set[str] = set()
        while path not in self.functions:
            if path in seen or path not in self.aliases:
                return self._resolve_prefix(path, seen)
            seen.add(path)
            path = self.aliases[path]
        return path

    def _resolve_prefix(self, path: str, seen: set[str]) -> str | None:
        # a.b.c where a.b is itself an alias of x.y: try x.y.c
        head, _, tail = path.rpartition(".")
        if not head or head in seen:
            return None
        seen.add(head)
        target = self.aliases.get(head)
        if target is None:
            return None
        return self.resolve(f"{target}.{tail}")

    def lookup(self, path: str) -> Signature | None:
        resolved = self.resolve(path)
        return self.functions.get(resolved) if resolved else None

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "package": self.package, "version": self.version,
                "modules": sorted(self.modules), "aliases": self.aliases,
                "objects": {k: list(v) for k, v in self.objects.items()},
                "functions": {k: {"params": [_param_json(p) for p in v.params],
                                  "deprecated": v.deprecated}
                              for k, v in self.functions.items()}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ApiIndex:
        return cls(package=data["package"], version=data["version"],
                   modules=set(data["modules"]), aliases=dict(data["aliases"]),
                   objects={k: (v[0], v[1], v[2]) for k, v in data["objects"].items()},
                   functions={k: Signature(k, tuple(Param(p["name"], _KIND[p["kind"]],
                                                                 p.get("default"),
                                                                 p.get("default_doc"))
                                                           for p in v["params"]),
                                           v.get("deprecated"))
                              for k, v in data["functions"].items()})


_DEFAULT_DOC = re.compile(  # up to the end of the sentence (a period before a space or the end)
    r"((?:defaults? (?:to|is)|if (?:not given|none|unset)|when (?:not given|none|unset|"
    r"omitted))\b.*?)(?=\.(?:\s|$)|$)", re.IGNORECASE)


_INERT = re.compile(r"\b(?:no|not|nothing|disabled?|skip(?:ped|s)?|off|unchanged|as before)\b",
                    re.IGNORECASE)


def default_doc(docstring: str, name: str, default: str | None = None) -> str | None:
    """What a docstring says ``name``'s default does: the "Defaults to X" / "If None, ..."
    clause of its entry (Google or NumPy style), one line. None when it says nothing, only
    restates the literal default ("Defaults to True" for ``=True``), or says the default
    does nothing ("If None, no recording occurs"): only a default that stands for a
    behaviour (``group=None``: "Defaults to torch.distributed.group.WORLD") is kept."""
    match = re.search(rf"^(\s*){re.escape(name)}\s*(?:\([^)]*\))?\s*:", docstring, re.MULTILINE)
    if match is None:
        return None
    indent = len(match.group(1))
    entry = [docstring[match.end():].split("\n", 1)[0]]
    for line in docstring[match.end():].split("\n")[1:]:
        if not line.strip() or len(line) - len(line.lstrip()) <= indent:
            break  # a blank line or the next entry ends this one
        entry.append(line.strip())
    found = _DEFAULT_DOC.search(" ".join(" ".join(entry).split()))
    if found is None:
        return None
    clause = found.group(1).strip()
    said = re.sub(r"^defaults? (?:to|is)\s+", "", clause, flags=re.IGNORECASE).strip("`'\" ")
    if default is not None and said == default.strip("'\""):
        return None
    return None if _INERT.search(clause) else clause[:200]


def _param_json(p: Param) -> dict[str, Any]:
    return {"name": p.name, "kind": p.kind, "default": p.default, "default_doc": p.default_doc}


def _signature(path: str, fn: griffe.Function, drop_first: bool) -> Signature:
    doc = fn.docstring.value if fn.docstring is not None else ""
    params = [Param(p.name, ParamKind(p.kind.value) if p.kind else
                    ParamKind.POSITIONAL_OR_KEYWORD,
                    None if p.default is None else str(p.default),
                    default_doc(doc, p.name, str(p.default))
                    if doc and p.default is not None else None)
              for p in fn.parameters]
    if drop_first and params and params[0].kind != ParamKind.KEYWORD_ONLY:
        params = params[1:]
    deprecated = None
    for dec in fn.decorators:
        text = str(dec.value)
        if "deprecat" in text.lower():
            deprecated = text
    return Signature(path, tuple(params), deprecated)


_WORD = re.compile(r"\w+")


def blank_name(text: str, word: str) -> str:
    """``re.sub(rf"\b{re.escape(word)}\b", "_", text)``, without compiling a pattern per
    name (thousands of names overflowed ``re``'s cache: a second per large API). For a
    ``word`` of word characters only, a match is an occurrence with no word character on
    either side."""
    if not _WORD.fullmatch(word):
        return re.sub(rf"\b{re.escape(word)}\b", "_", text)
    parts: list[str] = []
    start = at = 0
    size = len(word)
    while (at := text.find(word, at)) >= 0:
        end = at + size
        if (at == 0 or not _is_word(text[at - 1])) and (end == len(text)
                                                        or not _is_word(text[end])):
            parts += [text[start:at], "_"]
            start = at = end
        else:
            at += 1
    return "".join([*parts, text[start:]]) if parts else text


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _fingerprint(name: str, member: griffe.Object) -> tuple[str, str, str]:
    """(kind, shape, body) of one object, for telling a rename from a removal."""
    kind = member.kind.value
    if member.is_function:
        shape = ",".join(p.name for p in member.parameters)  # type: ignore[attr-defined]
    elif member.is_class:
        shape = ",".join(sorted(n for n in member.members if not n.startswith("_")))
    else:
        shape = ""
    try:
        source = member.source if kind in ("function", "class") else ""
    except (OSError, ValueError, AttributeError):  # no lines for it: shape only
        source = ""
    body = ""
    if source:
        blanked = blank_name(source, name)
        body = hashlib.sha256(" ".join(blanked.split()).encode()).hexdigest()[:16]
    return kind, shape, body


def _walk(obj: griffe.Object, index: ApiIndex) -> None:
    for name, member in list(obj.members.items()):
        path = f"{obj.path}.{name}"
        if member.is_alias:
            index.aliases[path] = member.target_path  # type: ignore[union-attr]
            continue
        index.objects[path] = _fingerprint(name, member)  # type: ignore[arg-type]
        if member.is_module:
            index.modules.add(path)
            _walk(member, index)  # type: ignore[arg-type]
        elif member.is_function:
            is_method = obj.is_class and not any(
                str(d.value) == "staticmethod" for d in member.decorators)  # type: ignore[union-attr]
            index.functions[path] = _signature(path, member, is_method)  # type: ignore[arg-type]
        elif member.is_class:
            init = member.members.get("__init__")
            if init is not None and init.is_function:
                index.functions[path] = _signature(path, init, True)  # type: ignore[arg-type]
            _walk(member, index)  # type: ignore[arg-type]


def build_api(source_root: Path, package: str, version: str) -> tuple[ApiIndex, griffe.Object]:
    """Load ``package`` statically from ``source_root`` with griffe and condense it."""
    import griffe

    logging.getLogger("griffe").setLevel(logging.ERROR)
    loaded = griffe.load(package, search_paths=[str(source_root)], allow_inspection=False,
                         resolve_aliases=False)
    index = ApiIndex(package=package, version=version, modules={package})
    _walk(loaded, index)  # type: ignore[arg-type]
    return index, loaded  # type: ignore[return-value]
