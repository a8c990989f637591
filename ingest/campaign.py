"""A folder imported as campaigns: every log under it prepared as a run (in a pool of worker processes), every
failure kept as an outcome with its reason, the folder's own metadata read (MLPerf's system descriptions and
submission keys, a sweep's configuration files, a job table's rows), one campaign per MLPerf submitter's system and
benchmark (ingest.campaign_groups) and one for the folder's other logs, each scored by its rule and stored whole, or
not at all, in one transaction of its own.

    folder -> files -> (logs -> worker pool -> PreparedRun + how the job ended | configs | systems | job-table rows)
           -> groups -> CampaignPlan each (attempts, metadata, score) -> store.save_campaign each

A file that cannot be read is refused (`FILE:LINE: reason`) and the rest is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from ingest import campaign_files as files
from ingest.campaign_groups import NO_GROUP, Group, attached, campaign_name, group_key, system_description_for
from ingest.campaign_logs import LogJob, LogRead, refusal
from ingest.campaign_pool import Tick, pool_size, read_logs
from ingest.campaign_score import campaign_score, mlperf_benchmark, scaled
from ingest.hints import Hints, hints
from ingest.known import KnownRows, known_rows
from ingest.streams import open_regular
from perfledger import store
from perfledger.campaigns import Attempt, CampaignPlan, CampaignSaved, CampaignScore
from perfledger.catalog import Catalog
from perfledger.errors import PerfledgerError
from perfledger.spools import spool_dir
from perfledger.vocabulary import CampaignKind, LogFormat

SCALING_FILE = "scaling.json"  # MLPerf: the review's factor on a benchmark's score (MLCommons' result_summarizer)


@dataclass(frozen=True, slots=True)
class CampaignImport:
    """What importing one campaign did: the stored campaign (None on a dry run, or when it could not be stored:
    `error` says why) and the plan it stored."""

    plan: CampaignPlan
    saved: CampaignSaved | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class RoundPlan:
    """A folder read: a plan per campaign, each refused file (`FILE:LINE: reason`), the files and bytes read."""

    folder: str
    plans: tuple[CampaignPlan, ...]
    refusals: tuple[str, ...]
    logs: int
    log_bytes: int

    def close(self) -> None:
        for plan in self.plans:
            plan.close()

    def only(self) -> CampaignPlan:
        """The plan of a folder that is one campaign (or none: every file refused)."""
        if len(self.plans) > 1:
            names = ", ".join(p.name for p in self.plans)
            raise PerfledgerError(f"the folder holds {len(self.plans)} campaigns ({names}): import it as a round")
        return self.plans[0] if self.plans else _empty_plan(self)


@dataclass(frozen=True, slots=True)
class RoundImport:
    """What importing a folder did: each campaign's import, in the folder's order."""

    plan: RoundPlan
    imports: tuple[CampaignImport, ...]

    @property
    def saved(self) -> CampaignSaved | None:
        """The stored campaign of a folder that is one campaign."""
        return self.imports[0].saved if len(self.imports) == 1 else None


def import_round(engine: store.Engine, folder: Path, given: Hints | None = None, *, limit: int | None = None,
                 known: Catalog | None = None, now: datetime | None = None, tick: Tick | None = None,
                 workers: int | None = None) -> RoundImport:
    """Read the folder and store its campaigns, each whole in one transaction (several to one, when many:
    store.save_campaigns); the step files are removed either way. A campaign that cannot be stored leaves nothing
    of itself (its import says why) and leaves the others stored."""
    plan = plan_round(folder, given, limit=limit, known=known, engine=engine, tick=tick, workers=workers)
    try:
        saved = store.save_campaigns(engine, plan.plans, ingested_at=now)
        return RoundImport(plan, tuple(CampaignImport(p, s, None) if isinstance(s, CampaignSaved) else
                                       CampaignImport(p, None, str(s)) for p, s in zip(plan.plans, saved, strict=True)))
    finally:
        plan.close()


def import_folder(engine: store.Engine, folder: Path, given: Hints | None = None, *, limit: int | None = None,
                  known: Catalog | None = None, now: datetime | None = None) -> CampaignImport:
    """A folder that is one campaign, imported (every file refused: saved is None)."""
    plan = plan_folder(folder, given, limit=limit, known=known, engine=engine)
    try:
        return CampaignImport(plan, store.save_campaign(engine, plan, ingested_at=now) if plan.attempts else None)
    finally:
        plan.close()


def plan_folder(folder: Path, given: Hints | None = None, *, limit: int | None = None, known: Catalog | None = None,
                engine: store.Engine | None = None) -> CampaignPlan:
    """Everything but the write, for a folder that is one campaign."""
    planned = plan_round(folder, given, limit=limit, known=known, engine=engine)
    try:
        return planned.only()
    except PerfledgerError:
        planned.close()
        raise


def plan_round(folder: Path, given: Hints | None = None, *, limit: int | None = None, known: Catalog | None = None,
               engine: store.Engine | None = None, tick: Tick | None = None,
               workers: int | None = None) -> RoundPlan:
    """Everything but the write: the folder's campaigns (attempts, metadata, refusals, scores)."""
    paths = files.folder_files(folder)
    if not paths:
        raise PerfledgerError("the folder holds no file to import")  # the edge names the folder
    rows = known_rows(engine) if engine is not None else None  # the catalog, read once for every log
    found = _Metadata()
    logs: list[tuple[Path, str]] = []
    for path in paths:
        shown = path.relative_to(folder).as_posix()
        try:
            found.read(path, shown, logs)
        except (PerfledgerError, OSError) as exc:
            found.refusals.append(refusal(shown, exc))
    jobs = _jobs(logs, found.systems, given, known or (rows.catalog if rows else None), limit)
    groups: dict[Any, Group] = {}
    if found.job_rows:
        groups[NO_GROUP] = Group(NO_GROUP, attempts=list(found.job_rows))
    for read in _reads(jobs, rows, tick, workers):
        _add(groups, read, found)
    return _planned(folder.name, list(groups.values()), found, len(jobs), sum(_size(j.path) for j in jobs))


