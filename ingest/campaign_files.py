"""What the files of a campaign folder are, read without touching the store: a log, a configuration file of the
sweep, an MLPerf system description, or a job table; and how a log says its job ended.

How a job ended is read from the lines schedulers and frameworks print when it does (Slurm's
`slurmstepd: error: *** JOB … CANCELLED AT … DUE TO TIME LIMIT ***`, PyTorch's `CUDA out of memory`); the
strongest one found wins (out of memory, then time limit, then cancellation), with the line it was read from.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingest.streams import open_content, open_regular
from perfledger.errors import ParseError
from perfledger.vocabulary import OutcomeKind

CONFIG_SUFFIXES = (".slurm", ".sbatch", ".sh", ".yaml", ".yml", ".toml", ".cfg", ".ini")
DOCUMENT_SUFFIXES = (".md", ".rst", ".pdf", ".png", ".jpg", ".jpeg", ".svg", ".html")  # a folder's notes: listed
SQLITE_MAGIC = b"SQLite format 3\x00"
SUBMISSION_BYTES = 1 << 20  # MLPerf result files state their submission keys near the top
# The columns of llmb-run's job table (NVIDIA dgxc-benchmarking, cli/llmb-run/src/llmb_run/job_history.py)
JOB_TABLE_COLUMNS = frozenset({"job_id", "slurm_state", "model_name", "dtype", "scale", "train_step_time_seconds"})

_ENDINGS: tuple[tuple[OutcomeKind, re.Pattern[bytes]], ...] = (
    (OutcomeKind.OUT_OF_MEMORY, re.compile(rb"CUDA out of memory|OutOfMemoryError|HIP out of memory|OUT_OF_MEMORY"
                                           rb"|oom[-_]kill|Out Of Memory")),
    (OutcomeKind.TIMEOUT, re.compile(rb"CANCELLED AT \S+ DUE TO TIME LIMIT|exceeded (?:its )?time limit")),
    (OutcomeKind.CANCELLED, re.compile(rb"slurmstepd: error: \*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+ \*\*\*")),
)
# Bytes each ending's pattern cannot match without: lines holding none of them are not searched (Python's regex tries
# an alternation at every position: 19 ms for a 1 MB MLPerf result file, against well under 1 ms for these finds).
_NEEDS: dict[OutcomeKind, tuple[bytes, ...]] = {
    OutcomeKind.OUT_OF_MEMORY: (b"emory", b"EMORY", b"oom"),
    OutcomeKind.TIMEOUT: (b"TIME LIMIT", b"time limit"),
    OutcomeKind.CANCELLED: (b"CANCELLED AT",),
}
_SUBMISSION_KEY = re.compile(rb'"key": "(submission_[a-z]+)", "value": "([^"]*)"')
_SBATCH = re.compile(r"^#SBATCH\s+--?([A-Za-z0-9_-]+)(?:[= ]\s*(\S+))?")
_ASSIGNMENT = re.compile(r"^([A-Z][A-Z0-9_]*)=(\S+)")


@dataclass(frozen=True, slots=True)
class Ending:
    """How a log says its job ended: the kind, the line and the text it was read from."""

    kind: OutcomeKind
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class FileScan:
    """One pass over a file's bytes: their hash, how the job ended (if it says), its MLPerf submission keys."""

    sha256: str
    ending: Ending | None
    submission: Mapping[str, str]
    head: bytes


def folder_files(folder: Path) -> list[Path]:
    """Every file under the folder, by path; hidden files and folders (a leading dot) left out, links to folders
    not followed (a link loop would never end)."""
    found: list[Path] = []
    for top, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [Path(top) / n for n in names if not n.startswith(".")]
    return sorted(found)


