"""A run's steps on disk: every step column in Parquet files, written as the parser emits them, read back in
step order by the summary (in streaming passes) and by the store (one INSERT, or COPY).

Held in memory the steps grew with the log (32 B per step for the summary's columns alone: +110 MB at the peak of
the 1 GB Megatron log); spooled, memory does not grow with the number of steps.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import polars as pl

from perfledger.calc.phases import PHASE_COLUMNS
from perfledger.records import STEP_SCHEMA, StepFiles
from perfledger.spools import sort_parquet, spool_folder, spooling

STEP_COLUMNS = tuple(STEP_SCHEMA)
IN_MEMORY_ROWS = 100_000  # at most ~5 MB of the summary's columns
STEADY_COLUMNS = ("step", "step_time_s", "tokens", "launch", "clock_s")
REPORTED_COLUMNS = ("reported_tflops_per_device", "reported_mfu", "reported_tokens_per_s_per_device")

# The external sort's memory. The 1 GB MLPerf bench log (3.2 M steps, repeated step numbers) peaked at 293-299 MB
# with 64 MB and at 250-264 MB with 32, 0.5 s slower in 21 s (2 runs each); its 100 MB log is the same either way.


class StepSpool:
    """Step frames appended in the log's order to Parquet files in a temporary folder (removed by close())."""

    def __init__(self) -> None:
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._files: list[Path] = []
        self._sorted: Path | None = None
        self.rows = 0
        self._last_step: Any = None
        self.in_step_order = True  # never goes back (repeats allowed)
        self.increasing = True  # rises strictly
        self._reported: set[str] = set()
        self._phases = False  # whether the log prints an RLHF step's parts (then the summary reads them)

    def add(self, frame: pl.DataFrame) -> None:
        if not frame.height:
            return
        if self._folder is None:
            self._folder = spool_folder("steps")
        path = Path(self._folder.name) / f"{len(self._files):08d}.parquet"
        with spooling(Path(self._folder.name).parent):
            frame.select(STEP_COLUMNS).write_parquet(path, compression="lz4", statistics=False)
        self._files.append(path)
        self.rows += frame.height
        step = frame["step"]
        self.in_step_order = self.in_step_order and step.is_sorted() and (
            self._last_step is None or step[0] >= self._last_step)
        self.increasing = self.increasing and strictly_increasing(step, after=self._last_step)
        self._last_step = step[-1]
        self._reported.update(c for c in REPORTED_COLUMNS if frame[c].null_count() < frame.height)
        self._phases = self._phases or frame["generation_s"].null_count() < frame.height

    def ordered(self) -> tuple[Path, ...]:
        """The files in step order (repeated steps in the log's order): as written, or sorted into one file."""
        if self._sorted is not None:  # sorted by an earlier call (the summary's), which removed the files
            return (self._sorted,)
        if self.in_step_order or not self._files:
            return tuple(self._files)
        if self._sorted is None:  # sorted out of core: in memory, the 1 GB MLPerf bench log peaked at 536 MB
            assert self._folder is not None
            with spooling(Path(self._folder.name).parent):
                self._sorted = sort_parquet(self._files, "step", Path(self._folder.name) / "sorted.parquet")
            for path in self._files:
                path.unlink()
            self._files = []
        return (self._sorted,)

    def for_summary(self) -> pl.LazyFrame:
        """The columns the summary reads, in step order: a reported figure or an RLHF step's parts only where the
        log printed them."""
        files = self.ordered()
        reported = ["samples", *(c for c in REPORTED_COLUMNS if c in self._reported)]
        if self._phases:
            reported += PHASE_COLUMNS
        if not files:
            return pl.LazyFrame(schema={c: pl.Float64 for c in (*STEADY_COLUMNS, "samples")}
                                | {"step": pl.Int64, "launch": pl.Int64})
        steps = pl.scan_parquet(list(files)).select(*STEADY_COLUMNS, *reported)
        # A short run is read once and summarised in memory: the summary's dozen passes each read the files
        # again (12-15 Parquet scans, about a third of a small MLPerf result file's preparation).
        return steps.collect().lazy() if self.rows <= IN_MEMORY_ROWS else steps

    def step_files(self) -> StepFiles:
        return StepFiles(files=self.ordered(), rows=self.rows, increasing=self.increasing)

    def close(self) -> None:
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None


def strictly_increasing(values: pl.Series, *, after: Any) -> bool:
    """Whether values rise strictly, from above `after` (None: no bound); a null breaks the order."""
    if values.null_count():
        return False
    rising = values.len() < 2 or bool((values.diff(null_behavior="drop") > 0).all())
    return rising and (after is None or values[0] > after)
