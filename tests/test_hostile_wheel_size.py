"""Wheels that are large in ways the per-member caps do not see: a central directory of
hundreds of thousands of entries, and a whole wheel sent when the server ignores Range.
Memory stays bounded (tracemalloc counts every allocation, the loopback server's too)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from test_hostile_index import V1, cli, index, one_line_error, peak_of, target  # noqa: F401

from servers import HostileIndex
from wheels import build_wheel

ENTRIES = 200_000


def many_entries_wheel(directory: Path, entries: int, claimed: int | None = None,
                       zip64: bool = False, comment: bytes = b"") -> Path:
    """kernelpkg 2.0 with ``entries`` tiny stored members besides its METADATA, written
    record by record (zipfile would take seconds for this many); the end record claims
    ``claimed`` entries (default: as many as fit), in a zip64 end record when ``zip64``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "kernelpkg-2.0-py3-none-any.whl"
    members = [(f"kernelpkg/m{i}.py".encode(), b"") for i in range(entries)]
    members.append((b"kernelpkg-2.0.dist-info/METADATA",
                    b"Metadata-Version: 2.1\nName: kernelpkg\nVersion: 2.0\n\n"))
    local, central, offset = bytearray(), bytearray(), 0
    for name, data in members:
        crc = zlib.crc32(data)
        head = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0x800, 0, 0, 0, crc, len(data),
                           len(data), len(name), 0) + name + data
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0x800, 0, 0, 0, crc,
                               len(data), len(data), len(name), 0, 0, 0, 0, 0, offset) + name
        local += head
        offset += len(head)
    count = min(len(members), 0xFFFF) if claimed is None else claimed
    tail = b""
    if zip64:
        at = offset + len(central)
        tail = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count,
                           len(central), offset) + \
            struct.pack("<4sLQL", b"PK\x06\x07", 0, at, 1)
        count = 0xFFFF
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, min(count, 0xFFFF),
                      min(count, 0xFFFF), len(central), offset, len(comment)) + comment
    path.write_bytes(bytes(local + central + tail + end))
    return path


@pytest.mark.parametrize("ranges", [True, False], ids=["range", "download"])
def test_a_wheel_with_too_many_entries_is_refused_with_bounded_memory(
        index: HostileIndex, tmp_path: Path,  # noqa: F811
        capsys: pytest.CaptureFixture[str], ranges: bool) -> None:
    wheels = tmp_path / "wheels"
    many = many_entries_wheel(wheels, ENTRIES)
    index.publish("kernelpkg", [build_wheel(wheels, "kernelpkg", "1.0", files=V1), many])
    index.routes[f"/files/{many.name}"].ranges = ranges
    repo = target(tmp_path / "t" / "repo")  # cli() hashes files beside it: not the wheels
    argv = ["drift", "--repo", str(repo), "--index-url", index.auth_url,
            "--cache-dir", str(tmp_path / "cache"), "--from", "1.0", "--to", "2.0"]
    (code, _out, err), peak = peak_of(cli, argv, capsys)
    assert peak < 40 << 20, f"peak {peak / 2**20:.0f} MiB"
    assert code == 2, err
    one_line_error(err, "kernelpkg-2.0-py3-none-any.whl", "entries", "50000")


