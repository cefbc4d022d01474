"""A hostile package index on loopback (tests/servers.py: HostileIndex): every scenario ends
in exit 2 with one line `pinbump: error: ...`, writes nothing outside the cache, and lets no
secret of the index URL reach any output or file."""

from __future__ import annotations

import hashlib
import os
import tracemalloc
import zipfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from bot.cli import main
from servers import HostileIndex, hostile_index
from wheels import build_wheel

SECRET = "s3cr3t-T0KEN"
V1 = {"kernelpkg/__init__.py": "def launch(x):\n    return x\n"}
V2 = {"kernelpkg/__init__.py": "def launch(x, stream=None):\n    return x\n"}


@pytest.fixture
def index(tmp_path: Path) -> Iterator[HostileIndex]:
    """The hostile index; it wants credentials, which the tests pass in the URL
    (``index.auth_url``): no output and no file may ever show them."""
    with hostile_index(tmp_path / "index") as srv:
        srv.auth = ("bot", SECRET)
        yield srv
    for path in tmp_path.rglob("*"):
        if path.is_file() and "objects" not in path.parts:
            secret_free(str(path), path.read_bytes())


def target(root: Path, pin: str = "kernelpkg==1.0") -> Path:
    """A target whose group is one package, kernelpkg, pinned in its pyproject."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "model.py").write_text("import kernelpkg\n\nkernelpkg.launch(1)\n")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "t"\nrequires-python = ">=3.10"\n'
        f'dependencies = ["{pin}"]\n\n'
        '[tool.pinbump]\ngroup = "k"\nmin-release-age = 0\n'
        '[tool.pinbump.groups.k]\nlead = "kernelpkg"\n')
    return root


def snapshot(root: Path, skip: Path | None = None) -> dict[str, str]:
    """Every file under ``root`` except under ``skip`` (and any folder named cache), with its
    content hash."""
    out = {}
    for path in sorted(root.rglob("*")):
        if (skip is not None and (skip in path.parents or path == skip)) or \
                "cache" in path.relative_to(root).parts or not path.is_file():
            continue
        out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def one_line_error(err: str, *needles: str) -> None:
    assert err.startswith("pinbump: error: ") and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, (needle, err)
    assert "Traceback" not in err


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run pinbump in this process; outside the cache it must change no file beside the
    target's (``--repo``) and print no secret."""
    root = Path(argv[argv.index("--repo") + 1]).parent
    before = snapshot(root)
    code = main(argv)
    captured = capsys.readouterr()
    secret_free("the output", captured.out + captured.err)
    if code != 0:
        assert snapshot(root) == before, "a failed command changed files"
    return code, captured.out, captured.err


# -- item 1: zip-slip ------------------------------------------------------------------------
def slip_members(name: str) -> dict[str, str]:
    """V2 plus a member named ``name`` and the __init__.py files that make every folder on its
    way look importable (what a real attack would add)."""
    files = {name: "raise SystemExit('owned')\n", **V2}
    parts = name.split("/")
    for depth in range(1, len(parts)):
        files["/".join(parts[:depth]) + "/__init__.py"] = "import os\n"
    return files


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "backslash", "drive"])
def test_zip_slip_member_is_refused_and_nothing_is_written_outside(
        index: HostileIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        kind: str) -> None:
    cache = tmp_path / "cache"
    evil = {
        "dotdot": "../../../outside/sitecustomize.py",
        "absolute": str(tmp_path / "abs" / "sitecustomize.py"),
        "backslash": "kernelpkg\\..\\..\\..\\..\\outside.py",
        "drive": "C:/outside/sitecustomize.py",
    }[kind]
    wheels = tmp_path / "wheels"
    members = slip_members(evil) if kind == "dotdot" else {**V2, evil: "x = 1\n"}
    index.publish("kernelpkg", [build_wheel(wheels, "kernelpkg", "1.0", files=V1),
                                build_wheel(wheels, "kernelpkg", "2.0", files=members)])
    repo = target(tmp_path / "repo")
    before = snapshot(tmp_path, cache)
    code, out, err = cli(["drift", "--repo", str(repo), "--index-url", index.auth_url,
                          "--cache-dir", str(cache), "--from", "1.0", "--to", "2.0"], capsys)
    assert not (tmp_path / "outside").exists() and not (tmp_path / "abs").exists()
    assert snapshot(tmp_path, cache) == before
    assert code == 2, (out, err)
    one_line_error(err, "kernelpkg-2.0-py3-none-any.whl", repr(evil), "unsafe member name")
    assert not any("sitecustomize" in str(p) or "outside" in p.name for p in cache.rglob("*"))