class ContentScan:
    """The FileScan of bytes fed in order, a chunk at a time, so that it rides along another reader's pass (the
    parse's) and memory does not grow with the file: the hash, the first match of each ending (searched in whole
    lines; a line longer than MAX_LINE_BYTES is searched in pieces), the submission keys of the first MiB."""

    MAX_LINE_BYTES = 1 << 20

    def __init__(self) -> None:
        self.sha = hashlib.sha256()
        self.prefix = bytearray()  # the first SUBMISSION_BYTES, where the submission keys are
        self.carry = b""  # the last line, until its newline comes
        self.lines = 0  # newlines before `carry`
        self.endings: dict[OutcomeKind, Ending] = {}

    def feed(self, chunk: bytes) -> None:
        self.sha.update(chunk)
        if len(self.prefix) < SUBMISSION_BYTES:
            self.prefix += chunk[:SUBMISSION_BYTES - len(self.prefix)]
        data = self.carry + chunk
        cut = data.rfind(b"\n") + 1 if len(data) <= self.MAX_LINE_BYTES else len(data)
        self._search(data[:cut])
        self.carry = data[cut:]

    def finish(self) -> FileScan:
        self._search(self.carry)
        self.carry = b""
        ending = next((self.endings[kind] for kind, _ in _ENDINGS if kind in self.endings), None)
        submission = {k.decode(): v.decode(errors="replace") for k, v in _SUBMISSION_KEY.findall(bytes(self.prefix))}
        return FileScan(self.sha.hexdigest(), ending, submission, bytes(self.prefix[:64]))

    def _search(self, lines: bytes) -> None:
        for kind, pattern in _ENDINGS:
            if kind in self.endings or not any(needed in lines for needed in _NEEDS[kind]):
                continue
            if (m := pattern.search(lines)) is not None:
                start = lines.rfind(b"\n", 0, m.start()) + 1
                end = lines.find(b"\n", m.end())
                text = lines[start:end if end >= 0 else len(lines)].decode(errors="replace").strip()
                self.endings[kind] = Ending(kind, self.lines + lines.count(b"\n", 0, m.start()) + 1, text)
        self.lines += lines.count(b"\n")


def scan_file(path: Path, shown: str, limit: int | None) -> FileScan:
    """Read the (decompressed) file once, a chunk at a time: hash, ending, submission keys."""
    scan = ContentScan()
    read = 0
    with open_regular(path, shown) as handle:
        content = open_content(handle, shown)
        while chunk := content.read(SUBMISSION_BYTES):
            read += len(chunk)
            if limit and read > limit:
                raise ParseError(shown, None, f"larger than the limit of {limit // 2**20} MiB once decompressed")
            scan.feed(chunk)
    return scan.finish()


def is_config_file(relative: Path) -> bool:
    return relative.suffix.lower() in CONFIG_SUFFIXES or relative.name == "scaling.json"


def is_document(relative: Path) -> bool:
    return relative.suffix.lower() in DOCUMENT_SUFFIXES


def is_system_description(relative: Path) -> bool:
    """An MLPerf system description: systems/NAME.json."""
    return relative.suffix.lower() == ".json" and "systems" in relative.parts[:-1]


def is_job_table(head: bytes) -> bool:
    return head.startswith(SQLITE_MAGIC)


def config_settings(text: str) -> dict[str, str]:
    """The settings a Slurm or shell script states: `#SBATCH --nodes=4` and `TP_SIZE=4` lines."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if (m := _SBATCH.match(line.strip())) is not None:
            found[f"sbatch.{m.group(1)}"] = m.group(2) or "yes"
        elif (m := _ASSIGNMENT.match(line)) is not None:
            found[m.group(1)] = m.group(2)
    return found


def read_text(path: Path, shown: str) -> str:
    with open_regular(path, shown) as handle:
        return handle.read().decode("utf-8", errors="replace")


def read_json_object(path: Path, shown: str) -> dict[str, Any]:
    try:
        with open_regular(path, shown) as handle:
            value = json.loads(handle.read().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        raise ParseError(shown, line, f"not a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise ParseError(shown, 1, "not a JSON object")
    return value


def job_rows(path: Path, shown: str) -> Iterator[dict[str, Any]]:
    """The rows of llmb-run's job table, in job_id order, opened read-only (the file is never written, nothing is
    ATTACHed). Only a real table named `jobs` is read, never a view (a recursive view never ends; sorting it spilled
    to $TMPDIR at about 475 MiB/s), and the read is bounded: no temporary file (SQLite's temporary data stays in
    memory), at most JOB_TABLE_STEPS steps of SQLite's engine, MAX_JOB_ROWS rows and MAX_JOB_TABLE_BYTES of text."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ParseError(shown, None, f"cannot be opened as SQLite: {exc}") from None
    try:
        _bounded(conn)
        rows = _job_table_rows(conn, shown)
    except sqlite3.Error as exc:
        said = "it takes too long to read" if "interrupted" in str(exc) else str(exc)
        raise ParseError(shown, None, f"the job table cannot be read: {said}") from None
    finally:
        conn.close()
    yield from sorted(rows, key=lambda row: _sqlite_order(row.get("job_id")))


