"""A loopback emulation of where the FlashInfer stack is really published, served by a real
HTTP server from wheels the tests build:

- ``/pypi/simple/``: PyPI (flashinfer-python, flashinfer-cubin up to 0.6.13, companions);
- ``/whl/``: FlashInfer's own index (flashinfer-cubin from 0.6.14 on);
- ``/whl/cu129/``, ``/whl/cu130/``: flashinfer-jit-cache per CUDA variant, local versions
  (``0.6.11+cu130``), platform wheels for x86_64 and aarch64; from 0.7.0 (``publish_shim``)
  FlashInfer's real layout: one shim wheel per CPU platform whose Requires-Dist pins, without
  markers, that platform's providers ``flashinfer-jit-cache-sm90a==0.7.0+cu130`` (aarch64
  names more: sm110a, sm121a), each provider on the same per-CUDA index (see the sources cited
  in bot/data/flashinfer.toml);
- ``/whl/nightly/`` and ``/whl/nightly/cu129/``: nightly builds;
- any path under ``failing`` prefixes answers 503 (an index that cannot be read).

Pages are PEP 503 HTML with PEP 658 metadata files; upload times come from each wheel's
Last-Modified (its mtime), as on an index without PEP 700.
"""

from __future__ import annotations

import hashlib
import html
import http.server
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path

from packaging.utils import canonicalize_name

from servers import QuietServer, serve
from wheels import build_wheel, metadata_of

OLD = datetime.now(timezone.utc) - timedelta(days=60)
X86 = "cp39-abi3-manylinux_2_28_x86_64"
ARM = "cp39-abi3-manylinux_2_28_aarch64"
# Per-architecture jit-cache providers (a subset of FlashInfer's inventory, real names): the
# x86-64 shim pins these; the aarch64 shim these and the Grace-only ones.
PROVIDERS_X86 = ("sm80", "sm90a", "sm100a", "sm120f")
PROVIDERS_ARM = (*PROVIDERS_X86, "sm110a", "sm121a")


class _Handler(http.server.SimpleHTTPRequestHandler):
    failing: tuple[str, ...] = ()

    def do_GET(self) -> None:
        if any(self.path.startswith(p) for p in self.failing):
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()

    def do_HEAD(self) -> None:
        if any(self.path.startswith(p) for p in self.failing):
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_HEAD()

    def log_message(self, *args: object) -> None:
        pass


@dataclass
class FlashInferIndex:
    root: Path
    base: str  # http://127.0.0.1:PORT
    handler: type[_Handler]
    files: dict[str, dict[str, list[Path]]] = field(default_factory=dict)  # index -> project

    @property
    def pypi(self) -> str:
        return f"{self.base}/pypi/simple"

    @property
    def whl(self) -> str:
        return f"{self.base}/whl"

    def fail(self, *prefixes: str) -> None:
        """Answer 503 under these index paths (e.g. "/whl/cu130/")."""
        self.handler.failing = prefixes

    def add(self, index: str, name: str, version: str, *, tags: Sequence[str] = ("py3-none-any",),
            uploaded: datetime = OLD, requires: Sequence[str] = (),
            yanked: bool = False) -> None:
        """One release of ``name`` on ``index`` ("pypi/simple", "whl", "whl/cu130", ...), one
        wheel per tag."""
        folder = self.root / index / "files"
        for tag in tags:
            path = build_wheel(folder, name, version, tag=tag, uploaded=uploaded,
                               requires=requires)
            meta = metadata_of(path)
            (folder / (path.name + ".metadata")).write_bytes(meta)
            project = self.files.setdefault(index, {}).setdefault(canonicalize_name(name), [])
            project.append(path)
            if yanked:
                (folder / (path.name + ".yanked")).write_text("yanked")

    def publish(self) -> None:
        for index, projects in self.files.items():
            (self.root / index).mkdir(parents=True, exist_ok=True)
            names = sorted(projects)
            (self.root / index / "index.html").write_text("".join(
                f'<a href="{n}/">{n}</a>\n' for n in names))
            for name, paths in projects.items():
                anchors = []
                for path in sorted(set(paths)):
                    digest = hashlib.sha256(path.read_bytes()).hexdigest()
                    meta = hashlib.sha256(Path(str(path) + ".metadata").read_bytes()).hexdigest()
                    yanked = ' data-yanked=""' if Path(str(path) + ".yanked").exists() else ""
                    anchors.append(f'<a href="../files/{html.escape(path.name)}#sha256={digest}"'
                                   f' data-core-metadata="sha256={meta}"{yanked}>'
                                   f"{html.escape(path.name)}</a><br>")
                page = self.root / index / name / "index.html"
                page.parent.mkdir(parents=True, exist_ok=True)
                page.write_text("<!DOCTYPE html><html><body>\n" + "\n".join(anchors)
                                + "\n</body></html>\n")


