"""Uploads are parsed and stored in a child process, never in the dashboard's: a log that takes the parser long
or needs much memory stops its own process, and the server keeps answering every session.

    python -m ingest.worker prepare FOLDER --timeout-s N --memory-mb N   (FOLDER/upload -> FOLDER/prepared.pickle,
                                                                         and for a claims file FOLDER/claims.pickle)
    python -m ingest.worker save FOLDER --timeout-s N --memory-mb N      (FOLDER/prepared.pickle -> the store)
    python -m ingest.worker campaign FOLDER --timeout-s N --memory-mb N  (FOLDER/upload, a zipped folder -> the
                                                                          store, as one campaign)

The store's URL comes in the environment (PERFLEDGER_DB_URL), never on the command line. The child sets its own
limits (ingest.worker_limits: address space, file size, an alarm past its time limit); the parent kills it at the
time limit, and says what ended it early (its time, its memory, a file past its size limit, a signal). A prepared run stays in FOLDER (its step files under FOLDER/steps) until
the parent stores or drops it, so a preview and its "store" parse the log once. Each step writes
FOLDER/result.json: {"ok": ...} or {"error": sentence} or {"memory": true}; FOLDER/loaded marks a child that
got past loading its modules (a limit below what they need is said as such).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingest import spare, upload
from ingest.streams import printable
from ingest.worker_limits import LOADED, IngestStopped, Limits, address_space_mb, limit_self, out_of_memory, stopped
from ingest.worker_limits import last_line as _last_line
from ingest.worker_limits import timed_out as _timed_out
from perfledger.errors import NoKnownNames, ParseError, PerfledgerError, UnknownFormat
from perfledger.records import PreparedRun, SaveResult, StepFiles
from perfledger.settings import load_settings
from perfledger.spools import spooling
from perfledger.vocabulary import LogFormat

if TYPE_CHECKING:
    from perfledger.store.claims import ClaimsWrite

COMMAND: tuple[str, ...] = (sys.executable, "-m", "ingest.worker")  # what starts a child (tests may wrap it)
FOLDER_PREFIX = upload.FOLDER_PREFIX  # + the server's PID and session: ingest.upload names and sweeps the folders
POLL_S = 0.05  # a small upload's worker ends in about a second: a coarser poll showed in every step
# glibc gives each thread that allocates its own 64 MB arena of address space: with Polars' and DuckDB's thread
# pools, a 200 KB log mapped 1.35 GB (2 cores); two arenas: 0.5 GB, the same resident memory.
CHILD_ENV = {"MALLOC_ARENA_MAX": "2"}


# parse errors the page tells apart (a file's names may be mapped to the key vocabulary), kept across the process
_KINDS: dict[str, type[ParseError]] = {"ParseError": ParseError, "UnknownFormat": UnknownFormat,
                                       "NoKnownNames": NoKnownNames}


def _error(result: dict[str, Any]) -> PerfledgerError:
    """The child's error as the parent raises it: of the same kind where it was a parse error."""
    kind = _KINDS.get(str(result.get("kind")))
    if kind is None:
        return PerfledgerError(str(result["error"]))
    line = result.get("line")
    return kind(str(result.get("file")), line if isinstance(line, int) else None, str(result.get("reason")))


@dataclasses.dataclass(frozen=True, slots=True)
class Prepared:
    """A run prepared by a worker: its record for the preview, and the folder that holds its steps."""

    folder: Path
    run: PreparedRun
    claims: ClaimsPreview | None = None  # a claims file: what storing it would do

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


@dataclasses.dataclass(frozen=True, slots=True)
class ClaimsPreview:
    """What storing a claims file would do, as `python -m ingest --dry-run` reads it (store.plan_run): its rows
    added, updated, unchanged and refused (each "FILE:LINE: reason", and those refused while reading, by reason),
    and the printed names it would leave unlinked."""

    plan: ClaimsWrite
    refusals: tuple[str, ...]
    refused_reading: Mapping[str, int]


