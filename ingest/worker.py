"""Uploads are parsed and stored in a child process, never in the dashboard's: a log that takes the parser long
or needs much memory stops its own process, and the server keeps answering every session.

    python -m ingest.worker prepare FOLDER --timeout-s N --memory-mb N   (FOLDER/upload -> FOLDER/prepared.pickle)
    python -m ingest.worker save FOLDER --timeout-s N --memory-mb N      (FOLDER/prepared.pickle -> the store)
    python -m ingest.worker campaign FOLDER --timeout-s N --memory-mb N  (FOLDER/upload, a zipped folder -> the
                                                                          store, as one campaign)

The store's URL comes in the environment (PERFLEDGER_DB_URL), never on the command line. The child limits its own
address space (RLIMIT_AS) and has the kernel end it shortly after the time limit even if nobody waits for it;
the parent kills it at the time limit. A prepared run stays in FOLDER (its step files under FOLDER/steps) until
the parent stores or drops it, so a preview and its "store" parse the log once. Each step writes
FOLDER/result.json: {"ok": ...} or {"error": sentence} or {"memory": true}.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import json
import os
import pickle
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ingest.streams import printable
from perfledger.errors import NoKnownNames, ParseError, PerfledgerError, UnknownFormat
from perfledger.records import PreparedRun, SaveResult, StepFiles

COMMAND: tuple[str, ...] = (sys.executable, "-m", "ingest.worker")  # what starts a child (tests may wrap it)
FOLDER_PREFIX = "perfledger-upload-"  # + the server's PID: a later writer removes the folders of a server gone
ALARM_GRACE_S = 5  # the child's own deadline, past the parent's: it ends an orphaned child, never a watched one
POLL_S = 0.25
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


class IngestStopped(PerfledgerError):
    """The worker hit a limit (time, memory) or ended without a word; nothing was stored."""


@dataclasses.dataclass(frozen=True, slots=True)
class Limits:
    timeout_s: float
    memory_mb: int


@dataclasses.dataclass(frozen=True, slots=True)
class Prepared:
    """A run prepared by a worker: its record for the preview, and the folder that holds its steps."""

    folder: Path
    run: PreparedRun

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class Job:
    """One child process at work on one folder; poll() until done, then outcome() (or cancel())."""

    def __init__(self, what: str, folder: Path, db_url: str, limits: Limits) -> None:
        from perfledger.store.engine import hand_over  # the parent's only store import: the child loads it late

        hand_over()  # the page's reads must not hold the DuckDB file the child opens
        self.what, self.folder, self.limits = what, folder, limits
        self.started = time.monotonic()
        env = {**os.environ, **CHILD_ENV, "PERFLEDGER_DB_URL": db_url}
        args = [what, str(folder), "--timeout-s", str(limits.timeout_s), "--memory-mb", str(limits.memory_mb)]
        with (folder / "stderr.log").open("wb") as err:
            self.proc = subprocess.Popen([*COMMAND, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=err, env=env, start_new_session=True)
        self.timed_out = False

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
        """The child's result.json once it ended well; else the limit it hit or what it said, as IngestStopped."""
        verb = {"prepare": "read", "save": "store"}.get(self.what, "import")
        if self.timed_out or self.proc.returncode == -signal.SIGALRM:
            raise IngestStopped(f"the upload took longer than {self.limits.timeout_s:g} s to {verb} and was stopped; "
                                "nothing was stored")
        result = _read_json(self.folder / "result.json")
        if result.get("error"):
            raise _error(result)
        if result.get("memory") or self.proc.returncode in (-signal.SIGABRT, -signal.SIGSEGV, -signal.SIGKILL):
            raise IngestStopped(f"the upload needed more than {self.limits.memory_mb} MB of memory to {verb} and was "
                                "stopped; nothing was stored")
        if self.proc.returncode != 0 or "ok" not in result:
            raise IngestStopped(f"the upload's worker process failed to {verb} it (exit {self.proc.returncode}: "
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


def start_prepare(raw: bytes, file_name: str, db_url: str, limit: int | None, limits: Limits,
                  overrides: Mapping[str, Any] | None = None) -> Job:
    """A worker that parses `raw` into a prepared run kept on disk (its catalog rows read from the store).
    `overrides`: the keyword arguments of ingest.hints.hints (model, accelerator, devices, precision, seq_len),
    names resolved against the store's catalog in the worker; a name not in it is kept as printed, warned."""
    folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
    (folder / "upload").write_bytes(raw)
    request = {"file_name": printable(file_name), "limit": limit, "overrides": dict(overrides or {})}
    (folder / "request.json").write_text(json.dumps(request))
    return Job("prepare", folder, db_url, limits)


@dataclasses.dataclass(frozen=True, slots=True)
class CampaignDone:
    """What a worker's campaign import did: the campaign (None when every file was refused) and what it read."""

    campaign_id: int | None
    created: bool
    kind: str
    attempts: int
    refusals: tuple[str, ...]


def start_campaign(raw: bytes, file_name: str, db_url: str, limit: int, limits: Limits) -> Job:
    """A worker that unpacks a zipped folder and imports it as one campaign (ingest.campaign.import_folder), under
    the same time and memory limits as a log's upload, for the whole folder."""
    folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
    (folder / "upload").write_bytes(raw)
    (folder / "request.json").write_text(json.dumps({"file_name": printable(file_name), "limit": limit}))
    return Job("campaign", folder, db_url, limits)


def campaign_from(job: Job) -> CampaignDone:
    """The outcome of a finished campaign job (its folder is the caller's to remove: Job.cancel)."""
    ok = job.outcome()["ok"]
    return CampaignDone(campaign_id=ok["campaign_id"], created=bool(ok["created"]), kind=str(ok["kind"]),
                        attempts=int(ok["attempts"]), refusals=tuple(str(r) for r in ok["refusals"]))


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
    return Prepared(job.folder, dataclasses.replace(run, release=held.close))


def saved_from(job: Job) -> SaveResult:
    result = job.outcome()
    return SaveResult(run_id=int(result["ok"]["run_id"]), created=bool(result["ok"]["created"]))


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no output"
    return lines[-1][:300] if lines else "no output"


# ------------------------------------------------------------------------------------------- the child


def _limit_self(limits: Limits) -> None:
    size = limits.memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (size, size))
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


