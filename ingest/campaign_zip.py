"""A folder uploaded as a zip archive, unpacked into a temporary folder for `ingest.campaign.import_folder`.

Nothing in the archive is trusted: a member whose path would land outside the folder (absolute, `..`, a drive or
backslash path), a link, more than MAX_MEMBERS members, or more bytes once decompressed than the upload limit
(counted as written, never as the archive claims) refuses the whole archive before anything is imported.
"""

from __future__ import annotations

import io
import stat
import zipfile
from pathlib import Path, PurePosixPath

from perfledger.errors import FileTooLarge, ParseError

MAX_MEMBERS = 10_000
CHUNK_BYTES = 1 << 20


def unpack_zip(raw: bytes, file_name: str, into: Path, *, limit: int) -> Path:
    """The archive's files written under `into/NAME` (NAME: the archive's name without .zip); that folder."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile:
        raise ParseError(file_name, None, "not a zip archive") from None
    folder = into / (Path(file_name).stem or "campaign")
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) > MAX_MEMBERS:
            raise ParseError(file_name, None, f"{len(members):,} files; an archive may hold {MAX_MEMBERS:,}")
        written = 0
        for member in members:
            target = folder / _safe_relative(member, file_name)
            target.parent.mkdir(parents=True, exist_ok=True)
            written = _copy_member(archive, member, target, written, limit, file_name)
    return folder


def _safe_relative(member: zipfile.ZipInfo, file_name: str) -> Path:
    name = member.filename
    parts = PurePosixPath(name).parts
    if stat.S_ISLNK(member.external_attr >> 16):
        raise ParseError(file_name, None, f"member {name!r} is a link; an archive of plain files only")
    if not parts or name.startswith("/") or "\\" in name or ".." in parts or ":" in parts[0]:
        raise ParseError(file_name, None, f"member {name!r} would be written outside the folder")
    return Path(*parts)


def _copy_member(archive: zipfile.ZipFile, member: zipfile.ZipInfo, target: Path, written: int, limit: int,
                 file_name: str) -> int:
    with archive.open(member) as source, open(target, "wb") as sink:
        while chunk := source.read(CHUNK_BYTES):
            written += len(chunk)
            if written > limit:
                raise FileTooLarge(file_name, None, f"larger than the limit of {limit // 2**20} MiB once decompressed")
            sink.write(chunk)
    return written
