"""One log of a campaign folder read into an attempt: prepared as a run (one pass: parse, hash, how the job ended,
MLPerf submission keys), or kept as a failure with its reason, or refused as `FILE:LINE: reason`.

Runs in the pool's worker processes (ingest.campaign_pool) as well as in the importing process; it touches no store:
the catalog rows come from the one read of the store's catalog (ingest.known.KnownRows).
"""

from __future__ import annotations

import contextlib
import math
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl

from ingest import campaign_files as files
from ingest.hints import Hints
from ingest.known import KnownRows
from ingest.pipeline import prepare
from ingest.streams import open_regular
from perfledger.campaigns import Attempt
from perfledger.errors import FileTooLarge, ParseError, PerfledgerError
from perfledger.records import PreparedRun, StepFiles
from perfledger.vocabulary import LogFormat, OutcomeKind

# What makes two runs repeats of one another (an MLPerf result's submitter, system and benchmark are added to it)
CONFIGURATION_KEYS = ("model", "accelerator", "n_devices", "precision", "seq_len", "global_batch", "micro_batch",
                      "tp", "pp", "dp", "cp", "ep", "framework")
HEADLINE_METRICS = ("time_to_train_s", "tokens_per_s_per_device", "samples_per_s", "step_time_s")
_NAN_LOSS = re.compile(r"loss nan|nan loss", re.IGNORECASE)
# An MLPerf result file's submission keys, as the attempt's configuration names them
IDENTITY_KEYS = {"submission_org": "submitter", "submission_platform": "system", "submission_benchmark": "benchmark"}


@dataclass(frozen=True, slots=True)
class LogJob:
    """A log to read: where it is, its name as shown, the hints its folder gives it, the size limit."""

    path: Path
    shown: str
    hints: Hints
    limit: int | None


@dataclass(frozen=True, slots=True)
class LogRead:
    """What reading one log gave: an attempt (with its digest for the campaign's hash), or a refusal."""

    shown: str
    attempt: Attempt | None = None
    digest: str | None = None  # "NAME:SHA256" of the decompressed bytes
    refusal: str | None = None  # FILE:LINE: reason


def read_log(job: LogJob, known: KnownRows | None, keep_in: Path | None = None) -> LogRead:
    """The log as an attempt, a failure with no steps, or a refusal. With `keep_in` (a worker process), the run's
    step files are moved into a folder of their own under it, which the returned run's close() removes: the
    worker's own spool goes with the worker."""
    try:
        attempt, digest = _log_attempt(job, known)
    except (PerfledgerError, OSError) as exc:
        ended = _ended_before_steps(job, exc)
        return LogRead(job.shown, refusal=refusal(job.shown, exc)) if ended is None else LogRead(job.shown, ended)
    if keep_in is not None and attempt.prepared is not None:
        attempt = replace(attempt, prepared=_kept(attempt.prepared, keep_in))
    return LogRead(job.shown, attempt, digest)


def refusal(shown: str, exc: BaseException) -> str:
    """FILE:LINE: reason (FILE: reason when the whole file is refused, as every refusal of `python -m ingest`)."""
    if isinstance(exc, ParseError):
        return str(ParseError(shown, exc.line, exc.reason))
    if isinstance(exc, OSError):
        return f"{shown}: cannot be read: {exc.strerror}"
    return f"{shown}: {exc}"


def _kept(prepared: PreparedRun, keep_in: Path) -> PreparedRun:
    folder = Path(tempfile.mkdtemp(prefix="run-", dir=keep_in))
    moved = []
    for path in prepared.steps.files:
        moved.append(folder / path.name)
        path.rename(moved[-1])
    prepared.close()  # the spool's own folder, now empty
    return replace(prepared, steps=StepFiles(tuple(moved), prepared.steps.rows, prepared.steps.increasing),
                   release=partial(remove_kept, folder))


def remove_kept(folder: Path) -> None:
    """A run's kept step files, and the spool folder holding them once it holds nothing else."""
    shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):
        folder.parent.rmdir()


