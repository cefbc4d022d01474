"""Read members of a remote zip (a wheel's METADATA, its .py sources) with HTTP range requests.

Like pip's lazy_wheel and uv: fetch the tail (end of central directory and the directory
itself), then only the byte ranges of the members asked for.  When the server ignores Range
and sends the whole file, that body is used instead (and its sha256 is checked by the caller).
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable

from bot.errors import MetadataError

TAIL = 64 * 1024
CHUNK = 64 * 1024

# A Range header in; (status, body, Content-Range) out.
RangeFetcher = Callable[[str], tuple[int, bytes, str]]


class WholeFile(Exception):
    """The server answered a range request with the whole file (HTTP 200)."""

    def __init__(self, body: bytes) -> None:
        super().__init__("server ignores Range")
        self.body = body


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
            raise WholeFile(body)
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
        data = self._get(self._pos, end)
        self._pos = end
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
        for seg_start, seg in self._segments:
            if seg_start <= start and end <= seg_start + len(seg):
                return seg[start - seg_start: end - seg_start]
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
                        max_gap: int = 256 * 1024) -> dict[str, bytes]:
    """Members of a remote zip whose names satisfy ``wanted``, fetched with as few range
    requests as possible: neighbouring members are read together when the gap between
    them is under ``max_gap`` bytes. Raises WholeFile when the server ignores Range."""
    raw = RangeFile(fetch, url)
    try:
        with zipfile.ZipFile(io.BufferedReader(raw, buffer_size=CHUNK)) as zf:
            infos = sorted(zf.infolist(), key=lambda i: i.header_offset)
            starts = [i.header_offset for i in infos] + [raw.size]
            spans = [(infos[k].header_offset, starts[k + 1]) for k in range(len(infos))
                     if wanted(infos[k].filename)]
            merged: list[list[int]] = []
            for start, end in spans:
                if merged and start - merged[-1][1] <= max_gap:
                    merged[-1][1] = end
                else:
                    merged.append([start, end])
            for start, end in merged:
                raw.prefetch(start, end)
            return {i.filename: zf.read(i) for i in infos if wanted(i.filename)}
    except zipfile.BadZipFile as exc:
        raise MetadataError(f"{url}: not a valid wheel ({exc})") from None


def read_members(body: bytes, url: str, wanted: Callable[[str], bool]) -> dict[str, bytes]:
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as zf:
            return {n: zf.read(n) for n in zf.namelist() if wanted(n)}
    except zipfile.BadZipFile as exc:
        raise MetadataError(f"{url}: not a valid wheel ({exc})") from None
