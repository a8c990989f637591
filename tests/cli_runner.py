"""Run `python -m perfledger ...` or `python -m ingest ...` in this process, as a test sees a finished process.

`run("perfledger", "init", "--db", url)` calls the module's main(argv), the function `python -m` runs, with
stdout and stderr captured, its exit (a return value or SystemExit) as the returncode, the environment and
working directory of the call set for it alone, and returns what subprocess.run(..., capture_output=True,
text=True) would: a command is then about 0.05 s instead of 1-2.4 s of interpreter and import start-up.

What a real process would differ in is emulated, so that a test asserting on it can still fail:
- an uncaught exception is not raised into the test: its traceback is stderr and the returncode is 1, as the
  interpreter does (a test asserting "no traceback" sees one);
- stdout and stderr are file descriptors 1 and 2 (temporary files for the call), so what sys.stdout.buffer gets
  (CSV export) and what a child process the command starts prints are captured too, in order; the text is
  decoded with newlines translated as subprocess's text mode does;
- the module-level memory of "this process already did X for store Y" (PROCESS_MEMORY: the write sweep, the
  upgrade checks, the "waiting for the store" line, the compiled scanners loaded or refused under the previous
  environment's PERFLEDGER_NATIVE) is emptied before and after each call, as a new process starts without it and
  a test's later calls, in-process or not, must not inherit a command's;
- the CLI's own process tricks (perfledger.process: no pandas, os._exit) are not applied: they would end or
  change the test process;
- logging handlers a command adds (the CLI's NullHandler on sqlalchemy.pool) are removed after it.

What stays a real process (see each such test file's docstring): kills and signals, resource limits, faults
made by tests/faults.py (full disks, read-only remounts), locks held by another process (DuckDB's file lock and
the writers' queue lock are per process), concurrency between processes, and one test per entry point proving
that `python -m perfledger` and `python -m ingest` start as typed (tests/test_printed_commands.py).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent

# module -> its main(argv): what `python -m MODULE ARGS...` calls (perfledger/__main__.py calls perfledger.cli.main)
ENTRY_POINTS: dict[str, Callable[[list[str]], int]] = {
    "perfledger": lambda argv: importlib.import_module("perfledger.cli").main(argv),
    "ingest": lambda argv: importlib.import_module("ingest.__main__").main(argv),
    "ingest.worker": lambda argv: importlib.import_module("ingest.worker").main(argv),
    "perfledger.microbench": lambda argv: importlib.import_module("perfledger.microbench.run").main(argv),
}

# (module, attribute) of each set or dict a process fills as it goes and a new process starts without
PROCESS_MEMORY = (
    ("perfledger.store.engine", "_SWEPT"),
    ("perfledger.store.engine", "_CURRENT"),
    ("perfledger.store.read", "_STAMPED"),
    ("perfledger.store.upgrade", "_DATED"),
    ("perfledger.store.writers", "_told"),
    ("ingest.native", "_unavailable"),
)


def forget_process_memory() -> None:
    """Empty what a new process would not remember (PROCESS_MEMORY, and the compiled scanners loaded under the
    settings of the time: PERFLEDGER_NATIVE=0 must not stick to later calls)."""
    for module, name in PROCESS_MEMORY:
        getattr(importlib.import_module(module), name).clear()
    importlib.import_module("ingest.native")._module.cache_clear()


def run(module: str, *args: str | os.PathLike[str], env: Mapping[str, str] | None = None, stdin: str | None = None,
        cwd: str | os.PathLike[str] = ROOT, check: bool = False) -> subprocess.CompletedProcess[str]:
    """`python -m MODULE ARGS...` answered in this process; `env` is the whole environment, as subprocess.run's
    (default: this process's), `cwd` the working directory (default: the repository root); `check` raises
    CalledProcessError on a non-zero exit, as subprocess.run's."""
    argv = [os.fspath(a) for a in args]
    main = ENTRY_POINTS[module]
    output: dict[int, str] = {}
    with _environment(env), contextlib.chdir(cwd), _logging_kept(), _captured(stdin, output):
        forget_process_memory()
        try:
            code = _exit_status(main(argv))
        except SystemExit as exc:
            code = _exit_status(exc.code)
        except Exception:  # noqa: BLE001 - what the interpreter prints for an uncaught exception, and its exit status
            traceback.print_exc(file=sys.stderr)
            code = 1
        finally:
            forget_process_memory()
    done = subprocess.CompletedProcess([sys.executable, "-m", module, *argv], code, output[1], output[2])
    if check:
        done.check_returncode()
    return done


def _exit_status(code: object) -> int:
    """As the interpreter turns main()'s result or SystemExit's code into an exit status (a text is printed)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


@contextlib.contextmanager
def _captured(stdin: str | None, output: dict[int, str]) -> Iterator[None]:
    """File descriptors 0, 1 and 2 and sys.stdin/stdout/stderr on temporary files for the block, as a process
    started with pipes has them: a child the command starts (init's `python -m ingest --demo`, `runs set`'s
    `python -m ingest.corrections`) writes where the command does, in the order it does; sys.stdout has a .buffer
    (CSV export writes bytes) and is no terminal. What was written to 1 and 2 is put in `output`."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as given:
        given.write((stdin or "").encode())
        given.seek(0)
        saved_streams = sys.stdin, sys.stdout, sys.stderr
        for stream in saved_streams:
            with contextlib.suppress(ValueError, OSError):
                stream.flush()
        saved_fds = [os.dup(fd) for fd in (0, 1, 2)]
        try:
            for fd, file in ((0, given), (1, out), (2, err)):
                os.dup2(file.fileno(), fd)
            sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - closed below
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 - as Python's own: strict
            sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace",  # noqa: SIM115
                              closefd=False)
            try:
                yield
            finally:
                for stream in (sys.stdin, sys.stdout, sys.stderr):
                    with contextlib.suppress(ValueError, OSError):
                        stream.close()  # flushes what the command left in the buffers
                output[1], output[2] = _text(out), _text(err)
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            for fd, saved in zip((0, 1, 2), saved_fds, strict=True):
                os.dup2(saved, fd)
                os.close(saved)


def _text(file: IO[bytes]) -> str:
    """What subprocess.run(..., text=True) reads from a pipe: UTF-8, universal newlines."""
    file.seek(0)
    return io.TextIOWrapper(io.BytesIO(file.read()), encoding="utf-8").read()


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    saved = dict(os.environ)
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _logging_kept() -> Iterator[None]:
    loggers = [logging.getLogger(), *(v for v in logging.Logger.manager.loggerDict.values()
                                      if isinstance(v, logging.Logger))]
    handlers = {id(lg): list(lg.handlers) for lg in loggers}
    try:
        yield
    finally:
        for lg in [logging.getLogger(), *(v for v in logging.Logger.manager.loggerDict.values()
                                          if isinstance(v, logging.Logger))]:
            lg.handlers[:] = handlers.get(id(lg), [])
