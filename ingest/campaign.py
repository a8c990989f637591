"""A folder imported as one campaign: every log under it prepared as a run, every failure kept as an outcome with its
reason, the folder's own metadata read (MLPerf's system description and submission keys, a sweep's configuration
files, a job table's rows), and the campaign scored by its rule; then stored whole, or not at all.

    folder -> files -> (logs -> PreparedRun + how the job ended | configs | system JSON | job-table rows)
           -> CampaignPlan (attempts, metadata, score) -> store.save_campaign (one transaction)

A file that cannot be read is refused (`FILE:LINE: reason`) and the rest is imported.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from ingest import campaign_files as files
from ingest.campaign_score import campaign_score, mlperf_benchmark
from ingest.hints import Hints, hints
from ingest.pipeline import prepare
from ingest.streams import open_regular
from perfledger import store
from perfledger.campaigns import Attempt, CampaignPlan, CampaignSaved
from perfledger.catalog import Catalog
from perfledger.errors import FileTooLarge, ParseError, PerfledgerError
from perfledger.records import PreparedRun
from perfledger.vocabulary import CampaignKind, LogFormat, OutcomeKind

# What makes two runs repeats of one another
CONFIGURATION_KEYS = ("model", "accelerator", "n_devices", "precision", "seq_len", "global_batch", "micro_batch",
                      "tp", "pp", "dp", "cp", "ep", "framework")
_NAN_LOSS = re.compile(r"loss nan|nan loss", re.IGNORECASE)
HEADLINE_METRICS = ("time_to_train_s", "tokens_per_s_per_device", "samples_per_s", "step_time_s")


@dataclass(frozen=True, slots=True)
class CampaignImport:
    """What importing a folder did: the stored campaign (None on a dry run, or when every file was refused) and
    the plan it stored."""

    plan: CampaignPlan
    saved: CampaignSaved | None


def import_folder(engine: store.Engine, folder: Path, given: Hints | None = None, *, limit: int | None = None,
                  known: Catalog | None = None, now: datetime | None = None) -> CampaignImport:
    """Read the folder into a plan and store it in one transaction; the step files are removed either way."""
    plan = plan_folder(folder, given, limit=limit, known=known, engine=engine)
    try:
        if not plan.attempts:  # every file refused: there is no campaign to store
            return CampaignImport(plan, None)
        return CampaignImport(plan, store.save_campaign(engine, plan, ingested_at=now))
    finally:
        plan.close()


def plan_folder(folder: Path, given: Hints | None = None, *, limit: int | None = None, known: Catalog | None = None,
                engine: store.Engine | None = None) -> CampaignPlan:
    """Everything but the write: the folder's attempts, metadata, refusals and score."""
    paths = files.folder_files(folder)
    if not paths:
        raise PerfledgerError("the folder holds no file to import")  # the edge names the folder
    meta: dict[str, Any] = {"folder": folder.name, "configs": {}, "systems": {}}
    refusals: list[str] = []
    digests: list[str] = []
    logs: list[tuple[Path, str]] = []
    attempts: list[Attempt] = []
    for path in paths:
        relative = path.relative_to(folder)
        shown = relative.as_posix()
        try:
            attempts += _read_metadata_file(path, relative, shown, meta, digests, logs)
        except (PerfledgerError, OSError) as exc:
            refusals.append(_refusal(shown, exc))
    folder_hints = _merged(_system_hints(meta["systems"], known), given)
    try:
        for path, shown in logs:
            try:
                attempts.append(_log_attempt(path, shown, folder_hints, limit, engine, digests))
            except (PerfledgerError, OSError) as exc:
                if (ended := _ended_before_steps(path, shown, limit, exc)) is None:
                    refusals.append(_refusal(shown, exc))
                else:
                    attempts.append(ended)
    except BaseException:  # interrupted: the runs prepared so far leave no step files behind
        for attempt in attempts:
            if attempt.prepared is not None:
                attempt.prepared.close()
        raise
    submission = _submission(attempts)
    if submission:
        meta["submission"] = submission
    kind = _kind(meta, attempts)
    return CampaignPlan(name=folder.name, kind=kind, content_sha256=_campaign_hash(digests), meta=meta,
                        attempts=tuple(attempts), score=campaign_score(kind, attempts, mlperf_benchmark(submission)),
                        refusals=tuple(refusals))


def _read_metadata_file(path: Path, relative: Path, shown: str, meta: dict[str, Any], digests: list[str],
                        logs: list[tuple[Path, str]]) -> list[Attempt]:
    """A configuration file, a system description or a job table goes into the metadata (or attempts, for a job
    table's rows); a log is queued to be prepared once the folder's hints are known."""
    if files.is_document(relative):
        meta.setdefault("documents", []).append(shown)
        return []
    if files.is_system_description(relative):
        meta["systems"][shown] = files.read_json_object(path, shown)
        digests.append(f"{shown}:{_file_sha(path, shown)}")
        return []
    if files.is_config_file(relative):
        text = files.read_text(path, shown)
        meta["configs"][shown] = files.config_settings(text)
        digests.append(f"{shown}:{hashlib.sha256(text.encode()).hexdigest()}")
        return []
    with open_regular(path, shown) as handle:
        head = handle.read(len(files.SQLITE_MAGIC))
    if files.is_job_table(head):
        digests.append(f"{shown}:{_file_sha(path, shown)}")
        meta["job_table"] = shown
        return [_job_attempt(shown, row) for row in files.job_rows(path, shown)]
    logs.append((path, shown))
    return []