def _prepare(folder: Path) -> dict[str, Any]:
    from ingest import pipeline
    from ingest.hints import hints_for
    from perfledger import store

    request = json.loads((folder / "request.json").read_text())
    tempfile.tempdir = str(folder)  # the step spool's folder sits here: moving the files out is a rename
    engine = store.engine_from_url(os.environ.get("PERFLEDGER_DB_URL"))
    given = hints_for(engine, **(request.get("overrides") or {}))
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
    return {"ok": {"rows": run.steps.rows}}


def _kept_in_folder() -> None:
    """A pickled run's release: its steps stay in the folder, which the parent removes."""


def _save(folder: Path) -> dict[str, Any]:
    from perfledger import store

    with (folder / "prepared.pickle").open("rb") as f:
        run: PreparedRun = pickle.load(f)
    # A dashboard upload: the token that unlocked it is the configured one (stored as a short hash, never as is)
    saved = store.save_run(store.engine_from_url(os.environ.get("PERFLEDGER_DB_URL")), run, importer="upload",
                           token=os.environ.get("PERFLEDGER_UPLOAD_TOKEN") or None)
    return {"ok": {"run_id": saved.run_id, "created": saved.created}}


def _campaign(folder: Path) -> dict[str, Any]:
    from ingest.campaign import import_folder
    from ingest.campaign_zip import unpack_zip
    from perfledger import store

    request = json.loads((folder / "request.json").read_text())
    tempfile.tempdir = str(folder)
    limit = int(request["limit"])
    unpacked = unpack_zip((folder / "upload").read_bytes(), request["file_name"], folder / "unpacked", limit=limit)
    (folder / "upload").unlink()
    done = import_folder(store.engine_from_url(os.environ.get("PERFLEDGER_DB_URL")), unpacked, limit=limit)
    saved = done.saved
    return {"ok": {"campaign_id": saved.campaign_id if saved else None, "created": bool(saved and saved.created),
                   "kind": done.plan.kind.value, "attempts": len(done.plan.attempts),
                   "refusals": list(done.plan.refusals)}}


_STEPS: dict[str, Callable[[Path], dict[str, Any]]] = {"prepare": _prepare, "save": _save, "campaign": _campaign}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ingest.worker")
    p.add_argument("what", choices=tuple(_STEPS))
    p.add_argument("folder", type=Path)
    p.add_argument("--timeout-s", type=float, required=True)
    p.add_argument("--memory-mb", type=int, required=True)
    args = p.parse_args(argv)
    _limit_self(Limits(args.timeout_s, args.memory_mb))
    result: dict[str, Any]
    try:
        result = _STEPS[args.what](args.folder)
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
