"""Read members of a remote zip (a wheel's METADATA, its .py sources) with HTTP range requests.

Like pip's lazy_wheel and uv: fetch the tail (end of central directory and the directory
itself), then only the byte ranges of the members asked for.  When the server ignores Range
and sends the whole file, that body is used instead (and its sha256 is checked by the caller).
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO, cast

from bot.errors import MetadataError, WheelError, WholeFile

TAIL = 64 * 1024
CHUNK = 64 * 1024

# A Range header in; (status, body, Content-Range) out.
RangeFetcher = Callable[[str], tuple[int, bytes, str]]
Sink = Callable[[str, bytes], None]  # takes each member (name, bytes) as it is inflated


class RangeFile(io.RawIOBase):
    """A seekable, read-only file whose bytes come from range requests, cached by interval."""

    def __init__(self, fetch: RangeFetcher, url: str) -> None:
        super().__init__()
        self._fetch = fetch
        self._url = url
        self._pos = 0
        self._segments: list[tuple[int, bytes]] = []
        status, body, content_range = fetch(f"bytes=-{TAIL}")
        if status == 200:
            raise WholeFile()
        match = re.match(r"bytes (\d+)-(\d+)/(\d+)", content_range or "")
        if status != 206 or not match:
            raise MetadataError(f"{url}: unexpected answer to a range request (HTTP {status})")
        self.size = int(match.group(3))
        self._segments.append((int(match.group(1)), body))

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, size: int = -1) -> bytes:
        end = self.size if size is None or size < 0 else min(self.size, self._pos + size)
        if end <= self._pos:
            return b""
        data = self._get(self._pos, end)  # may be short: what one held segment has
        self._pos += len(data)
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def prefetch(self, start: int, end: int) -> None:
        """Fetch [start, end) in one request unless it is already held."""
        if end > start and not any(s <= start and end <= s + len(seg)
                                   for s, seg in self._segments):
            status, body, _ = self._fetch(f"bytes={start}-{end - 1}")
            if status != 206 or len(body) != end - start:
                raise MetadataError(f"{self._url}: short or failed range read (HTTP {status})")
            self._segments.append((start, body))

    def _get(self, start: int, end: int) -> bytes:
        for seg_start, seg in self._segments:  # a short read from what is held beats a fetch
            if seg_start <= start < seg_start + len(seg):
                return seg[start - seg_start: min(end, seg_start + len(seg)) - seg_start]
        fetch_end = min(self.size, max(end, start + CHUNK))
        status, body, _ = self._fetch(f"bytes={start}-{fetch_end - 1}")
        if status != 206 or len(body) != fetch_end - start:
            raise MetadataError(f"{self._url}: short or failed range read (HTTP {status})")
        self._segments.append((start, body))
        return body[: end - start]


def is_metadata(name: str) -> bool:
    return re.fullmatch(r"[^/]+\.dist-info/METADATA", name) is not None


def metadata_member(names: list[str]) -> str:
    members = [n for n in names if is_metadata(n)]
    if len(members) != 1:
        raise MetadataError(f"expected one *.dist-info/METADATA member, found {len(members)}")
    return members[0]


def is_source(name: str) -> bool:
    return name.endswith((".py", ".pyi")) and ".dist-info/" not in name and ".data/" not in name


def read_members_lazily(fetch: RangeFetcher, url: str, wanted: Callable[[str], bool],
                        limits: Limits, wheel: str, max_gap: int = 256 * 1024,
                        raw: RangeFile | None = None, sink: Sink | None = None,
                        max_span: int = 4 << 20) -> dict[str, bytes]:
    """Members of a remote zip whose names satisfy ``wanted`` (handed to ``sink`` one by
    one instead, when given), fetched with as few range requests as possible: neighbouring
    members are read together when the gap between them is under ``max_gap`` bytes, in
    requests of at most ``max_span`` bytes where members allow (an answer is held twice
    while it is read: one 17 MB range of flashinfer 0.7.4's sources was drift's peak).
    Raises WholeFile when the server ignores Range."""
    raw = raw or RangeFile(fetch, url)
    try:
        buffered = io.BufferedReader(raw, buffer_size=CHUNK)
        check_directory(buffered, wheel)
        with zipfile.ZipFile(buffered) as zf:
            chosen = _choose(zf, wanted, limits, wheel)
            infos = sorted(zf.infolist(), key=lambda i: i.header_offset)
            starts = [i.header_offset for i in infos] + [raw.size]
            ends = {id(infos[k]): starts[k + 1] for k in range(len(infos))}
            merged: list[list[int]] = []
            for info in sorted(chosen, key=lambda i: i.header_offset):
                start, end = info.header_offset, ends[id(info)]
                if merged and start - merged[-1][1] <= max_gap and \
                        end - merged[-1][0] <= max_span:
                    merged[-1][1] = end
                else:
                    merged.append([start, end])
            for start, end in merged:
                raw.prefetch(start, end)
            return _extract(zf, chosen, limits, wheel, sink)
    except zipfile.BadZipFile as exc:  # MetadataError: the caller may download it instead
        raise MetadataError(f"{wheel}: not a valid wheel ({exc})") from None


def read_metadata_lazily(fetch: RangeFetcher, url: str, limits: Limits, wheel: str
                         ) -> dict[str, bytes]:
    """The wheel's ``*.dist-info/METADATA``: from the central directory entries in the 64 KiB
    tail (wheels write .dist-info last, so its entries close the directory) and one read of
    the member, instead of the whole directory (3.8 MB for a cubin wheel of 10,000 files).
    Anything unusual (zip64, a directory whose tail does not chain up, an encrypted or
    oddly compressed member) takes the general path over the bytes already held."""
    raw = RangeFile(fetch, url)
    try:
        found = _metadata_from_tail(raw, limits, wheel)
    except (struct.error, zlib.error, UnicodeDecodeError):
        found = None
    if found is not None:
        return found
    return read_members_lazily(fetch, url, is_metadata, limits, wheel, raw=raw)


_EOCD = struct.Struct("<4s4H2LH")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_LOCAL = struct.Struct("<4s5H3L2H")


class _Listing:
    """Central directory entries read from the tail, in the shape ``_choose`` checks."""

    def __init__(self, infos: list[zipfile.ZipInfo]) -> None:
        self._infos = infos

    def infolist(self) -> list[zipfile.ZipInfo]:
        return self._infos


def _central_entries(data: bytes, at: int, end: int) -> list[zipfile.ZipInfo] | None:
    """Entries from ``at`` that chain exactly up to ``end`` (else None: not a boundary)."""
    infos = []
    while at < end:
        if data[at:at + 4] != b"PK\x01\x02" or at + _CENTRAL.size > end:
            return None
        (_, _, _, flags, method, _, _, crc, csize, usize, nlen, elen, clen, _, _, _,
         offset) = _CENTRAL.unpack_from(data, at)
        name_bytes = data[at + _CENTRAL.size: at + _CENTRAL.size + nlen]
        info = zipfile.ZipInfo(name_bytes.decode("utf-8" if flags & 0x800 else "cp437"))
        info.orig_filename = info.filename
        info.flag_bits, info.compress_type, info.CRC = flags, method, crc
        info.compress_size, info.file_size, info.header_offset = csize, usize, offset
        infos.append(info)
        at += _CENTRAL.size + nlen + elen + clen
    return infos if at == end else None


def _metadata_from_tail(raw: RangeFile, limits: Limits, wheel: str) -> dict[str, bytes] | None:
    tail_start, tail = raw._segments[0]
    pos = tail.rfind(b"PK\x05\x06")
    if pos < 0 or pos + _EOCD.size > len(tail):
        return None
    _, disk, cd_disk, _, count, cd_size, cd_offset, comment = _EOCD.unpack_from(tail, pos)
    if (disk or cd_disk or count == 0xFFFF or 0xFFFFFFFF in (cd_size, cd_offset)
            or tail_start + pos + _EOCD.size + comment != raw.size
            or cd_offset + cd_size != tail_start + pos):
        return None  # zip64, split or prefixed archive: the general path knows those
    _entries_capped(count, wheel)
    cd_end = pos
    first = max(cd_offset - tail_start, 0)
    infos = None
    while infos is None:
        if first >= cd_end:
            return None
        at = tail.find(b"PK\x01\x02", first, cd_end)
        if at < 0:
            return None
        infos = _central_entries(tail, at, cd_end)
        first = at + 1
    chosen = _choose(cast(zipfile.ZipFile, _Listing(infos)), is_metadata, limits, wheel)
    if len(chosen) != 1 or chosen[0].flag_bits & 0x1:
        return None  # none in sight (or encrypted): read the whole directory
    info = chosen[0]
    raw.seek(info.header_offset)
    header = raw.read(_LOCAL.size)
    sig, _, _, _, _, _, _, _, _, nlen, elen = _LOCAL.unpack(header)
    if sig != b"PK\x03\x04":
        return None
    raw.seek(info.header_offset + _LOCAL.size + nlen + elen)
    stored = bytearray()
    while len(stored) < info.compress_size and (chunk := raw.read(info.compress_size
                                                                   - len(stored))):
        stored += chunk
    if info.compress_type == zipfile.ZIP_STORED:
        data = bytes(stored)
    else:
        data = zlib.decompressobj(-15).decompress(bytes(stored), info.file_size + 1)
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise WheelError(f"{wheel}: member {info.filename!r} is corrupt (size or CRC-32 "
                         "differs from the central directory)")
    return {info.filename: data}


def read_members(file: BinaryIO, wanted: Callable[[str], bool], limits: Limits, wheel: str,
                 sink: Sink | None = None) -> dict[str, bytes]:
    """Members of the wheel in ``file`` (downloaded whole) whose names satisfy ``wanted``
    (handed to ``sink`` one by one instead, when given)."""
    try:
        check_directory(file, wheel)
        with zipfile.ZipFile(file) as zf:
            return _extract(zf, _choose(zf, wanted, limits, wheel), limits, wheel, sink)
    except zipfile.BadZipFile as exc:
        raise WheelError(f"{wheel}: not a valid wheel ({exc})") from None


# -- how many members a wheel may list: zipfile builds an object per entry -----------------
MAX_ENTRIES = 50_000  # the largest cubin wheel lists about 10,000
MAX_DIRECTORY = 32 << 20  # bytes of central directory (10,000 cubin entries take 3.8 MB)
_EOCD64 = struct.Struct("<4sQ2H2L4Q")
_LOCATOR64 = struct.Struct("<4sLQL")


def _entries_capped(count: int, wheel: str) -> None:
    if count > MAX_ENTRIES:
        raise WheelError(f"{wheel}: its central directory lists {count} entries, over the "
                         f"limit of {MAX_ENTRIES}; refusing to read the wheel")


def check_directory(fp: BinaryIO, wheel: str) -> None:
    """Refuse a wheel whose central directory is over MAX_DIRECTORY bytes or lists over
    MAX_ENTRIES entries, before zipfile reads it (it builds one ZipInfo per entry: a million
    entries is hundreds of MB). The count in the end record is what the writer claims;
    zipfile reads entries until the directory's size is used up, so the entry signatures
    in the directory are counted too. An archive whose end records cannot be read is left
    to zipfile, which says what is wrong."""
    size = fp.seek(0, io.SEEK_END)
    for window in (TAIL, _EOCD.size + 0xFFFF):  # the tail already held; a long comment
        tail_len = min(size, window)
        fp.seek(size - tail_len)
        tail = fp.read(tail_len)
        pos = tail.rfind(b"PK\x05\x06")
        if pos >= 0 and pos + _EOCD.size <= len(tail):
            break
    else:
        return
    _, _, _, _, count, cd_size, _, _ = _EOCD.unpack_from(tail, pos)
    end = size - tail_len + pos  # where the directory ends (the end records follow it)
    if pos >= _LOCATOR64.size and tail[pos - _LOCATOR64.size:][:4] == b"PK\x06\x07":
        end -= _LOCATOR64.size + _EOCD64.size
        fp.seek(max(end, 0))
        record = fp.read(_EOCD64.size)
        if len(record) != _EOCD64.size or record[:4] != b"PK\x06\x06":
            return
        fields = _EOCD64.unpack(record)
        count, cd_size = fields[7], fields[8]
    if cd_size > MAX_DIRECTORY:
        raise WheelError(f"{wheel}: its central directory is {cd_size} bytes, over the limit "
                         f"of {MAX_DIRECTORY // MiB} MiB of entries; refusing to read the "
                         "wheel")
    _entries_capped(count, wheel)
    if end - cd_size >= 0:
        fp.seek(end - cd_size)
        _entries_capped(fp.read(cd_size).count(b"PK\x01\x02"), wheel)
    fp.seek(0)


# -- what a wheel may hold: the one check of member names and sizes ------------------------
@dataclass(frozen=True)
class Limits:
    """How much reading members may inflate: each member, all of them together, and per
    stored byte (a member over ``ratio_floor`` bytes that inflates more than ``ratio`` times
    is a zip bomb, not a wheel)."""

    member: int
    total: int
    ratio: int = 100
    ratio_floor: int = 1 << 20


MiB = 1 << 20
METADATA_LIMITS = Limits(member=16 * MiB, total=16 * MiB)
SOURCE_LIMITS = Limits(member=16 * MiB, total=128 * MiB)
COMPRESSIONS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}


def member_parts(wheel: str, name: str) -> tuple[str, ...]:
    """The path components of archive member ``name``, each a plain name: an absolute name,
    a drive, a backslash, ``..``, ``.``, an empty component or a control character (NUL
    included) makes the whole wheel unsafe."""
    parts = tuple(name.removesuffix("/").split("/"))
    if (name.startswith("/") or "\\" in name or re.match(r"[A-Za-z]:", name)
            or any(p in ("", ".", "..") for p in parts)
            or any(ord(c) < 32 or ord(c) == 127 for c in name)):
        raise WheelError(f"{wheel}: unsafe member name {name!r} (absolute, drive, backslash, "
                         "'..' or control character); refusing to read the wheel")
    return parts


def _choose(zf: zipfile.ZipFile, wanted: Callable[[str], bool], limits: Limits, wheel: str
            ) -> list[zipfile.ZipInfo]:
    """Check every member name of the wheel, and the sizes and compression of the wanted
    members against ``limits``, before a byte of them is read."""
    chosen, total = [], 0
    for info in zf.infolist():
        member_parts(wheel, info.orig_filename)
        if not wanted(info.filename):
            continue
        where = f"{wheel}: member {info.filename!r}"
        if info.compress_type not in COMPRESSIONS:
            raise WheelError(f"{where} uses compression method {info.compress_type}; wheels "
                             "are stored or deflated")
        size = max(info.file_size, info.compress_size)
        if size > limits.member:
            raise WheelError(f"{where} is {size} bytes, over the limit of "
                             f"{limits.member // MiB} MiB per member; refusing to read it")
        if info.file_size > limits.ratio_floor and \
                info.file_size > limits.ratio * max(1, info.compress_size):
            raise WheelError(f"{where} inflates {info.compress_size} bytes to "
                             f"{info.file_size}, over the limit of {limits.ratio}x (a zip "
                             "bomb); refusing to read it")
        total += info.file_size
        if total > limits.total:
            raise WheelError(f"{wheel}: the members to read add up to over the limit of "
                             f"{limits.total // MiB} MiB (at {info.filename!r}); refusing to "
                             "read them")
        chosen.append(info)
    return chosen


def _extract(zf: zipfile.ZipFile, chosen: list[zipfile.ZipInfo], limits: Limits, wheel: str,
             sink: Sink | None = None) -> dict[str, bytes]:
    """Inflate the chosen members chunk by chunk, stopping at the declared size and the
    limit: whatever the headers say, no more than that is ever held. With ``sink``, each
    member is handed to it as it is inflated and not kept (the result is empty)."""
    out: dict[str, bytes] = {}
    for info in chosen:
        where = f"{wheel}: member {info.filename!r}"
        cap = min(info.file_size, limits.member)
        data = bytearray()
        try:
            with zf.open(info) as fh:
                while chunk := fh.read(CHUNK):
                    data += chunk
                    if len(data) > cap:
                        raise WheelError(f"{where} inflates past its declared size or the "
                                         f"limit of {limits.member // MiB} MiB")
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise WheelError(f"{where} is corrupt ({exc})") from None
        if sink is None:
            out[info.filename] = bytes(data)
        else:
            sink(info.filename, bytes(data))
    return out