def _reads(jobs: Sequence[LogJob], rows: KnownRows | None, tick: Tick | None,
           workers: int | None) -> Iterator[LogRead]:
    """The logs read (by a pool when there are many); the runs read so far are closed if the reading stops. A pool's
    runs keep their step files in a spool folder of this process's, removed with the last of them."""
    keep_in = spool_dir("round") if (workers if workers is not None else pool_size(len(jobs))) else None
    done: list[LogRead] = []
    try:
        for read in read_logs(jobs, rows, keep_in or Path(), tick, workers):
            done.append(read)
            yield read
    except BaseException:
        for read in done:
            if read.attempt is not None and read.attempt.prepared is not None:
                read.attempt.prepared.close()
        if keep_in is not None:
            shutil.rmtree(keep_in, ignore_errors=True)
        raise
    if keep_in is not None:
        with contextlib.suppress(OSError):
            keep_in.rmdir()  # only when no run is kept in it


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class _Metadata:
    """The folder's files that are not logs: documents, system descriptions, configuration files, a job table."""

    def __init__(self) -> None:
        self.documents: list[str] = []
        self.systems: dict[str, dict[str, Any]] = {}
        self.configs: dict[str, Any] = {}
        self.digests: dict[str, str] = {}  # file -> "NAME:SHA256"
        self.job_table: str | None = None
        self.job_rows: list[Attempt] = []
        self.refusals: list[str] = []

    def read(self, path: Path, shown: str, logs: list[tuple[Path, str]]) -> None:
        relative = Path(shown)
        if files.is_document(relative):
            self.documents.append(shown)
        elif files.is_system_description(relative):
            self.systems[shown] = files.read_json_object(path, shown)
            self.digests[shown] = f"{shown}:{files.scan_file(path, shown, None).sha256}"
        elif relative.name == SCALING_FILE:
            self.configs[shown] = files.read_json_object(path, shown)
            self.digests[shown] = f"{shown}:{files.scan_file(path, shown, None).sha256}"
        elif files.is_config_file(relative):
            text = files.read_text(path, shown)
            self.configs[shown] = files.config_settings(text)
            self.digests[shown] = f"{shown}:{hashlib.sha256(text.encode()).hexdigest()}"
        else:
            with open_regular(path, shown) as handle:
                head = handle.read(len(files.SQLITE_MAGIC))
            if not files.is_job_table(head):
                logs.append((path, shown))
                return
            self.job_rows += [_job_attempt(shown, row) for row in files.job_rows(path, shown)]
            self.digests[shown] = f"{shown}:{files.scan_file(path, shown, None).sha256}"
            self.job_table = shown


def _jobs(logs: Sequence[tuple[Path, str]], systems: Mapping[str, Mapping[str, Any]], given: Hints | None,
          known: Catalog | None, limit: int | None) -> list[LogJob]:
    """Each log with its hints: the accelerator and devices its system description states, what the command line
    gave taking precedence."""
    by_system: dict[str | None, Hints] = {}
    jobs = []
    for path, shown in logs:
        system = system_description_for(shown, systems)
        if system not in by_system:
            by_system[system] = _merged(_system_hints(systems.get(system) if system else None, known), given)
        jobs.append(LogJob(path, shown, by_system[system], limit))
    return jobs


