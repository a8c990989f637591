"""A folder uploaded as a zip archive, unpacked into a temporary folder for `ingest.campaign.import_folder`.

Nothing in the archive is trusted: a member whose path would land outside the folder (absolute, `..`, a drive or
backslash path), a link, a name longer than a file system keeps (NAME_BYTES a part, PATH_BYTES in all) or nested
deeper than MAX_DEPTH folders, more than MAX_MEMBERS members, or more bytes once decompressed than the upload limit
(counted as written, never as the archive claims) refuses the whole archive, in one sentence, before anything is
imported. The folder it unpacks into is named by perfledger (folder_name), never taken as the archive calls itself.
"""

from __future__ import annotations

import io
import re
import stat
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from perfledger.errors import FileTooLarge, ParseError, SpoolFull, is_disk_full

MAX_MEMBERS = 10_000
MAX_DEPTH = 32  # folders; an MLPerf round nests about 8 (round/submitter/results/system/benchmark/result_0.txt)
NAME_BYTES = 255  # one part of a path, as Linux file systems keep it (NAME_MAX)
PATH_BYTES = 1024  # a member's whole path, well under PATH_MAX (4096) with the temporary folder before it
MAX_FOLDER_CHARS = 100
CHUNK_BYTES = 1 << 20
_NOT_IN_FOLDER_NAME = re.compile(r"[^\w .()+,=@-]+")
_ZIP_SUFFIX = re.compile(r"\.zip$", re.IGNORECASE)
_UNREADABLE = (zipfile.BadZipFile, RuntimeError, NotImplementedError, EOFError, zlib.error)


def folder_name(file_name: str) -> str:
    """The folder an archive unpacks into, and the campaign's name: its file name without .zip, in letters, digits
    and a few marks, without leading or trailing dots; "campaign" when nothing is left (`...zip` gave `..`).

    >>> folder_name("sweep.zip"), folder_name("...zip"), folder_name("../a b:c.ZIP")
    ('sweep', 'campaign', 'a b_c')
    """
    stem = _ZIP_SUFFIX.sub("", PurePosixPath(file_name.replace("\\", "/")).name)
    return _NOT_IN_FOLDER_NAME.sub("_", stem).strip(" ._")[:MAX_FOLDER_CHARS].strip(" ._") or "campaign"


def unpack_zip(raw: bytes, file_name: str, into: Path, *, limit: int) -> Path:
    """The archive's files written under `into/NAME` (NAME: folder_name(file_name)); that folder."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile:
        raise ParseError(file_name, None, "not a zip archive") from None
    folder = into / folder_name(file_name)
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) > MAX_MEMBERS:
            raise ParseError(file_name, None, f"{len(members):,} files; an archive may hold {MAX_MEMBERS:,}")
        targets = [(member, folder / _safe_relative(member, file_name)) for member in members]
        written = 0
        for member, target in targets:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                written = _copy_member(archive, member, target, written, limit, file_name)
            except OSError as exc:
                if is_disk_full(exc):
                    raise SpoolFull(str(into)) from exc
                raise ParseError(file_name, None, f"member {_quoted(member.filename)} cannot be written here: "
                                                  f"{exc.strerror or exc}") from None
            except _UNREADABLE as exc:  # damaged, encrypted, or packed by a method Python does not read
                raise ParseError(file_name, None, f"member {_quoted(member.filename)} cannot be read: {exc}") from None
    return folder


def _safe_relative(member: zipfile.ZipInfo, file_name: str) -> Path:
    name = member.filename
    parts = PurePosixPath(name).parts
    if stat.S_ISLNK(member.external_attr >> 16):
        raise ParseError(file_name, None, f"member {_quoted(name)} is a link; an archive of plain files only")
    if not parts or name.startswith("/") or "\\" in name or ".." in parts or ":" in parts[0]:
        raise ParseError(file_name, None, f"member {_quoted(name)} would be written outside the folder")
    if len(parts) - 1 > MAX_DEPTH:
        raise ParseError(file_name, None, f"member {_quoted(name)} is {len(parts) - 1:,} folders deep; an archive "
                                          f"may nest {MAX_DEPTH} folders")
    longest = max(len(part.encode()) for part in parts)
    if longest > NAME_BYTES or len(name.encode()) > PATH_BYTES:
        raise ParseError(file_name, None, f"member {_quoted(name)} has a name of {max(longest, len(name.encode())):,} "
                                          f"bytes; a file or folder name may have {NAME_BYTES}, a whole path "
                                          f"{PATH_BYTES:,}")
    return Path(*parts)


def _quoted(name: str) -> str:
    """A member's name, quoted, its middle cut when it is long (a refusal is one sentence, not 4,000 characters)."""
    return repr(name if len(name) <= 80 else f"{name[:50]}…{name[-20:]}")


def _copy_member(archive: zipfile.ZipFile, member: zipfile.ZipInfo, target: Path, written: int, limit: int,
                 file_name: str) -> int:
    with archive.open(member) as source, open(target, "wb") as sink:
        while chunk := source.read(CHUNK_BYTES):
            written += len(chunk)
            if written > limit:
                raise FileTooLarge(file_name, None, f"larger than the limit of {limit // 2**20} MiB once decompressed")
            sink.write(chunk)
    return written
