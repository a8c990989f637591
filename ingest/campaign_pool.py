"""A folder's logs read in a pool of worker processes, one per core, each log prepared whole by one worker
(ingest.campaign_logs.read_log) and handed back in the folder's order.

Parsing is Python and Polars work under the GIL: threads did not read two logs at once, processes do. A worker
needs no store (the catalog comes with it, read once) and keeps a run's step files in the importing process's spool
folder, which outlives the worker and is named after the importing process (perfledger.store.leftovers then leaves
it alone while that process runs). A folder of a few logs is read in this process: starting a worker costs more.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ingest.campaign_logs import LogJob, LogRead, read_log
from ingest.known import KnownRows

MIN_LOGS_PER_WORKER = 24  # a worker starts in about 0.5-1 s (imports); below this many logs each, no pool
MAX_WORKERS = 8
CHUNK_LOGS = 4  # logs handed to a worker at a time

Tick = Callable[[LogRead, LogJob], None]


def pool_size(logs: int, cores: int | None = None) -> int:
    """How many worker processes read `logs` logs: one per usable core, none (0) when too few logs to share."""
    cores = cores or len(os.sched_getaffinity(0))
    workers = min(cores, MAX_WORKERS, logs // MIN_LOGS_PER_WORKER)
    return workers if workers > 1 else 0


def read_logs(jobs: Sequence[LogJob], known: KnownRows | None, keep_in: Path, tick: Tick | None = None,
              workers: int | None = None) -> Iterator[LogRead]:
    """Each job's LogRead, in the jobs' order; runs' step files kept under `keep_in` (the caller removes it)."""
    workers = pool_size(len(jobs)) if workers is None else workers
    if not workers:
        for job in jobs:
            read = read_log(job, known)
            if tick is not None:
                tick(read, job)
            yield read
        return
    context = multiprocessing.get_context("spawn")  # a clean interpreter: no inherited DuckDB or Polars threads
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker,
                             initargs=(known, keep_in, tempfile.gettempdir())) as pool:
        for job, read in zip(jobs, pool.map(_read_in_worker, jobs, chunksize=CHUNK_LOGS), strict=True):
            if tick is not None:
                tick(read, job)
            yield read


_WORKER: dict[str, object] = {}


def _start_worker(known: KnownRows | None, keep_in: Path, temp: str) -> None:
    tempfile.tempdir = temp  # the importing process's (an upload worker's job folder)
    _WORKER["known"], _WORKER["keep_in"] = known, keep_in


def _read_in_worker(job: LogJob) -> LogRead:
    known = _WORKER["known"]
    keep_in = _WORKER["keep_in"]
    assert known is None or isinstance(known, KnownRows)
    assert isinstance(keep_in, Path)
    return read_log(job, known, keep_in)