def _add(groups: dict[Any, Group], read: LogRead, found: _Metadata) -> None:
    if read.attempt is None:
        found.refusals.append(read.refusal or f"{read.shown}: not read")
        return
    key = group_key(read.attempt, read.shown)
    group = groups.setdefault(key, Group(key))
    group.attempts.append(read.attempt)
    group.files.append(read.shown)
    if read.digest is not None:
        group.digests.append(read.digest)


def _planned(folder: str, groups: list[Group], found: _Metadata, logs: int, log_bytes: int) -> RoundPlan:
    """Each group's metadata and refusals attached, its plan made."""
    described = {id(g): {system_description_for(f, found.systems) for f in g.files} for g in groups
                 if g.key != NO_GROUP}
    for shown, desc in found.systems.items():
        users = [g for g in groups if shown in described.get(id(g), ())]
        for group in users or groups:
            group.meta["systems"][shown] = desc
            group.digests.append(found.digests[shown])
    homes = {id(g): g.home for g in groups}
    for shown, settings in found.configs.items():
        for group in attached(groups, shown, homes):
            group.meta["configs"][shown] = settings
            group.digests.append(found.digests[shown])
    for shown in found.documents:
        for group in attached(groups, shown, homes):
            group.meta.setdefault("documents", []).append(shown)
    for text in found.refusals:
        for group in attached(groups, text.split(":", 1)[0], homes):
            group.refusals.append(text)
    if found.job_table is not None and NO_GROUP in {g.key for g in groups}:
        own = next(g for g in groups if g.key == NO_GROUP)
        own.meta["job_table"] = found.job_table
        own.digests.append(found.digests[found.job_table])
    several = len(groups) > 1
    plans = tuple(_plan(folder, g, several) for g in groups if g.attempts)
    return RoundPlan(folder, plans, tuple(found.refusals), logs, log_bytes)


def _plan(folder: str, group: Group, several: bool) -> CampaignPlan:
    meta: dict[str, Any] = {"folder": folder} | group.meta
    if group.key != NO_GROUP:
        meta["results_folder"] = group.home
    submission = _submission(group.attempts)
    if submission:
        meta["submission"] = submission
    kind = _kind(meta, group.attempts)
    score = campaign_score(kind, group.attempts, mlperf_benchmark(submission))
    factor = _scaling(meta["configs"], meta.get("results_folder", ""))
    return CampaignPlan(name=campaign_name(group.key, folder, several), kind=kind,
                        content_sha256=_campaign_hash(group.digests), meta=meta, attempts=tuple(group.attempts),
                        score=scaled(score, *factor) if factor else score, refusals=tuple(group.refusals))


def _scaling(configs: Mapping[str, Any], home: str) -> tuple[float, str] | None:
    """The scaling factor a benchmark's `scaling.json` beside its result files gives its score, with the file."""
    shown = f"{home}/{SCALING_FILE}" if home else SCALING_FILE
    factor = (configs.get(shown) or {}).get("scaling_factor")
    return (float(factor), shown) if isinstance(factor, int | float) and factor > 0 else None


def _job_attempt(shown: str, row: Mapping[str, Any]) -> Attempt:
    kind, reason = files.job_outcome(row)
    configuration = {"model": "-".join(str(row[k]) for k in ("model_name", "model_size") if row.get(k)),
                     "precision": row.get("dtype"), "n_devices": row.get("scale"), "workload": row.get("workload_key")}
    step_time = row.get("train_step_time_seconds")
    return Attempt(file_name=f"{shown}#{row['job_id']}", kind=kind, reason=reason,
                   configuration={k: v for k, v in configuration.items() if v not in (None, "")},
                   metric="step_time_s" if step_time is not None else None, value=step_time,
                   unit="s" if step_time is not None else None)


def _system_hints(system: Mapping[str, Any] | None, known: Catalog | None) -> Hints:
    """The accelerator and device count an MLPerf system description states, as hints for its result files."""
    if system is None:
        return Hints()
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


def _empty_plan(round_: RoundPlan) -> CampaignPlan:
    """The plan of a folder whose every file was refused: no attempt, nothing to store."""
    return CampaignPlan(name=round_.folder, kind=CampaignKind.FOLDER, content_sha256=_campaign_hash([]),
                        meta={"folder": round_.folder}, attempts=(),
                        score=CampaignScore(None, None, "none", "every file was refused"),
                        refusals=round_.refusals)