# -- item 10: decompression caps -------------------------------------------------------------
def bomb_wheel(directory: Path, member: str, size: int, *, version: str = "2.0") -> Path:
    """kernelpkg ``version`` whose ``member`` inflates to ``size`` bytes (zeros, compressed
    while streaming so the test never holds them) from well under 1 MB on disk."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"kernelpkg-{version}-py3-none-any.whl"
    info = f"kernelpkg-{version}.dist-info"
    head = f"Metadata-Version: 2.1\nName: kernelpkg\nVersion: {version}\n\n".encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        if member != f"{info}/METADATA":
            zf.writestr(f"{info}/METADATA", head)
        zf.writestr("kernelpkg/__init__.py", V2["kernelpkg/__init__.py"])
        big = zipfile.ZipInfo(member)
        big.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(big, "w", force_zip64=True) as fh:
            fh.write(head if member.endswith("METADATA") else b"x = 1\n")
            chunk = b"\0" * (1 << 20)
            for _ in range(size >> 20):
                fh.write(chunk)
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"
                                     "Tag: py3-none-any\n")
    assert path.stat().st_size < 1_000_000
    return path


def peak_of(fn: object, *args: object) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = fn(*args)  # type: ignore[operator]
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_zip_bomb_metadata_is_refused_with_bounded_memory(
        index: HostileIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bomb = bomb_wheel(tmp_path / "wheels", "kernelpkg-2.0.dist-info/METADATA", 64 << 20)
    index.publish("kernelpkg", [build_wheel(tmp_path / "wheels", "kernelpkg", "1.0",
                                            files=V1), bomb])
    repo = target(tmp_path / "repo")
    cache = tmp_path / "cache"
    before = snapshot(tmp_path, cache)
    argv = ["plan", "--repo", str(repo), "--index-url", index.auth_url,
            "--cache-dir", str(cache)]
    (code, _out, err), peak = peak_of(cli, argv, capsys)
    assert peak < 32 << 20, f"peak {peak / 2**20:.0f} MiB"
    assert code == 2
    one_line_error(err, "kernelpkg-2.0-py3-none-any.whl", "kernelpkg-2.0.dist-info/METADATA",
                   "limit")
    assert snapshot(tmp_path, cache) == before
    assert sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()) < 1 << 20


@pytest.mark.parametrize("ranges", [True, False], ids=["range", "download"])
def test_huge_source_member_is_refused_with_bounded_memory(
        index: HostileIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        ranges: bool) -> None:
    bomb = bomb_wheel(tmp_path / "wheels", "kernelpkg/huge.py", 64 << 20)
    index.publish("kernelpkg", [build_wheel(tmp_path / "wheels", "kernelpkg", "1.0",
                                            files=V1), bomb])
    index.routes[f"/files/{bomb.name}"].ranges = ranges
    repo = target(tmp_path / "repo")
    cache = tmp_path / "cache"
    argv = ["drift", "--repo", str(repo), "--index-url", index.auth_url,
            "--cache-dir", str(cache), "--from", "1.0", "--to", "2.0"]
    (code, _out, err), peak = peak_of(cli, argv, capsys)
    assert peak < 32 << 20, f"peak {peak / 2**20:.0f} MiB"
    assert code == 2
    one_line_error(err, "kernelpkg-2.0-py3-none-any.whl", "kernelpkg/huge.py", "limit")
    assert sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()) < 1 << 20


def test_unsupported_and_corrupt_compression(index: HostileIndex, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    wheels = tmp_path / "wheels"
    good = build_wheel(wheels, "kernelpkg", "2.0", files=V2)
    with zipfile.ZipFile(good) as zf:
        meta = next(i for i in zf.infolist() if i.filename.endswith("METADATA"))
    data = bytearray(good.read_bytes())
    # the compression method of METADATA, in its local header and its central directory entry
    name = meta.filename.encode()
    central = next(at for at in range(len(data)) if data[at:at + 4] == b"PK\x01\x02"
                   and data[at + 46:at + 46 + len(name)] == name)
    for offset in (meta.header_offset + 8, central + 10):
        data[offset:offset + 2] = (99).to_bytes(2, "little")  # AES: not something we read
    unsupported = wheels / "unsupported" / good.name
    unsupported.parent.mkdir()
    unsupported.write_bytes(bytes(data))
    corrupt = wheels / "corrupt" / good.name
    corrupt.parent.mkdir()
    raw = bytearray(good.read_bytes())
    start = meta.header_offset + 30 + len(meta.filename.encode())
    raw[start:start + 8] = b"\xff" * 8  # deflate data that does not inflate
    corrupt.write_bytes(bytes(raw))
    repo = target(tmp_path / "repo")
    for wheel, needle in ((unsupported, "compression"), (corrupt, "corrupt")):
        index.publish("kernelpkg", [build_wheel(wheels, "kernelpkg", "1.0", files=V1), wheel])
        code, _out, err = cli(["plan", "--repo", str(repo), "--index-url", index.auth_url,
                               "--no-cache"], capsys)
        assert code == 2, err
        one_line_error(err, "kernelpkg-2.0-py3-none-any.whl", needle)
    assert os.listdir(tmp_path / "repo") == ["src", "pyproject.toml"] or \
        sorted(os.listdir(tmp_path / "repo")) == ["pyproject.toml", "src"]


def test_a_file_name_from_the_index_never_becomes_a_path(
        index: HostileIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheels = tmp_path / "wheels"
    cache = tmp_path / "cache"
    (cache / "src").mkdir(parents=True)
    doc = index.publish("kernelpkg", [build_wheel(wheels, "kernelpkg", "1.0", files=V1),
                                      build_wheel(wheels, "kernelpkg", "2.0", files=V2)])
    files = doc["files"]
    assert isinstance(files, list)
    files[1]["filename"] = "kernelpkg-2.0-py3-none-any/../../../../outside.whl"
    index.page("kernelpkg", doc)
    repo = target(tmp_path / "repo")
    before = snapshot(tmp_path, cache)
    code, _out, err = cli(["drift", "--repo", str(repo), "--index-url", index.auth_url,
                           "--cache-dir", str(cache), "--from", "1.0", "--to", "2.0"], capsys)
    assert code == 2
    one_line_error(err, "kernelpkg 2.0: no wheel on")
    assert snapshot(tmp_path, cache) == before
    assert all(p.parent.parent == cache / "src" or cache / "src" not in p.parents
               for p in cache.rglob("*") if p.parent.name != "src")


# -- item 5: credentials in the index URL ----------------------------------------------------
def flashinfer_stack(index: HostileIndex, wheels: Path) -> None:
    """The stack test_run_gate's world uses, plus flashinfer-python 0.6.12 whose cubin is
    missing: a rejection whose reason names the index."""
    from test_run_gate import FP4_NEW, FP4_OLD, WS_NEW, WS_OLD, sources

    old = datetime(2025, 1, 1)
    lead = [build_wheel(wheels, "flashinfer-python", v, files=sources(fp4, ws),
                        requires=["nvidia-cutlass-dsl>=4.4"])
            for v, fp4, ws in (("0.6.8.post1", FP4_OLD, WS_OLD), ("0.6.11", FP4_NEW, WS_NEW),
                               ("0.6.12", FP4_NEW, WS_NEW))]
    index.publish("flashinfer-python", lead, uploaded=old)
    index.publish("flashinfer-cubin", [build_wheel(wheels, "flashinfer-cubin", v)
                                       for v in ("0.6.8.post1", "0.6.11")], uploaded=old)
    index.publish("nvidia-cutlass-dsl", [build_wheel(wheels, "nvidia-cutlass-dsl", v)
                                         for v in ("4.4.2", "4.5.0")], uploaded=old)
    index.publish("quack-kernels", [build_wheel(wheels, "quack-kernels", "0.3.0")],
                  uploaded=old)


def secret_free(where: str, text: str | bytes) -> None:
    data = text.encode() if isinstance(text, str) else text
    assert SECRET.encode() not in data, f"the index password leaked into {where}"


def test_index_credentials_reach_the_index_and_nothing_else(
        index: HostileIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import subprocess
    from types import SimpleNamespace

    from test_run_gate import TOKEN, World

    index.auth = ("bot", SECRET)
    flashinfer_stack(index, tmp_path / "wheels")
    url = f"http://bot:{SECRET}@{index.base.removeprefix('http://')}/simple"
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    world = World(tmp_path, SimpleNamespace(url=url))  # type: ignore[arg-type]
    try:
        plan = ["plan", "--repo", str(world.checkout), "--index-url", url,
                "--cache-dir", str(world.cache)]
        code, out, err = cli(plan, capsys)
        assert code == 0, err
        assert f"flashinfer-cubin 0.6.12 is not published on {index.url}" in out
        secret_free("plan text", out + err)
        code, out, err = cli([*plan, "--json"], capsys)
        assert code == 0 and '"version": "0.6.12"' in out
        secret_free("plan JSON", out + err)
        assert world.run() == 0
        captured = capsys.readouterr()
        secret_free("run output", captured.out + captured.err)
        items = world.emu.state.items.values()
        assert any("is not published on" in (i.get("body") or "") for i in items)
        for item in items:
            secret_free(f"GitHub item {item.get('title')!r}",
                        f"{item.get('title')}\n{item.get('body')}")
        for comments in world.emu.state.comments.values():
            secret_free("a comment", "\n".join(c["body"] for c in comments))
        history = subprocess.run(["git", "log", "-p", "--all"], cwd=world.bare, check=True,
                                 capture_output=True).stdout
        secret_free("the pushed history", history)
        index.routes.pop("/simple/quack-kernels/")  # an error names the URL it tried
        code, out, err = cli([*plan, "--no-cache", "--retries", "0"], capsys)
        assert code == 2
        one_line_error(err, f"{index.url}/quack-kernels/")
        secret_free("an error", out + err)
    finally:
        world.close()
    secret_free("logs", caplog.text)
    assert any(world.cache.rglob("*.json")), "the cache holds pages"
    for path in tmp_path.rglob("*"):
        if path.is_file() and "objects" not in path.parts:
            secret_free(str(path), path.read_bytes())
    assert any("Authorization" in h for _m, _p, h in index.requests)


# -- item 11: deadlines ----------------------------------------------------------------------
def pinbump(argv: list[str], limit: float = 20.0) -> tuple[int, str, str, float]:
    """The real CLI in its own process (a hang cannot take the test run with it)."""
    import subprocess
    import sys
    import time

    root = Path(argv[argv.index("--repo") + 1]).parent
    before = snapshot(root)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "bot", *argv], capture_output=True,
                          text=True, timeout=limit)
    elapsed = time.monotonic() - start
    secret_free("the output", proc.stdout + proc.stderr)
    assert snapshot(root) == before
    return proc.returncode, proc.stdout, proc.stderr, elapsed


@pytest.mark.parametrize("what", ["page", "metadata"])
def test_a_slow_drip_server_is_cut_off_at_the_timeout(
        index: HostileIndex, tmp_path: Path, what: str) -> None:
    wheels = tmp_path / "wheels"
    index.publish("kernelpkg", [build_wheel(wheels, "kernelpkg", v, files=V1)
                                for v in ("1.0", "2.0")])
    path = "/simple/kernelpkg/" if what == "page" else "/files/kernelpkg-2.0-py3-none-any.whl"
    index.routes[path].drip = 1.0  # one byte a second, status line and headers included
    repo = target(tmp_path / "repo")
    code, _out, err, elapsed = pinbump(["plan", "--repo", str(repo), "--index-url", index.auth_url,
                                        "--no-cache", "--timeout", "2", "--retries", "0"])
    assert elapsed < 8, elapsed
    assert code == 2
    one_line_error(err, "timed out after 1 attempt", "deadline of 2 s")


def test_the_command_deadline_bounds_retries(index: HostileIndex, tmp_path: Path) -> None:
    from servers import Route

    index.routes["/simple/kernelpkg/"] = Route(b"busy", status=503,
                                               headers={"Retry-After": "1"})
    repo = target(tmp_path / "repo")
    code, _out, err, elapsed = pinbump(["plan", "--repo", str(repo), "--index-url", index.auth_url,
                                        "--no-cache", "--retries", "20", "--deadline", "3"])
    assert elapsed < 8, elapsed
    assert code == 2
    one_line_error(err, f"{index.url}/kernelpkg/", "HTTP 503", "--deadline of 3 s")


def test_a_gzip_bomb_page_is_refused_with_bounded_memory(
        index: HostileIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import zlib

    from servers import Route

    packer = zlib.compressobj(1, zlib.DEFLATED, 31)  # gzip: 512 MiB of spaces in 2.3 MB
    chunk = b" " * (1 << 20)
    body = b"".join(packer.compress(chunk) for _ in range(512)) + packer.flush()
    assert len(body) < 3 << 20
    index.routes["/simple/kernelpkg/"] = Route(
        body, "application/vnd.pypi.simple.v1+json", headers={"Content-Encoding": "gzip"})
    repo = target(tmp_path / "repo")
    argv = ["plan", "--repo", str(repo), "--index-url", index.auth_url,
            "--no-cache"]
    (code, _out, err), peak = peak_of(cli, argv, capsys)
    assert peak < 192 << 20, f"peak {peak / 2**20:.0f} MiB"  # the page limit is 64 MiB
    assert code == 2
    one_line_error(err, f"{index.url}/kernelpkg/", "over 64 MiB")


# -- low items: malformed answers are one-line errors, never tracebacks -----------------------
def lead_page(index: HostileIndex, tmp_path: Path) -> dict[str, object]:
    wheels = tmp_path / "wheels"
    return index.publish("kernelpkg", [build_wheel(wheels, "kernelpkg", v, files=V1)
                                       for v in ("1.0", "2.0")])


MALFORMED = {
    "url missing": (lambda d: d["files"][0].pop("url"), "files[0] 'url' is missing"),
    "files null": (lambda d: d.update(files=None), "'files' is NoneType, not a list"),
    "files object": (lambda d: d.update(files={"a": 1}), "'files' is dict, not a list"),
    "entry a string": (lambda d: d["files"].__setitem__(0, "x"), "files[0] is str"),
    "filename a number": (lambda d: d["files"][1].update(filename=7),
                          "files[1] 'filename' is int, not str"),
    "hashes a list": (lambda d: d["files"][0].update(hashes=["x"]),
                      "files[0] 'hashes' is list, not dict"),
    "size a string": (lambda d: d["files"][0].update(size="big"), "files[0] 'size' is str"),
    "url not http": (lambda d: d["files"][0].update(url="file:///etc/passwd"),
                     "files[0] URL 'file:///etc/passwd' is not http(s)"),
    "url unparsable": (lambda d: d["files"][0].update(url="http://[::1/x.whl"),
                       "files[0] URL 'http://[::1/x.whl' is not valid"),
    "5000-digit version": (lambda d: d["files"][1].update(
        filename="kernelpkg-" + "1" * 5000 + "-py3-none-any.whl"),
        "version has 5000 characters"),
    "600-digit version": (lambda d: d["files"][1].update(
        filename="kernelpkg-" + "9" * 600 + ".tar.gz"), "version has 600 characters"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_index_json_is_one_line(index: HostileIndex, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str],
                                          case: str) -> None:
    spoil, needle = MALFORMED[case]
    doc = lead_page(index, tmp_path)
    spoil(doc)
    index.page("kernelpkg", doc)
    repo = target(tmp_path / "repo")
    cache = tmp_path / "cache"
    before = snapshot(tmp_path, cache)
    for command in ("plan", "apply", "drift"):
        code, out, err = cli([command, "--repo", str(repo), "--index-url", index.auth_url,
                              "--cache-dir", str(cache)], capsys)
        assert code == 2, (command, out, err)
        one_line_error(err, needle)
        assert len(err) < 400
    assert snapshot(tmp_path, cache) == before


@pytest.mark.parametrize("raw", [b"[" * 100_000, b"\xff\xfe", b'{"files": ' + b"1" * 5000 + b"}",
                                 b"null"], ids=["deep", "binary", "huge-int", "null"])
def test_a_page_that_is_not_json_is_one_line(index: HostileIndex, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str],
                                             raw: bytes) -> None:
    index.page("kernelpkg", None, raw=raw)
    code, _out, err = cli(["plan", "--repo", str(target(tmp_path / "repo")), "--index-url",
                           index.auth_url, "--no-cache"], capsys)
    assert code == 2
    one_line_error(err, f"{index.url}/kernelpkg/: malformed PEP 691 JSON")
    assert len(err) < 400


@pytest.mark.parametrize("value", ["-5", "nan", "inf", "1e400", "Tue, 99 Foo 2026"])
def test_a_hostile_retry_after_is_no_traceback(index: HostileIndex, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               value: str) -> None:
    import time

    from servers import Route

    index.routes["/simple/kernelpkg/"] = Route(b"busy", status=503,
                                               headers={"Retry-After": value})
    start = time.monotonic()
    code, _out, err = cli(["plan", "--repo", str(target(tmp_path / "repo")), "--index-url",
                           index.auth_url, "--no-cache", "--retries", "1"], capsys)
    assert time.monotonic() - start < 15
    assert code == 2
    one_line_error(err, "HTTP 503 after 2 attempts")


@pytest.mark.parametrize(("url", "needle"), [
    ("http://[::1/simple", "is not a valid URL"),
    ("ftp://index.example/simple", "is not an http(s) URL with a host"),
    ("not a url", "is not an http(s) URL with a host"),
    ("http://index.example:99999/simple", "is not a valid URL"),
    (f"https://bot:{SECRET}@/simple", "is not an http(s) URL with a host"),
])
def test_an_invalid_index_url_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          url: str, needle: str) -> None:
    repo = target(tmp_path / "repo")
    code, out, err = cli(["plan", "--repo", str(repo), "--index-url", url], capsys)
    assert code == 2
    one_line_error(err, "--index-url: ", needle)
    secret_free("an invalid URL's error", out + err)
    (repo / "pinbump.toml").write_text(f'index-url = "{url}"\n')
    code, out, err = cli(["plan", "--repo", str(repo)], capsys)
    assert code == 2
    one_line_error(err, "pinbump.toml: key 'index-url': ", needle)
    secret_free("an invalid URL's error", out + err)


def test_a_local_version_from_the_index_is_never_a_target(
        index: HostileIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    wheels = tmp_path / "wheels"
    index.publish("kernelpkg", [build_wheel(wheels, "kernelpkg", v, files=V1)
                                for v in ("1.0", "2.0+evil.example")])
    repo = target(tmp_path / "repo")
    before = snapshot(tmp_path, tmp_path / "cache")
    code, _out, err = cli(["apply", "--repo", str(repo), "--index-url", index.auth_url,
                           "--cache-dir", str(tmp_path / "cache")], capsys)
    assert code == 0, err
    assert snapshot(tmp_path, tmp_path / "cache") == before
    code, out, _err = cli(["plan", "--repo", str(repo), "--index-url", index.auth_url,
                           "--no-cache", "--json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["changes"] == []
    assert [(r["version"], r["reason"]) for r in doc["rejected"]] == [
        ("2.0+evil.example", "local version (+evil.example): never a target unless configured")]


def test_a_huge_pep658_metadata_file_is_refused_with_bounded_memory(
        index: HostileIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import zlib

    from servers import Route

    wheels = tmp_path / "wheels"
    lead_page(index, tmp_path)
    doc = index.publish("kernelpkg", [build_wheel(wheels, "kernelpkg", v, files=V1)
                                      for v in ("1.0", "2.0")], **{"core-metadata": True})
    assert doc["files"]
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    head = b"Metadata-Version: 2.1\nName: kernelpkg\nVersion: 2.0\n\n"
    body = packer.compress(head) + b"".join(
        packer.compress(b" " * (1 << 20)) for _ in range(48)) + packer.flush()
    index.routes["/files/kernelpkg-2.0-py3-none-any.whl.metadata"] = Route(
        body, "text/plain", headers={"Content-Encoding": "gzip"})
    repo = target(tmp_path / "repo")
    argv = ["plan", "--repo", str(repo), "--index-url", index.auth_url, "--no-cache"]
    (code, _out, err), peak = peak_of(cli, argv, capsys)
    assert peak < 64 << 20, f"peak {peak / 2**20:.0f} MiB"
    assert code == 2
    one_line_error(err, "kernelpkg-2.0-py3-none-any.whl.metadata", "over 16 MiB")