MAX_JOB_ROWS = 100_000  # llmb-run keeps one row per job launched: a team's whole history is thousands
MAX_JOB_TABLE_BYTES = 64 << 20  # text and blobs read, all cells together
MAX_CELL_BYTES = 1 << 20  # SQLite's own limit on one value (its default is 1 GB)
JOB_TABLE_STEPS = 200_000_000  # SQLite virtual-machine steps; 100,000 rows of llmb-run's 25 columns take ~10 M
_STEPS_PER_CHECK = 10_000


def _bounded(conn: sqlite3.Connection) -> None:
    """Keep a read of an untrusted SQLite file small: temporary data in memory, no function of the file's schema
    run, one value at most MAX_CELL_BYTES, and an end to the work after JOB_TABLE_STEPS steps."""
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA trusted_schema = OFF")
    conn.execute("PRAGMA query_only = ON")
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_CELL_BYTES)
    checks = iter(range(JOB_TABLE_STEPS // _STEPS_PER_CHECK))
    conn.set_progress_handler(lambda: next(checks, None) is None, _STEPS_PER_CHECK)


def _job_table_rows(conn: sqlite3.Connection, shown: str) -> list[dict[str, Any]]:
    kinds = [str(kind) for kind, sql in conn.execute(
        "SELECT type, sql FROM sqlite_master WHERE lower(name) = 'jobs' AND type IN ('table', 'view')")
        if not str(sql or "").upper().startswith("CREATE VIRTUAL")]
    if kinds and kinds != ["table"]:
        raise ParseError(shown, None, f"its jobs is a {kinds[0]}, not a table: only llmb-run's jobs table is read")
    if not kinds or not JOB_TABLE_COLUMNS <= {row[1] for row in conn.execute("PRAGMA table_info(jobs)")}:
        raise ParseError(shown, None, "an SQLite file without llmb-run's jobs table (job_id, slurm_state, "
                                      "model_name, dtype, scale, train_step_time_seconds)")
    cursor = conn.execute("SELECT * FROM jobs")  # no ORDER BY: a sort may spill to disk; sorted here instead
    names = [d[0] for d in cursor.description]
    rows: list[dict[str, Any]] = []
    size = 0
    while batch := cursor.fetchmany(1000):
        rows += (dict(zip(names, row, strict=True)) for row in batch)
        size += sum(len(v) for row in batch for v in row if isinstance(v, str | bytes))
        if len(rows) > MAX_JOB_ROWS or size > MAX_JOB_TABLE_BYTES:
            raise ParseError(shown, None, f"the job table holds more than {MAX_JOB_ROWS:,} rows or "
                                          f"{MAX_JOB_TABLE_BYTES >> 20} MiB of text; it was not read")
    return rows


def _sqlite_order(value: Any) -> tuple[int, Any]:
    """SQLite's order of values of any type: NULL, then numbers, text, blobs."""
    if value is None:
        return (0, 0)
    if isinstance(value, int | float):
        return (1, value)
    return (2, value) if isinstance(value, str) else (3, bytes(value))


_SLURM_KINDS = {"COMPLETED": OutcomeKind.COMPLETED, "TIMEOUT": OutcomeKind.TIMEOUT, "DEADLINE": OutcomeKind.TIMEOUT,
                "OUT_OF_MEMORY": OutcomeKind.OUT_OF_MEMORY, "CANCELLED": OutcomeKind.CANCELLED}
_PARSE_KINDS = {"invalid_grad_norm": OutcomeKind.NAN, "no_data": OutcomeKind.NO_STEPS, "no_log": OutcomeKind.NO_STEPS,
                "incomplete": OutcomeKind.FAILED}


def job_outcome(row: Mapping[str, Any]) -> tuple[OutcomeKind, str | None]:
    """A job-table row's outcome: its Slurm state, unless the parse of its log says the figures are unusable."""
    state = str(row.get("slurm_state") or "").split()[0:1]
    base = state[0].upper() if state else ""
    parse = str(row.get("perf_parse_status") or "")
    kind = _SLURM_KINDS.get(base, OutcomeKind.FAILED if base else OutcomeKind.NO_STEPS)
    if kind is OutcomeKind.COMPLETED and parse in _PARSE_KINDS:
        kind = _PARSE_KINDS[parse]
    reason = None if kind is OutcomeKind.COMPLETED else f"slurm state {base or 'not recorded'}, parse status " \
                                                        f"{parse or 'not recorded'}"
    return kind, reason