@contextmanager
def flashinfer_index(root: Path) -> Iterator[FlashInferIndex]:
    root.mkdir(parents=True, exist_ok=True)
    handler: type[_Handler] = type("Handler", (_Handler,), {"failing": ()})
    server_class = type("Server", (QuietServer,),
                        {"request_queue_size": 128})  # pages and metadata are read at once
    server = server_class(("127.0.0.1", 0), partial(handler, directory=str(root)))
    server.daemon_threads = True
    serve(server)
    index = FlashInferIndex(root=root, base=f"http://127.0.0.1:{server.server_address[1]}",
                            handler=handler)
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()


def today_stack(index: FlashInferIndex, *, upto: str = "0.6.15") -> None:
    """FlashInfer as shipped today: flashinfer-python on PyPI; flashinfer-cubin on PyPI up to
    0.6.13, then only on FlashInfer's index; jit-cache per CUDA variant with local versions
    and wheels for both architectures; companions on PyPI."""
    versions = [v for v in ("0.6.8.post1", "0.6.11", "0.6.12", "0.6.13", "0.6.14", "0.6.15")
                if tuple(int(x) for x in v.split(".")[:3]) <=
                tuple(int(x) for x in upto.split(".")[:3])]
    for v in versions:
        index.add("pypi/simple", "flashinfer-python", v,
                  requires=["nvidia-cutlass-dsl>=4.4", f"flashinfer-cubin=={v}; extra == 'cubin'"])
        if v in ("0.6.8.post1", "0.6.11", "0.6.12", "0.6.13"):
            index.add("pypi/simple", "flashinfer-cubin", v)
        index.add("whl", "flashinfer-cubin", v)
        for cu in ("cu129", "cu130"):
            index.add(f"whl/{cu}", "flashinfer-jit-cache", f"{v}+{cu}", tags=(X86, ARM))
    for v in ("4.4.2", "4.5.0"):
        index.add("pypi/simple", "nvidia-cutlass-dsl", v)
    index.add("pypi/simple", "quack-kernels", "0.3.0")


def publish_shim(index: FlashInferIndex, version: str, variant: str, *, folder: str = "",
                 uploaded: datetime = OLD, skip: Collection[str] = (),
                 versions: Mapping[str, str] | None = None) -> None:
    """flashinfer-jit-cache ``version`` for one CUDA variant as FlashInfer publishes it since
    0.7 (flashinfer-ai/flashinfer#4514, #5096): a shim per CPU platform pinning that platform's
    providers at its full version (``0.7.0+cu130``), and the provider wheels beside it on the
    same index (``folder``, default ``whl/<variant>``). ``skip``: providers left unpublished;
    ``versions``: provider -> the version it was published at instead."""
    full = f"{version}+{variant}"
    folder = folder or f"whl/{variant}"
    for tag, providers in ((X86, PROVIDERS_X86), (ARM, PROVIDERS_ARM)):
        index.add(folder, "flashinfer-jit-cache", full, tags=(tag,), uploaded=uploaded,
                  requires=[f"flashinfer-jit-cache-{p}=={full}" for p in providers])
    for p in PROVIDERS_ARM:
        if p in skip:
            continue
        tags = (X86, ARM) if p in PROVIDERS_X86 else (ARM,)
        index.add(folder, f"flashinfer-jit-cache-{p}", (versions or {}).get(p, full), tags=tags,
                  uploaded=uploaded)