def _file_sha(path: Path, shown: str) -> str:
    return files.scan_file(path, shown, None).sha256


def _refusal(shown: str, exc: BaseException) -> str:
    """FILE:LINE: reason (FILE: reason when the whole file is refused, as every refusal of `python -m ingest`)."""
    if isinstance(exc, ParseError):
        return str(ParseError(shown, exc.line, exc.reason))
    if isinstance(exc, OSError):
        return f"{shown}: cannot be read: {exc.strerror}"
    return f"{shown}: {exc}"


def _log_attempt(path: Path, shown: str, given: Hints, limit: int | None, engine: store.Engine | None,
                 digests: list[str]) -> Attempt:
    scanning = files.ContentScan()  # rides along the parse: the log is read once
    with open_regular(path, shown) as handle:
        prepared = prepare(handle, shown, given, engine=engine, limit=limit, watch=scanning.feed)
    try:
        scan = scanning.finish()
        if prepared.format is LogFormat.CLAIMS_CSV:
            raise ParseError(shown, None, "a claims file, not a run: import it on its own (python -m ingest FILE)")
        digests.append(f"{shown}:{scan.sha256}")
        kind, reason, line = _outcome_of(prepared, scan)
        metric, value, unit = _headline(prepared)
        configuration = _configuration(prepared.config) | _benchmark(scan)
        return Attempt(file_name=shown, kind=kind, reason=reason, line=line, configuration=configuration,
                       metric=metric, value=value, unit=unit, prepared=prepared)
    except BaseException:
        prepared.close()
        raise


def _ended_before_steps(path: Path, shown: str, limit: int | None, exc: BaseException) -> Attempt | None:
    """A file no parser reads that says how its job ended (out of memory, killed, cancelled): a failed attempt with
    no steps, kept as an outcome; None for any other unreadable file."""
    if not isinstance(exc, ParseError) or isinstance(exc, FileTooLarge):
        return None
    try:
        scan = files.scan_file(path, shown, limit)
    except (PerfledgerError, OSError):
        return None
    if scan.ending is None:
        return None
    return Attempt(file_name=shown, kind=scan.ending.kind, line=scan.ending.line,
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


def _benchmark(scan: files.FileScan) -> dict[str, Any]:
    benchmark = scan.submission.get("submission_benchmark")
    return {"benchmark": benchmark} if benchmark else {}


def _job_attempt(shown: str, row: Mapping[str, Any]) -> Attempt:
    kind, reason = files.job_outcome(row)
    configuration = {"model": "-".join(str(row[k]) for k in ("model_name", "model_size") if row.get(k)),
                     "precision": row.get("dtype"), "n_devices": row.get("scale"), "workload": row.get("workload_key")}
    step_time = row.get("train_step_time_seconds")
    return Attempt(file_name=f"{shown}#{row['job_id']}", kind=kind, reason=reason,
                   configuration={k: v for k, v in configuration.items() if v not in (None, "")},
                   metric="step_time_s" if step_time is not None else None, value=step_time,
                   unit="s" if step_time is not None else None)


def _system_hints(systems: Mapping[str, Mapping[str, Any]], known: Catalog | None) -> Hints:
    """The accelerator and device count an MLPerf system description states, as hints for its result files."""
    if len(systems) != 1:
        return Hints()
    system = next(iter(systems.values()))
    try:
        devices = int(system.get("number_of_nodes") or 0) * int(system.get("accelerators_per_node") or 0)
    except (TypeError, ValueError):
        devices = 0
    return hints(accelerator=system.get("accelerator_model_name") or None, devices=devices or None, known=known)


def _merged(folder: Hints, given: Hints | None) -> Hints:
    """The folder's hints, with what the command line gave taking precedence."""
    if given is None or not given.given:
        return folder
    return Hints(config=replace(folder.config, **given.config.stated()), warnings=folder.warnings + given.warnings,
                 unlinked=tuple(sorted(set(folder.unlinked) | set(given.unlinked))))


def _submission(attempts: Sequence[Attempt]) -> dict[str, str]:
    """The MLPerf submission keys the result files agree on (org, division, platform, benchmark, status)."""
    found: dict[str, set[str]] = {}
    for attempt in attempts:
        if attempt.prepared is None or attempt.prepared.format is not LogFormat.MLPERF:
            continue
        meta = attempt.prepared.config.get("format_meta") or {}
        keys = {k: v for k, v in meta.items() if k.startswith("submission_") and isinstance(v, str)}
        if (benchmark := attempt.configuration.get("benchmark")) is not None:
            keys["submission_benchmark"] = str(benchmark)
        for key, value in keys.items():
            found.setdefault(key, set()).add(value)
    return {k: next(iter(v)) if len(v) == 1 else " | ".join(sorted(v)) for k, v in found.items()}


def _kind(meta: Mapping[str, Any], attempts: Sequence[Attempt]) -> CampaignKind:
    if meta.get("submission"):
        return CampaignKind.MLPERF
    if meta.get("job_table"):
        return CampaignKind.JOB_TABLE
    return CampaignKind.SWEEP if meta.get("configs") or len({str(a.configuration) for a in attempts}) > 1 \
        else CampaignKind.FOLDER


def _campaign_hash(digests: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(sorted(digests)).encode()).hexdigest()
