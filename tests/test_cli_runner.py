"""tests/cli_runner.run answers as the process would: an uncaught exception is a traceback on stderr with exit 1,
a child the command starts prints into the captured output in order, the environment and working directory are
the call's alone, and the memory a process keeps per store is not inherited by the next call."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from perfledger import cli
from perfledger.store import engine as store_engine
from tests.cli_runner import run


def test_an_uncaught_exception_is_a_traceback_on_stderr_and_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(args: object) -> int:
        raise RuntimeError("a bug in calc")

    monkeypatch.setattr(cli, "cmd_calc", broken)
    done = run("perfledger", "calc", "speedup", "candidate=6", "baseline=3")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("Traceback (most recent call last):")
    assert done.stderr.rstrip().endswith("RuntimeError: a bug in calc")


def test_a_usage_error_exits_2_with_argparse_s_lines_on_stderr() -> None:
    done = run("ingest", "--no-such-option")
    assert done.returncode == 2 and done.stdout == ""
    assert "python -m ingest: error: unrecognized arguments: --no-such-option" in done.stderr


def test_a_child_process_prints_after_what_the_command_printed_before_it(tmp_path: Path) -> None:
    """`perfledger init` flushes its line, then `python -m ingest --demo` (a child, writing to file descriptor 1)
    prints its own: both are the command's stdout, in that order, as in a terminal."""
    done = run("perfledger", "init", "--db", f"duckdb:///{tmp_path / 'demo.duckdb'}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "initialised; added" in lines[0] and "demo runs from" in lines[-1]


def test_the_environment_and_working_directory_are_the_call_s_alone(tmp_path: Path) -> None:
    before = dict(os.environ), Path.cwd(), sys.stdout
    data = tmp_path / "nowhere"
    done = run("ingest", "--demo", "--db", f"duckdb:///{tmp_path / 's.duckdb'}", cwd=tmp_path,
               env=os.environ | {"PERFLEDGER_DATA_DIR": str(data), "PERFLEDGER_MAX_UPLOAD_MB": "x"})
    assert done.returncode == 1 and "PERFLEDGER_MAX_UPLOAD_MB should be an integer" in done.stderr
    assert (dict(os.environ), Path.cwd(), sys.stdout) == before


def test_a_store_written_by_one_call_is_swept_again_by_the_next(tmp_path: Path) -> None:
    url = f"duckdb:///{tmp_path / 's.duckdb'}"
    store_engine._SWEPT.add(url)  # as if this process had written to it already
    assert run("perfledger", "calc", "speedup", "candidate=6", "baseline=3", "--db", url).returncode == 0
    assert url not in store_engine._SWEPT
