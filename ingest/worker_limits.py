"""What bounds an upload's worker process (ingest.worker), and what it is said to have met when it ends early.

The child sets its own limits: its address space (RLIMIT_AS), the size of any file it writes (RLIMIT_FSIZE, a soft
limit that perfledger.store.engine.files_uncapped lifts while the store's own file is written), no core file, and
an alarm shortly after its time limit (the parent kills it at the limit; the alarm ends an orphan). When it ends
early, the parent says which of them it met, or the signal that ended it:

    time       the parent's kill at the limit, or the child's own SIGALRM
    file size  SIGXFSZ: a file grew past `file_mb`
    memory     a MemoryError (or a module that could not be mapped) said by the child; a crash before its modules
               loaded; a crash after a native library said it could not allocate
    signal     any other: a crash (SIGSEGV, SIGABRT...) or a kill from outside (SIGKILL: another process, or the
               system's out-of-memory killer)
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import resource
import signal
from pathlib import Path

from perfledger.errors import PerfledgerError
from perfledger.settings import load_settings

ALARM_GRACE_S = 5  # the child's own deadline, past the parent's: it ends an orphaned child, never a watched one
LOADED = "loaded"  # the file a child writes into its folder once its modules are loaded
CRASHES = (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE)
# What a native library prints when the address-space limit refuses it memory, before it aborts (Rust, as in
# Polars; C++; glibc; CPython)
_ALLOCATION_FAILED = re.compile(r"memory allocation of \d+ bytes failed|std::bad_alloc|Cannot allocate memory"
                                r"|[Oo]ut of memory|MemoryError|failed to map segment")


class IngestStopped(PerfledgerError):
    """The worker hit a limit (time, memory, file size), was killed, or ended without a word; nothing was stored."""


@dataclasses.dataclass(frozen=True, slots=True)
class Limits:
    timeout_s: float
    memory_mb: int
    file_mb: int = dataclasses.field(default_factory=lambda: load_settings().ingest_file_mb)

    def args(self) -> list[str]:
        """The limits as the worker's command line takes them."""
        return ["--timeout-s", str(self.timeout_s), "--memory-mb", str(self.memory_mb), "--file-mb", str(self.file_mb)]


def limit_self(limits: Limits) -> None:
    """In the child: its limits, set on itself before any work."""
    size = limits.memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (size, size))
    # A soft limit only, so that the store's own file can be written with it lifted. Past it the kernel ends the
    # process (SIGXFSZ), whichever library was writing: a recursive SQLite view's sort filled a 512 MB $TMPDIR in 3 s.
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb * 2**20, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # Python ignores it (a write would fail with EFBIG, in any library)
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))  # no core file
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the kernel ends the process, even inside a long regex
    signal.alarm(int(limits.timeout_s) + ALARM_GRACE_S)


def out_of_memory(exc: BaseException) -> bool:
    """Whether the address-space limit ended the work: Python's own allocations raise MemoryError, but a module
    loaded late (the parsers' and the store's imports happen here) fails in the loader, as an ImportError saying
    "failed to map segment", and an mmap as OSError ENOMEM."""
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
        return True
    return isinstance(exc, ImportError) and "failed to map segment" in str(exc)


def address_space_mb() -> int:
    """This process's mapped address space (VmSize), which RLIMIT_AS caps; 0 where /proc does not say."""
    try:
        fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
        return int(fields["VmSize"].split()[0]) // 1024
    except (OSError, KeyError, ValueError):
        return 0


def timed_out(limits: Limits, verb: str) -> IngestStopped:
    return IngestStopped(f"the upload took longer than {limits.timeout_s:g} s to {verb} and was stopped; nothing "
                         "was stored")


def stopped(code: int | None, verb: str, limits: Limits, folder: Path, *, said_memory: bool) -> IngestStopped | None:
    """What ended a child that exited with `code` (negative: the signal) early, or None when no limit or signal did;
    `said_memory`: the child said it ran out of memory."""
    if code == -signal.SIGXFSZ:
        return IngestStopped(f"the upload's worker was stopped writing a file larger than {limits.file_mb} MB (an "
                             "unpacked file or a spool of its steps); raise PERFLEDGER_INGEST_FILE_MB; nothing was "
                             "stored")
    if said_memory or _crashed_for_memory(code, folder):
        return IngestStopped(memory_sentence(limits, verb, started=(folder / LOADED).exists()))
    if code is not None and code < 0:
        return IngestStopped(_signal_sentence(-code, verb, folder))
    return None


def memory_sentence(limits: Limits, verb: str, *, started: bool) -> str:
    """The memory limit, said as such: a native library that cannot allocate under the address-space limit
    ends its process (SIGSEGV, SIGABRT) or fails to load (an ImportError, "failed to map segment"), which are
    no faults of the log or of the store."""
    mb = limits.memory_mb
    if not started:
        return (f"the upload's worker needs more than {mb} MB of memory to start, whatever the log; raise "
                "PERFLEDGER_INGEST_MEMORY_MB (about 1024 MB or more); nothing was stored")
    return f"the log needs more than {mb} MB of memory to {verb}; raise PERFLEDGER_INGEST_MEMORY_MB; nothing was stored"


def _crashed_for_memory(code: int | None, folder: Path) -> bool:
    """A crash that is the memory limit: before the child loaded its modules (nothing of the log read yet), or
    after a native library said that it could not allocate."""
    if code not in (-signal.SIGABRT, -signal.SIGSEGV, -signal.SIGBUS):
        return False
    return not (folder / LOADED).exists() or _ALLOCATION_FAILED.search(tail(folder / "stderr.log")) is not None


def _signal_sentence(number: int, verb: str, folder: Path) -> str:
    try:
        name = f"signal {signal.Signals(number).name}"
    except ValueError:
        name = f"signal {number}"
    if number in CRASHES:
        return (f"the upload's worker crashed ({name}) trying to {verb} it, a fault in a library it uses "
                f"({last_line(folder / 'stderr.log')}); nothing was stored")
    return (f"the upload's worker was killed ({name}) before it could {verb} it, by another process or by the system "
            "(its out-of-memory killer sends SIGKILL); nothing was stored")


def tail(path: Path, size: int = 1 << 16) -> str:
    """The last `size` bytes of a file, as text; "" when it cannot be read."""
    try:
        with path.open("rb") as f:
            f.seek(max(f.seek(0, os.SEEK_END) - size, 0))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def last_line(path: Path) -> str:
    lines = tail(path).strip().splitlines()
    return lines[-1][:300] if lines else "no output"