def test_a_whole_wheel_download_is_streamed_to_disk(
        index: HostileIndex, tmp_path: Path,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    """The server ignores Range and the index gives no PEP 658 file: plan reads METADATA
    from the downloaded wheel without holding its 48 MiB."""
    wheels = tmp_path / "wheels"
    big = build_wheel(wheels, "kernelpkg", "2.0", files={"kernelpkg/__init__.py": "x = 1\n"},
                      padding=48 << 20)
    index.publish("kernelpkg", [build_wheel(wheels, "kernelpkg", "1.0", files=V1), big])
    index.routes[f"/files/{big.name}"].ranges = False
    repo = target(tmp_path / "t" / "repo")  # cli() hashes files beside it: not the wheels
    argv = ["plan", "--repo", str(repo), "--index-url", index.auth_url,
            "--cache-dir", str(tmp_path / "cache")]
    (code, out, err), peak = peak_of(cli, argv, capsys)
    assert code == 0, err
    assert "2.0" in out
    assert peak < 24 << 20, f"peak {peak / 2**20:.0f} MiB"


def test_a_whole_wheel_whose_sha256_differs_is_refused(
        index: HostileIndex, tmp_path: Path,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    wheels = tmp_path / "wheels"
    big = build_wheel(wheels, "kernelpkg", "2.0", files={"kernelpkg/__init__.py": "x = 1\n"},
                      padding=1 << 20)
    doc = index.publish("kernelpkg", [build_wheel(wheels, "kernelpkg", "1.0", files=V1), big])
    files = doc["files"]
    assert isinstance(files, list)
    files[1]["hashes"] = {"sha256": "0" * 64}
    index.page("kernelpkg", doc)
    index.routes[f"/files/{big.name}"].ranges = False
    repo = target(tmp_path / "t" / "repo")  # cli() hashes files beside it: not the wheels
    code, _out, err = cli(["plan", "--repo", str(repo), "--index-url", index.auth_url,
                           "--cache-dir", str(tmp_path / "cache")], capsys)
    assert code == 2
    one_line_error(err, "kernelpkg-2.0-py3-none-any.whl", "sha256 mismatch")


def test_a_range_answer_longer_than_the_range_is_refused(
        index: HostileIndex, tmp_path: Path,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    """A 206 whose body is the whole 8 MiB wheel instead of the 64 KiB tail asked for is
    not held: one line naming the file and the size asked for."""
    from servers import Route

    wheels = tmp_path / "wheels"
    big = build_wheel(wheels, "kernelpkg", "2.0", files={"kernelpkg/__init__.py": "x = 1\n"},
                      padding=8 << 20)
    index.publish("kernelpkg", [build_wheel(wheels, "kernelpkg", "1.0", files=V1), big])
    data = big.read_bytes()
    index.routes[f"/files/{big.name}"] = Route(data, status=206, ranges=False, headers={
        "Content-Range": f"bytes {len(data) - 65536}-{len(data) - 1}/{len(data)}"})
    repo = target(tmp_path / "t" / "repo")
    code, _out, err = cli(["plan", "--repo", str(repo), "--index-url", index.auth_url,
                           "--cache-dir", str(tmp_path / "cache")], capsys)
    assert code == 2
    one_line_error(err, big.name, "over 65536 bytes")


@pytest.mark.parametrize(("claimed", "zip64", "shown"), [
    (1, False, "60001 entries"),  # the end record lies: the directory is counted
    (60_001, True, "60001 entries"),  # a zip64 end record's count
    (3, True, "60001 entries"),  # a lying zip64 count
    (2, None, "60001 entries"),  # the end record pushed out of the 64 KiB tail by a comment
])
def test_the_entry_cap_sees_through_the_end_records(
        tmp_path: Path, claimed: int, zip64: bool | None, shown: str) -> None:
    from bot.adapters.lazywheel import SOURCE_LIMITS, is_source, read_members
    from bot.errors import WheelError

    wheel = many_entries_wheel(tmp_path, 60_000, claimed=claimed, zip64=bool(zip64),
                               comment=b"c" * 65_000 if zip64 is None else b"")
    with wheel.open("rb") as fh, pytest.raises(WheelError, match=shown):
        read_members(fh, is_source, SOURCE_LIMITS, wheel.name)


def test_a_wheel_under_the_entry_cap_is_read(tmp_path: Path) -> None:
    from bot.adapters.lazywheel import SOURCE_LIMITS, is_source, read_members

    wheel = many_entries_wheel(tmp_path, 2_000, zip64=True)
    with wheel.open("rb") as fh:
        members = read_members(fh, is_source, SOURCE_LIMITS, wheel.name)
    assert len(members) == 2_000 and members["kernelpkg/m1999.py"] == b""


def test_members_can_be_handed_on_one_by_one(tmp_path: Path) -> None:
    """drift writes each source member out as it is inflated: none is held by the reader."""
    from bot.adapters.lazywheel import SOURCE_LIMITS, is_source, read_members

    wheel = many_entries_wheel(tmp_path, 50, zip64=False)
    handed: list[tuple[str, bytes]] = []
    with wheel.open("rb") as fh:
        assert read_members(fh, is_source, SOURCE_LIMITS, wheel.name,
                            sink=lambda name, data: handed.append((name, data))) == {}
    with wheel.open("rb") as fh:
        assert dict(handed) == read_members(fh, is_source, SOURCE_LIMITS, wheel.name)
    assert len(handed) == 50