class Job:
    """One child process at work on one folder; poll() until done, then outcome() (or cancel())."""

    def __init__(self, what: str, folder: Path, db_url: str, limits: Limits) -> None:
        from perfledger.store.engine import hand_over  # the parent's only store import: the child loads it late

        hand_over()  # the page's reads must not hold the DuckDB file the child opens
        self.what, self.folder, self.limits = what, folder, limits
        self.started = time.monotonic()
        env = {**os.environ, **CHILD_ENV, "PERFLEDGER_DB_URL": db_url}
        args = [what, str(folder), *limits.args()]
        self.proc = spare.take(COMMAND, env, args, folder / "stderr.log") or self._started(env, args)
        self.timed_out = False

    def _started(self, env: Mapping[str, str], args: Sequence[str]) -> subprocess.Popen[bytes]:
        with (self.folder / "stderr.log").open("wb") as err:
            return subprocess.Popen([*COMMAND, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=err, env=env, start_new_session=True)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def poll(self) -> bool:
        """Whether the child has ended (killed here once past the time limit)."""
        if self.proc.poll() is not None:
            return True
        if self.elapsed > self.limits.timeout_s:
            self.timed_out = True
            self.stop()
            return True
        return False

    def outcome(self) -> dict[str, Any]:
        """The child's result.json once it ended well; else what ended it (its time, its memory, a file past its
        size limit, a signal: ingest.worker_limits) or what it said, as IngestStopped."""
        verb = {"prepare": "read", "save": "store"}.get(self.what, "import")
        code = self.proc.returncode
        if self.timed_out or code == -signal.SIGALRM:
            raise _timed_out(self.limits, verb)
        result = _read_json(self.folder / "result.json")
        if result.get("error"):
            raise _error(result)
        if (ended := stopped(code, verb, self.limits, self.folder, said_memory=bool(result.get("memory")))) is not None:
            raise ended
        if code != 0 or "ok" not in result:
            raise IngestStopped(f"the upload's worker process failed to {verb} it (exit {code}: "
                                f"{_last_line(self.folder / 'stderr.log')}); nothing was stored")
        return result

    def cancel(self) -> None:
        """Stop the child and remove its folder."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def stop(self) -> None:
        """End the child now, if it still runs (its folder stays)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: the child and anything it started
            except ProcessLookupError:
                pass
        self.proc.wait()


def start_prepare(source: Path | bytes, file_name: str, db_url: str, limit: int | None, limits: Limits,
                  overrides: Mapping[str, Any] | None = None, owner: str = "") -> Job:
    """A worker that parses an upload into a prepared run kept on disk (its catalog rows read from the store).
    `source`: the upload's path (left in place: linked, else copied, into the job's own folder, named after
    `owner`, the browser session), or its bytes. `overrides`: the keyword arguments of ingest.hints.hints (model,
    accelerator, devices, precision, seq_len), names resolved against the store's catalog in the worker; a name
    not in it is kept as printed, warned."""
    request = {"file_name": printable(file_name), "limit": limit, "overrides": dict(overrides or {})}
    with spooling(Path(tempfile.gettempdir())):  # a full disk under the job's folder is said as such
        folder = upload.job_folder(source, owner, {"request.json": json.dumps(request)})
    return Job("prepare", folder, db_url, limits)


def prime(db_url: str) -> None:
    """Have a worker with its modules loaded wait for the next job on this store (ingest.spare)."""
    spare.prime(COMMAND, {**os.environ, **CHILD_ENV, "PERFLEDGER_DB_URL": db_url})


def start_save(prepared: Prepared, db_url: str, limits: Limits) -> Job:
    """A worker that stores a run a worker prepared, as it was prepared (nothing is parsed again)."""
    (prepared.folder / "result.json").unlink(missing_ok=True)
    return Job("save", prepared.folder, db_url, limits)


def wait(job: Job, tick: Callable[[float], None] = lambda _: None) -> Job:
    """Poll the job until it ends (or is killed at its time limit), calling tick(seconds so far) between polls.
    A caller that is interrupted leaves the job running: it can wait for it again, or cancel it."""
    while not job.poll():
        tick(job.elapsed)
        time.sleep(POLL_S)
    return job


def prepared_from(job: Job) -> Prepared:
    """The prepared run of a finished prepare job; its steps live until Prepared.close()."""
    try:
        job.outcome()
        with (job.folder / "prepared.pickle").open("rb") as f:
            run: PreparedRun = pickle.load(f)  # written by our own child into a folder only this user can read
    except BaseException:
        shutil.rmtree(job.folder, ignore_errors=True)
        raise
    held = Prepared(job.folder, run)
    return Prepared(job.folder, dataclasses.replace(run, release=held.close), _claims_preview(job.folder))


def _claims_preview(folder: Path) -> ClaimsPreview | None:
    path = folder / "claims.pickle"
    if not path.exists():
        return None
    with path.open("rb") as f:
        preview: ClaimsPreview = pickle.load(f)  # written by our own child, as prepared.pickle
    return preview


def saved_from(job: Job) -> SaveResult:
    result = job.outcome()
    return SaveResult(run_id=int(result["ok"]["run_id"]), created=bool(result["ok"]["created"]))


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


# ------------------------------------------------------------------------------------------- the child


def _prepare(folder: Path) -> dict[str, Any]:
    # the child starts light: parsers and the store driver load here, after the start its memory limit checks
    from ingest import pipeline
    from ingest.hints import hints_for
    from perfledger import store

    request = json.loads((folder / "request.json").read_text())
    tempfile.tempdir = str(folder)  # the step spool's folder sits here: moving the files out is a rename
    engine = store.engine_from_url(os.environ.get("PERFLEDGER_DB_URL"))
    given = hints_for(engine, **(request.get("overrides") or {}))  # reads the store: its driver is loaded
    (folder / LOADED).touch()
    with (folder / "upload").open("rb") as raw:
        prepared = pipeline.prepare(raw, request["file_name"], given, engine=engine, limit=request["limit"])
    with prepared:
        (folder / "upload").unlink()
        steps = folder / "steps"
        steps.mkdir()
        kept = tuple(Path(p).rename(steps / f"{i:08d}.parquet") for i, p in enumerate(prepared.steps.files))
        run = dataclasses.replace(prepared, steps=StepFiles(kept, prepared.steps.rows, prepared.steps.increasing),
                                  release=_kept_in_folder)
        with (folder / "prepared.pickle").open("wb") as f:
            pickle.dump(run, f)
        if run.format is LogFormat.CLAIMS_CSV:
            with (folder / "claims.pickle").open("wb") as f:
                pickle.dump(_planned_claims(engine, run), f)
    return {"ok": {"rows": run.steps.rows}}


def _planned_claims(engine: Any, run: PreparedRun) -> ClaimsPreview:
    """What storing the claims file would do: the CLI's dry run (`python -m ingest --dry-run`), from the store."""
    from perfledger import store  # the child's store, loaded by _prepare already; the parent never loads it

    _, plan = store.plan_run(engine, run, importer="upload")
    refused = (run.config.get("format_meta") or {}).get("refused") or {}
    return ClaimsPreview(plan, store.claims_refusals(run, plan), dict(refused))


def _kept_in_folder() -> None:
    """A pickled run's release: its steps stay in the folder, which the parent removes."""


def _save(folder: Path) -> dict[str, Any]:
    from perfledger import store  # the child starts light (the store's driver loads here); the parent never loads it

    with (folder / "prepared.pickle").open("rb") as f:
        run: PreparedRun = pickle.load(f)
    engine = store.engine_from_url(os.environ.get("PERFLEDGER_DB_URL"))
    store.find_run(engine, run.content_sha256)  # reads the store: its driver is loaded
    (folder / LOADED).touch()
    # A dashboard upload: the token that unlocked it is the configured one (stored as a short hash, never as is)
    saved = store.save_run(engine, run, importer="upload", token=os.environ.get("PERFLEDGER_UPLOAD_TOKEN") or None)
    return {"ok": {"run_id": saved.run_id, "created": saved.created}}


def _served() -> list[str] | None:
    """A spare's job (ingest.spare): its modules loaded first, then the job's arguments read from stdin, and its
    stderr sent to the job's folder; None when the parent ended first."""
    from ingest import pipeline  # noqa: F401  # loaded before the job arrives: that is the spare's point
    from perfledger import store  # noqa: F401

    line = sys.stdin.readline()
    if not line:
        return None
    job = json.loads(line)
    err = os.open(job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(err, 2)
    return list(job["args"])


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == [spare.SERVE]:
        served = _served()
        if served is None:
            return 0
        argv = served
    p = argparse.ArgumentParser(prog="python -m ingest.worker")
    p.add_argument("what", choices=("prepare", "save", "campaign"))
    p.add_argument("folder", type=Path)
    p.add_argument("--timeout-s", type=float, required=True)
    p.add_argument("--memory-mb", type=int, required=True)
    p.add_argument("--file-mb", type=int, default=load_settings().ingest_file_mb)
    args = p.parse_args(argv)
    limit_self(Limits(args.timeout_s, args.memory_mb, args.file_mb))
    result: dict[str, Any]
    try:
        if address_space_mb() > args.memory_mb:  # a spare loaded past the limit: it could not have started
            raise MemoryError
        if args.what == "prepare":
            with spooling(args.folder.parent):  # a full disk under the upload's folder is said, not a traceback
                result = _prepare(args.folder)
        elif args.what == "save":
            result = _save(args.folder)
        else:
            from ingest.campaign_job import import_campaign  # a zipped folder, unpacked and imported whole

            result = import_campaign(args.folder)
    except (MemoryError, ImportError, OSError) as exc:
        if not out_of_memory(exc):
            raise
        result = {"memory": True}
    except PerfledgerError as exc:
        result = {"error": str(exc)} | (
            {"kind": type(exc).__name__, "file": exc.file_name, "line": exc.line, "reason": exc.reason}
            if isinstance(exc, ParseError) else {})
    (args.folder / "result.json").write_text(json.dumps(result, default=str))
    return 0 if "ok" in result else 1


if __name__ == "__main__":
    from perfledger.process import exit_process, lean_process

    lean_process()
    from ingest import worker  # noqa: PLW0406  # run as ingest.worker, not __main__: what it pickles names the importable module

    exit_process(worker.main())