def _log_attempt(job: LogJob, known: KnownRows | None) -> tuple[Attempt, str]:
    scanning = files.ContentScan()  # rides along the parse: the log is read once
    with open_regular(job.path, job.shown) as handle:
        prepared = prepare(handle, job.shown, job.hints, engine=known, limit=job.limit, watch=scanning.feed)
    try:
        scan = scanning.finish()
        if prepared.format is LogFormat.CLAIMS_CSV:
            raise ParseError(job.shown, None,
                             "a claims file, not a run: import it on its own (python -m ingest FILE)")
        kind, reason, line = _outcome_of(prepared, scan)
        metric, value, unit = _headline(prepared)
        configuration = _configuration(prepared.config) | identity(scan.submission, prepared.format)
        return Attempt(file_name=job.shown, kind=kind, reason=reason, line=line, configuration=configuration,
                       metric=metric, value=value, unit=unit, prepared=prepared), f"{job.shown}:{scan.sha256}"
    except BaseException:
        prepared.close()
        raise


def identity(submission: Mapping[str, str], fmt: LogFormat | None = LogFormat.MLPERF) -> dict[str, str]:
    """An MLPerf result file's submitter, system and benchmark, as its submission keys state them."""
    if fmt is not LogFormat.MLPERF and "submission_benchmark" not in submission:
        return {}
    return {name: submission[key] for key, name in IDENTITY_KEYS.items() if submission.get(key)}


def _ended_before_steps(job: LogJob, exc: BaseException) -> Attempt | None:
    """A file no parser reads that says how its job ended (out of memory, killed, cancelled): a failed attempt with
    no steps, kept as an outcome; None for any other unreadable file."""
    if not isinstance(exc, ParseError) or isinstance(exc, FileTooLarge):
        return None
    try:
        scan = files.scan_file(job.path, job.shown, job.limit)
    except (PerfledgerError, OSError):
        return None
    if scan.ending is None:
        return None
    return Attempt(file_name=job.shown, kind=scan.ending.kind, line=scan.ending.line,
                   reason=f"{scan.ending.text} (no step logged)", configuration={})


def _outcome_of(prepared: PreparedRun, scan: files.FileScan) -> tuple[OutcomeKind, str | None, int | None]:
    """How the run ended: the log's own last words first, then what its steps and figures say."""
    if scan.ending is not None:
        return scan.ending.kind, scan.ending.text, scan.ending.line
    if prepared.format is LogFormat.MLPERF and not any(r.metric == "time_to_train_s" for r in prepared.results):
        why = next((w for w in prepared.warnings if "run_stop" in w or "run_start" in w), "no time to train")
        return OutcomeKind.FAILED, why, None
    if prepared.steps.rows == 0 and not prepared.results:
        return OutcomeKind.NO_STEPS, "the log holds no training step", None
    if (diverged := _nan_loss(prepared)) is not None:
        return OutcomeKind.NAN, diverged, None
    return OutcomeKind.COMPLETED, None, None


def _nan_loss(prepared: PreparedRun) -> str | None:
    """Why the run counts as diverged: the parser's warning that its loss became NaN, or a NaN last loss."""
    said = next((w for w in prepared.warnings if _NAN_LOSS.search(w)), None)
    if said is not None or not prepared.steps.files:
        return said
    loss = (pl.scan_parquet(list(prepared.steps.files)).select(pl.col("loss")).filter(pl.col("loss").is_not_null())
            .tail(1).collect())
    return "the loss is NaN at the last logged step" if loss.height and math.isnan(float(loss["loss"][0])) else None


def _headline(prepared: PreparedRun) -> tuple[str | None, float | None, str | None]:
    """The run's headline figure: time to train for MLPerf, else throughput per device, else step time."""
    by_metric = {r.metric: r for r in prepared.results if r.run_id is None}
    for metric in HEADLINE_METRICS:
        if (record := by_metric.get(metric)) is not None and record.value is not None and math.isfinite(record.value):
            return metric, record.value, record.unit
    return None, None, None


def _configuration(config: Mapping[str, Any]) -> dict[str, Any]:
    return {k: config[k] for k in CONFIGURATION_KEYS if config.get(k) is not None}
