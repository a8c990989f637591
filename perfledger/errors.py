"""Errors a user caused or can fix; ``str(exc)`` is written for them.

* PerfledgerError
  * ParseError          a file could not be read (file_name, line, reason)
    * UnknownFormat     no parser recognises the content
    * NoKnownNames      a file read through the key vocabulary holds no step it knows the names of
    * FileTooLarge      the upload limit, measured after gunzip
  * DataFileError       a curated CSV under data/ is malformed (file, line, reason)
  * ReadOnlyData        a data file is not written: writes are switched off (PERFLEDGER_READ_ONLY)
  * UnknownId           an accelerator or model name that resolves to nothing (lists the nearest ids)
  * InvalidInput        a value outside a calculation's domain, or a missing argument
  * InvalidSetting      an environment value that does not fit its setting
  * InvalidQuery        a URL query value a page cannot use
  * StoreError          the database refused or could not be reached
    * StoreBusy         another process holds DuckDB's write lock
    * ReadOnlyStore     writes are switched off (PERFLEDGER_READ_ONLY)
    * DiskFull          the disk holding the store has no space left
      * SpoolFull       the disk holding a temporary spool (a run's steps, a copy's frames) has no space left
"""

from __future__ import annotations

import errno
import re
from collections.abc import Sequence


class PerfledgerError(Exception):
    """Base of every error meant for a person to read."""


class ParseError(PerfledgerError):
    def __init__(self, file_name: str, line: int | None, reason: str) -> None:
        self.file_name = file_name
        self.line = line
        self.reason = reason
        where = f"{file_name}:{line}" if line is not None else file_name
        super().__init__(f"{where}: {reason}")


class UnknownFormat(ParseError):
    pass


class NoKnownNames(ParseError):
    pass


class FileTooLarge(ParseError):
    pass


class DataFileError(PerfledgerError):
    def __init__(self, file_name: str, line: int | None, reason: str) -> None:
        self.file_name = file_name
        self.line = line
        self.reason = reason
        where = f"{file_name}:{line}" if line is not None else file_name
        super().__init__(f"{where}: {reason}")


class ReadOnlyData(PerfledgerError):
    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"{path} is read-only here (PERFLEDGER_READ_ONLY=1): writes are off, data files included; "
                         "nothing was written")


class UnknownId(PerfledgerError):
    def __init__(self, kind: str, name: str, nearest: Sequence[str]) -> None:
        self.kind = kind
        self.name = name
        self.nearest = tuple(nearest)
        hint = f"; nearest: {', '.join(self.nearest)}" if self.nearest else ""
        super().__init__(f"unknown {kind} {name!r}{hint}")


class InvalidInput(PerfledgerError):
    pass


class UploadRefused(PerfledgerError):
    """An upload the server did not keep (too large, interrupted, a full disk, a box gone stale): its sentence."""


class InvalidSetting(PerfledgerError):
    pass


class InvalidQuery(PerfledgerError):
    pass


class StoreError(PerfledgerError):
    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = reason
        super().__init__(f"the store {url} refused the request: {reason}")


class StoreNotInitialised(StoreError):
    """A table the request needs does not exist: the store was never initialised."""


class StoreBusy(StoreError):
    def __init__(self, url: str, holder: str = "another process") -> None:
        self.url = url
        self.holder = holder
        self.reason = f"held by {holder}"
        Exception.__init__(
            self,
            f"the store is busy, held by {holder} ({url}); an ingest may be running: try again in a few seconds",
        )


class ReadOnlyStore(StoreError):
    def __init__(self, url: str) -> None:
        self.url = url
        self.reason = "read-only"
        Exception.__init__(self, f"the store {url} is read-only here (PERFLEDGER_READ_ONLY=1); writes are off")


class DiskFull(StoreError):
    def __init__(self, url: str, where: str, *, server_stopped: bool = False) -> None:
        self.url = url
        self.where = where
        self.server_stopped = server_stopped
        self.reason = f"the disk holding {where} is full"
        then = ("the database server stopped; free some space there, start the server again and try again"
                if server_stopped else "free some space there and try again")
        Exception.__init__(self, f"the store {url} could not be written: the disk holding {where} is full; {then} "
                                 "(nothing was stored)")


class SpoolFull(DiskFull):
    def __init__(self, folder: str) -> None:
        self.url = folder
        self.where = folder
        self.reason = f"the disk holding {folder} is full"
        Exception.__init__(self, f"the temporary spool in {folder} could not be written: the disk holding it is full; "
                                 "free some space there or set TMPDIR to a larger disk, and try again (nothing was "
                                 "stored)")


# How a full disk reads: the OS's ENOSPC, DuckDB's "Out of Memory Error: failed to offload data block" (its
# temporary files could not grow), PostgreSQL's "could not extend file", Polars' "parquet: ... No space left".
_DISK_FULL = re.compile(r"No space left on device|failed to offload data block|could not extend file",
                        re.IGNORECASE)


def is_disk_full(exc: BaseException) -> bool:
    """Whether a driver's, Polars' or the OS's exception says a disk is full."""
    return (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or _DISK_FULL.search(str(exc)) is not None
