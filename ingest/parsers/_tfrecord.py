"""TFRecord framing of TensorBoard event files: an 8-byte little-endian length, a masked CRC32C of those 8 bytes,
the payload, a masked CRC32C of the payload.

RecordReader reads it from the stream the pipeline hands over (the package's reader wants a path and ends quietly
at a damaged record): the first damaged record ends the file, with the record number and the reason. The length's
checksum is checked (a wrong length loses the framing: the rest of the file is counted as skipped, never guessed
at); the payload's is not, so a damaged payload shows as a record protobuf cannot read, or as a value out of range.
Where the compiled walk (ingest/native/tfrecord_scan.c) is at hand, it goes over the records it is sure of and
stores their scalars itself; every other record, and every framing problem, is read here, record by record.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterator
from typing import BinaryIO

HEADER = struct.Struct("<QI")
MAX_RECORD_BYTES = 16 * 1024 * 1024  # an Event holding one scalar step is ~100 bytes; a longer length is damage
READ_BLOCK = 1 << 20
FILE_VERSION = b"brain.Event:"
_CRC_CACHE = 4096

# (buf, at, number) -> (offset reached, records numbered, records skipped): the compiled walk, its spec bound
Walk = Callable[[bytes, int, int], tuple[int, int, int]]


def _crc_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_TABLE = _crc_table()


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC32C of `data` (tensorboard's masked_crc32c, without importing the package)."""
    crc, table = 0xFFFFFFFF, _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def is_event_file(head: bytes) -> bool:
    """Whether `head` opens with a TFRecord whose Event is the file-version record every writer puts first."""
    if len(head) < HEADER.size:
        return False
    length, crc = HEADER.unpack_from(head)
    if length > 4096 or masked_crc32c(head[:8]) != crc:
        return False
    return FILE_VERSION in head[HEADER.size:HEADER.size + length]


class RecordReader:
    """The records of one event file; `problem(number, reason)` hears of the damage that ends it."""

    def __init__(self, wanted: re.Pattern[bytes], problem: Callable[[int, str], None], walk: Walk | None) -> None:
        self.records = 0
        self.other_records = 0  # records naming no wanted tag: never decoded
        self.skipped_bytes = 0
        self._wanted, self._problem, self._walk = wanted, problem, walk
        self._crc: dict[bytes, int] = {}

    def read(self, stream: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
        """(record number from 1, payload) for each whole record that may hold a wanted tag, and (records so far,
        None) after the compiled walk went past records (their scalars stored). The first damaged record ends the
        file (its rest is read, so the content hash covers it, and counted). Read a block at a time, names bound
        locally: without the walk this loop is most of the time."""
        unpack, search, crcs, size, walk = HEADER.unpack_from, self._wanted.search, self._crc, HEADER.size, self._walk
        buf, at, eof, number, skipped = b"", 0, False, 0, 0
        try:
            while True:
                if walk is not None:
                    reached, number, walked_past = walk(buf, at, number)
                    if reached != at:
                        at, skipped = reached, skipped + walked_past
                        yield number, None
                        continue
                left = len(buf) - at
                if left < size and not eof:
                    buf, at, eof = _refill(stream, buf, at, size)
                    left = len(buf)
                if not left:
                    return
                number += 1
                if left < size:
                    self._lost(stream, number, f"cut short in its header ({left} of 12 bytes)", left)
                    return
                length, crc = unpack(buf, at)
                if crcs.get(buf[at:at + 8]) != crc and self._header_crc(buf[at:at + 8]) != crc:
                    self._lost(stream, number, "its length fails its checksum, so the records after it cannot be "
                                               "found", left)
                    return
                if length > MAX_RECORD_BYTES:
                    self._lost(stream, number, f"a record of {length:,} bytes (over {MAX_RECORD_BYTES:,})", left)
                    return
                need = size + length + 4
                if left < need and not eof:
                    buf, at, eof = _refill(stream, buf, at, need)
                    left = len(buf)
                if left < need:
                    self._lost(stream, number, f"cut short ({left - size:,} of {length + 4:,} bytes after its "
                                               "header)", left)
                    return
                start = at + size
                at += need
                if search(buf, start, start + length) is None:
                    skipped += 1
                    continue
                yield number, buf[start:start + length]
        finally:
            self.records, self.other_records = number, skipped

    def _header_crc(self, length_bytes: bytes) -> int:
        crc = self._crc.get(length_bytes)
        if crc is None:
            if len(self._crc) > _CRC_CACHE:
                self._crc.clear()
            crc = self._crc[length_bytes] = masked_crc32c(length_bytes)
        return crc

    def _lost(self, stream: BinaryIO, number: int, reason: str, read: int) -> None:
        rest = read
        while chunk := stream.read(1 << 20):
            rest += len(chunk)
        self.skipped_bytes += rest
        self._problem(number, f"event record {number}: {reason}; the last {rest:,} bytes skipped")


def _refill(stream: BinaryIO, buf: bytes, at: int, need: int) -> tuple[bytes, int, bool]:
    """buf from `at` on, with blocks read after it until it holds `need` bytes: (bytes, 0, whether the stream
    ended)."""
    chunks, have = [buf[at:]], len(buf) - at
    while have < need:
        block = stream.read(max(READ_BLOCK, need - have))
        if not block:
            return b"".join(chunks), 0, True
        chunks.append(block)
        have += len(block)
    return b"".join(chunks), 0, False
