"""A browser upload on disk: the file copied to a folder in chunks (the server never holds a second whole copy), its
content hash read before any parse (a file already stored is recognised without its worker), and the removal of
folders whose browser session has ended.

Folders are named `perfledger-upload-<server PID>-<session id>-<random>` in the temporary directory: a later
process removes those of a server gone (perfledger.store.leftovers), the server those of its sessions gone.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ingest.streams import GZIP_MAGIC, Limited, open_content, too_large
from perfledger.errors import FileTooLarge, ParseError
from perfledger.spools import spooling

FOLDER_PREFIX = "perfledger-upload-"
CHUNK_BYTES = 1 << 20
_OWNER = re.compile(r"[^A-Za-z0-9-]+")


def upload_folder(owner: str = "") -> Path:
    """A new folder for one upload (or one worker's job on it), named after this process and its `owner` (the
    browser session's id; "" = none)."""
    return Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-{_OWNER.sub('', owner)}-"))


def job_folder(source: Path | bytes, owner: str, files: dict[str, str]) -> Path:
    """A new upload folder holding `source` as `upload` (a path linked, else copied; or bytes) and `files` (name ->
    text); removed again when any of it cannot be written."""
    folder = upload_folder(owner)
    try:
        if isinstance(source, bytes):
            (folder / "upload").write_bytes(source)
        else:
            try:
                os.link(source, folder / "upload")
            except OSError:
                shutil.copyfile(source, folder / "upload")
        for name, text in files.items():
            (folder / name).write_text(text)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


def folder_owner(folder: Path, pid: int | None = None) -> str | None:
    """The owner in the name of one of this process's (`pid`'s) upload folders; None for any other folder."""
    head = f"{FOLDER_PREFIX}{os.getpid() if pid is None else pid}-"
    if not folder.name.startswith(head):
        return None
    return folder.name[len(head):].rpartition("-")[0]


@dataclass(frozen=True, slots=True)
class Spooled:
    """An uploaded file on disk: `path` (FOLDER/upload), the hash of its bytes as uploaded, and the hash of its
    content once decompressed (what a run is stored under)."""

    path: Path
    file_name: str
    size: int
    raw_sha256: str
    content_sha256: str

    @property
    def folder(self) -> Path:
        return self.path.parent

    def head(self, n: int) -> bytes:
        with self.path.open("rb") as f:
            return f.read(n)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def most_raw_bytes(limit: int, *, gzip: bool = True) -> int:
    """The most bytes a file within `limit` (counted after gunzip) can have as sent: the limit, or a little more
    for a gzip file (its header and the blocks of incompressible data it stores as they are)."""
    return limit + limit // 100 + CHUNK_BYTES if gzip else limit


class Spooling:
    """An upload being written to a new folder chunk by chunk (a file object's reads, or a browser's request body as
    it arrives) and hashed on the way; `finish` gives the Spooled file, `abort` removes the folder. FileTooLarge
    (the folder removed) as soon as more raw bytes arrive than `limit` allows, and at `finish` when a gzip file's
    content is larger than `limit`, counted after gunzip as `python -m ingest` counts it."""

    def __init__(self, file_name: str, limit: int | None, owner: str = "") -> None:
        self.file_name, self.limit, self.size = file_name, limit, 0
        self._sha, self._head = hashlib.sha256(), b""
        with spooling(Path(tempfile.gettempdir())):  # a full disk under the folder is said as such
            self.folder = upload_folder(owner)
            self.path = self.folder / "upload"
            self._out: BinaryIO | None = self.path.open("wb")

    @property
    def raw_ceiling(self) -> int | None:
        if self.limit is None:
            return None
        return most_raw_bytes(self.limit, gzip=self._head[:2] == GZIP_MAGIC)

    def write(self, chunk: bytes) -> None:
        if self._out is None:
            raise ValueError("the upload is already finished")
        if len(self._head) < 2:
            self._head += chunk[:2]
        self._sha.update(chunk)
        try:
            with spooling(Path(tempfile.gettempdir())):
                self._out.write(chunk)
        except BaseException:
            self.abort()
            raise
        self.size += len(chunk)
        ceiling = self.raw_ceiling
        if ceiling is not None and self.size > ceiling:
            self.abort()
            raise FileTooLarge(self.file_name, None, too_large(self.limit or 0))

    def finish(self) -> Spooled:
        try:
            with spooling(Path(tempfile.gettempdir())):
                if self._out is not None:
                    self._out.close()
            self._out = None
            raw_sha = self._sha.hexdigest()
            content_sha = raw_sha if not _gzip(self.path) else content_sha256(self.path, self.file_name, self.limit)
        except BaseException:
            self.abort()
            raise
        return Spooled(self.path, self.file_name, self.size, raw_sha, content_sha)

    def abort(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None
        shutil.rmtree(self.folder, ignore_errors=True)


def spool(source: BinaryIO, file_name: str, limit: int | None, owner: str = "") -> Spooled:
    """Copy `source` to a new upload folder in chunks and hash it (Spooling)."""
    writer = Spooling(file_name, limit, owner)
    try:
        while chunk := source.read(CHUNK_BYTES):
            writer.write(chunk)
    except BaseException:
        writer.abort()
        raise
    return writer.finish()


def _gzip(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(2) == GZIP_MAGIC


def content_sha256(path: Path, file_name: str, limit: int | None) -> str:
    """The hash of a gzip file's decompressed content, read without parsing (FileTooLarge past `limit`)."""
    try:
        with path.open("rb") as raw:
            limited = Limited(open_content(raw, file_name), file_name, limit)
            while limited.read(CHUNK_BYTES):
                pass
    except (OSError, EOFError) as exc:
        raise ParseError(file_name, None, f"could not be decompressed: {exc}") from None
    return limited.sha.hexdigest()


def remove_abandoned(alive: Callable[[str], bool], parent: Path | None = None) -> list[Path]:
    """Remove this process's upload folders whose owner session is no longer `alive` (folders with no owner stay:
    their caller removes them)."""
    parent = Path(parent or tempfile.gettempdir())
    try:
        entries = list(parent.iterdir())
    except OSError:
        return []
    gone = [p for p in entries if (owner := folder_owner(p)) and p.is_dir() and not alive(owner)]
    for path in gone:
        shutil.rmtree(path, ignore_errors=True)
    return gone
