"""Build real wheels (zip files with METADATA, WHEEL and RECORD) for the test indexes."""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def build_wheel(directory: Path, name: str, version: str, *,
                requires: Sequence[str] = (), requires_python: str | None = None,
                tag: str = "py3-none-any", extras: Sequence[str] = (),
                padding: int = 0, uploaded: datetime | None = None,
                files: dict[str, str] | None = None) -> Path:
    """Write ``name``-``version`` as a wheel into ``directory`` and return its path.

    ``padding`` adds an incompressible data file of that many bytes (to make lazy reads
    measurable); ``uploaded`` sets the file's mtime, which servers send as Last-Modified.
    """
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        lines.append(f"Requires-Python: {requires_python}")
    lines += [f"Provides-Extra: {e}" for e in extras]
    lines += [f"Requires-Dist: {r}" for r in requires]
    metadata = ("\n".join(lines) + "\n\n").encode()
    members: dict[str, bytes] = {} if files else {
        f"{dist}/__init__.py": f'__version__ = "{version}"\n'.encode()}
    for rel, text in (files or {}).items():
        members[rel] = text.encode()
    if padding:
        members[f"{dist}/data.bin"] = os.urandom(padding)
    members[f"{info}/METADATA"] = metadata
    members[f"{info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: pinbump-tests\n"
                                f"Root-Is-Purelib: true\nTag: {tag}\n").encode()
    record = "".join(f"{k},{_record_hash(v)},{len(v)}\n" for k, v in members.items())
    members[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for member, data in members.items():
            zf.writestr(member, data)
    if uploaded is not None:
        stamp = uploaded.timestamp()
        os.utime(path, (stamp, stamp))
    return path


def metadata_of(path: Path) -> bytes:
    with zipfile.ZipFile(path) as zf:
        member = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return zf.read(member)
