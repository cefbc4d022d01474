"""METADATA from the tail of a remote wheel: what is read equals the member, and a wheel of
many files costs the tail and one member read, not its whole central directory."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

import pytest

from bot.adapters.lazywheel import (
    METADATA_LIMITS,
    SOURCE_LIMITS,
    RangeFile,
    is_metadata,
    is_source,
    read_members_lazily,
    read_metadata_lazily,
)
from bot.errors import WheelError
from wheels import build_wheel, metadata_of


class Remote:
    """A zip served through range requests from memory; counts what was asked."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.ranges: list[str] = []
        self.sent = 0

    def __call__(self, header: str) -> tuple[int, bytes, str]:
        self.ranges.append(header)
        first, _, last = header.removeprefix("bytes=").partition("-")
        size = len(self.body)
        start = size - int(last) if not first else int(first)
        end = size - 1 if not first else min(int(last), size - 1)
        start = max(0, start)
        self.sent += end + 1 - start
        return 206, self.body[start:end + 1], f"bytes {start}-{end}/{size}"


def many_files(tmp_path: Path, n: int = 3000) -> Path:
    """A wheel like flashinfer-cubin: thousands of members, a directory far over 64 KiB."""
    files = {f"kernelpkg/cubins/sm{i % 7}/kernel_{i:05d}_with_a_long_name.cubin": f"{i}\n"
             for i in range(n)}
    return build_wheel(tmp_path, "kernel-pkg", "1.0", requires=["other>=2"], files=files)


@pytest.mark.parametrize("n", [0, 3000], ids=["directory-in-tail", "directory-over-64k"])
def test_metadata_from_the_tail_equals_the_member(tmp_path: Path, n: int) -> None:
    wheel = many_files(tmp_path, n) if n else build_wheel(tmp_path, "kernel-pkg", "1.0")
    remote = Remote(wheel.read_bytes())
    found = read_metadata_lazily(remote, "u", METADATA_LIMITS, wheel.name)
    assert found == {"kernel_pkg-1.0.dist-info/METADATA": metadata_of(wheel)}
    assert len(remote.ranges) <= 2


def test_tail_read_is_cheaper_than_the_whole_directory(tmp_path: Path) -> None:
    body = many_files(tmp_path).read_bytes()
    with zipfile.ZipFile(many_files(tmp_path)) as zf:
        directory = sum(46 + len(i.filename.encode()) for i in zf.infolist())
    assert directory > 3 * 64 * 1024
    tail, whole = Remote(body), Remote(body)
    assert read_metadata_lazily(tail, "u", METADATA_LIMITS, "w.whl") == \
        read_members_lazily(whole, "u", is_metadata, METADATA_LIMITS, "w.whl")
    assert whole.sent > directory and tail.sent <= 2 * 64 * 1024
    assert len(tail.ranges) < len(whole.ranges)


def test_corrupt_metadata_member_is_refused(tmp_path: Path) -> None:
    wheel = many_files(tmp_path)
    body = bytearray(wheel.read_bytes())
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo("kernel_pkg-1.0.dist-info/METADATA")
    at = info.header_offset + 30 + len(info.filename) + len(info.extra) + 2
    body[at] ^= 0xFF
    with pytest.raises(WheelError, match="METADATA"):
        read_metadata_lazily(Remote(bytes(body)), "u", METADATA_LIMITS, wheel.name)


def test_comment_and_metadata_out_of_sight(tmp_path: Path) -> None:
    """A zip comment is stepped over; a METADATA written first (its entry far from the
    tail) is still found, through the whole directory."""
    wheel = many_files(tmp_path)
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.comment = b"built by hand" * 20
    assert read_metadata_lazily(Remote(wheel.read_bytes()), "u", METADATA_LIMITS,
                                wheel.name) == {"kernel_pkg-1.0.dist-info/METADATA":
                                                metadata_of(wheel)}
    first = tmp_path / "first" / "kernel_pkg-1.0-py3-none-any.whl"
    first.parent.mkdir()
    with zipfile.ZipFile(first, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("kernel_pkg-1.0.dist-info/METADATA", "Name: kernel-pkg\nVersion: 1.0\n")
        for i in range(3000):
            zf.writestr(f"kernelpkg/cubins/kernel_{i:05d}_with_a_long_name.cubin", str(i))
    remote = Remote(first.read_bytes())
    assert read_metadata_lazily(remote, "u", METADATA_LIMITS, first.name) == \
        {"kernel_pkg-1.0.dist-info/METADATA": b"Name: kernel-pkg\nVersion: 1.0\n"}
    assert remote.sent > 64 * 1024  # the general path read the directory


def test_members_read_through_ranges_equal_the_archive(tmp_path: Path) -> None:
    """Sources of many sizes read through range requests (segments fetched in pieces, reads
    served short from what is held) are byte for byte the archive's members."""
    rng = random.Random(7)  # text that does not compress: members span many 64 KiB chunks
    files = {f"kernelpkg/m{i}.py": "".join(rng.choices("abcdefgh\n", k=rng.randrange(1, 150_000)))
             for i in range(40)}
    wheel = build_wheel(tmp_path, "kernel-pkg", "1.0", files=files)
    remote = Remote(wheel.read_bytes())
    found = read_members_lazily(remote, "u", is_source, SOURCE_LIMITS, wheel.name)
    with zipfile.ZipFile(wheel) as zf:
        assert found == {n: zf.read(n) for n in zf.namelist() if is_source(n)}


def test_neighbouring_members_are_read_in_requests_of_bounded_size(tmp_path: Path) -> None:
    """Neighbours are merged into one request up to ``max_span`` bytes (an answer is held
    twice while it is read), each range asked once, the members the archive's."""
    rng = random.Random(11)
    files = {f"kernelpkg/m{i:02d}.py": "".join(rng.choices("abcdefgh\n", k=60_000))
             for i in range(30)}
    wheel = build_wheel(tmp_path, "kernel-pkg", "1.0", files=files)
    found = {}
    for span in (1 << 30, 256 * 1024):
        remote = Remote(wheel.read_bytes())
        found[span] = read_members_lazily(remote, "u", is_source, SOURCE_LIMITS, wheel.name,
                                          max_span=span)
        sizes = [int(r.split("-")[1]) - int(r.removeprefix("bytes=").split("-")[0]) + 1
                 for r in remote.ranges if not r.startswith("bytes=-")]
        assert len(set(remote.ranges)) == len(remote.ranges)
        if span < len(remote.body):
            assert len(sizes) > 1 and max(sizes) <= span
        else:
            assert len(sizes) == 1
    with zipfile.ZipFile(wheel) as zf:
        assert found[256 * 1024] == found[1 << 30] == {n: zf.read(n) for n in zf.namelist()
                                                       if is_source(n)}


def test_a_read_across_the_end_of_a_held_range_continues_where_it_stopped() -> None:
    body = bytes(range(256)) * 1024
    raw = RangeFile(Remote(body), "u")
    raw.prefetch(1000, 1100)
    reader = io.BufferedReader(raw, buffer_size=64 * 1024)
    reader.seek(1050)
    assert reader.read(100) == body[1050:1150]
    assert reader.tell() == 1150
