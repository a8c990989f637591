"""Process-level tricks for the command-line entry points (`python -m perfledger`, `python -m ingest`) only.

Both trade generality for start-up and exit time of short-lived processes, so the dashboard never calls them:
it needs pandas (Streamlit imports it) and a normal interpreter exit.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn


def lean_process() -> None:
    """Make `import pandas` fail, so DuckDB's client never loads it.

    duckdb's Python client imports pandas, when installed, at the first query that has parameters (to
    recognise DataFrame arguments): 0.25 s and about 90 MB of resident memory that no CLI command uses.
    """
    sys.modules.setdefault("pandas", None)  # type: ignore[arg-type]


def exit_process(code: int) -> NoReturn:
    """Exit without Python's teardown of every module and object.

    With polars, duckdb, sqlalchemy and numpy loaded that teardown took 0.2-0.3 s, a fifth of a tiny log's
    ingest, after all work was done. By now every store connection is closed (NullPool) and every temporary
    file removed; atexit handlers still run and output is flushed before the process ends. Under a profiler
    or tracer (python -m cProfile, coverage) the process exits as usual, so that it can write its report.
    """
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
