"""The store: an engine from a URL, one transaction per write, queries returning Polars frames.

No connection is held between calls (NullPool), so another process can take DuckDB's file lock whenever
no query of ours is running. Driver exceptions become perfledger errors here and nowhere else.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import polars as pl
import sqlalchemy as sa
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.pool import NullPool

from perfledger import schema
from perfledger.errors import ReadOnlyStore, StoreBusy, StoreError, StoreNotInitialised
from perfledger.records import STEP_SCHEMA, ResultRecord, SaveResult
from perfledger.settings import load_settings

STEP_COLUMNS = tuple(STEP_SCHEMA)
RESULT_FIELDS = tuple(f for f in ResultRecord.__dataclass_fields__)


# ---------------------------------------------------------------------------------------------- engine


def engine_from_url(url: str | None = None) -> Engine:
    """An engine for the store at `url` (else PERFLEDGER_DB_URL, else the bundled DuckDB file)."""
    url = url or load_settings().db_url
    sa_url = sa.make_url(url)
    if sa_url.get_backend_name() == "duckdb" and sa_url.database not in (None, "", ":memory:"):
        Path(sa_url.database).parent.mkdir(parents=True, exist_ok=True)
    try:
        return sa.create_engine(sa_url, poolclass=NullPool)
    except Exception as exc:  # a bad URL or a missing driver: say which URL
        raise StoreError(mask_url(url), str(exc)) from exc


def lean_process() -> None:
    """For a command-line process only: make `import pandas` fail, so DuckDB's client never loads it.

    duckdb's Python client imports pandas, when installed, at the first query that has parameters (to
    recognise DataFrame arguments): 0.25 s and about 90 MB of resident memory that no CLI command uses.
    The dashboard needs pandas (Streamlit does), so only the `python -m` entry points call this.
    """
    sys.modules.setdefault("pandas", None)  # type: ignore[assignment]


def exit_process(code: int) -> NoReturn:
    """For a command-line process only: exit without Python's teardown of every module and object.

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


def mask_url(url: str) -> str:
    """The URL with any password replaced by ***, for sidebars and messages."""
    try:
        return sa.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


def is_duckdb(engine: Engine) -> bool:
    return engine.dialect.name == "duckdb"


_HOLDER = re.compile(r"Conflicting lock is held in (\S+)(?: \(PID (\d+)\))?")


_LOCK_WORD = re.compile(r"\block\b", re.IGNORECASE)  # a word: DuckDB's out-of-memory error says "block"


# DuckDB 1.5 lets one instance per process hold a file. A connection opened while the instance of another
# connection of this process to the same file is still closing meets it ("Unique file handle conflict"): it is
# waited out like another process's lock. Seen as a second error on the Runs page in the browser tests (twice in
# seven runs before this): Streamlit's fast reruns start a session's new script run while the old one may still
# be closing.
_SAME_FILE_IN_PROCESS = "Unique file handle conflict"


def _lock_holder(message: str) -> str | None:
    if _SAME_FILE_IN_PROCESS in message:
        return "another connection of this process"
    if _LOCK_WORD.search(message) is None:
        return None
    m = _HOLDER.search(message)
    if m is None:
        return "another process"
    return f"{m.group(1)} (PID {m.group(2)})" if m.group(2) else m.group(1)


@contextmanager
def _translated(engine: Engine) -> Iterator[None]:
    try:
        yield
    except DBAPIError as exc:
        holder = _lock_holder(str(exc.orig))
        if holder is not None and is_duckdb(engine):
            raise StoreBusy(mask_url(str(engine.url)), holder) from exc
        reason = str(exc.orig).splitlines()[0]
        if _MISSING_TABLE.search(reason):
            raise StoreNotInitialised(mask_url(str(engine.url)),
                                      reason + " (is the store initialised? run: python -m perfledger init)") from exc
        raise StoreError(mask_url(str(engine.url)), reason) from exc


_MISSING_TABLE = re.compile(r"Table with name \w+ does not exist|relation \"\w+\" does not exist")


@contextmanager
def _connection(engine: Engine, *, write: bool) -> Iterator[Connection]:
    """A connection (a transaction when writing), retrying DuckDB's file lock for a bounded time."""
    if write and load_settings().read_only:
        raise ReadOnlyStore(mask_url(str(engine.url)))
    deadline = time.monotonic() + load_settings().lock_wait_s
    delay = 0.02
    while True:
        try:
            with _translated(engine):
                conn = engine.connect()
            break
        except StoreBusy:
            if time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
    with _translated(engine), conn:
        if write:
            with conn.begin():
                yield conn
        else:
            yield conn


# ------------------------------------------------------------------------------------------- schema


def create_schema(engine: Engine) -> None:
    with _connection(engine, write=True) as conn:
        schema.metadata.create_all(conn)


def drop_schema(engine: Engine) -> None:
    with _connection(engine, write=True) as conn:
        schema.metadata.drop_all(conn)


def has_schema(engine: Engine) -> bool:
    with _connection(engine, write=False) as conn:
        return sa.inspect(conn).has_table("result")


# --------------------------------------------------------------------------------------------- init


@dataclass(frozen=True, slots=True)
class InitReport:
    inserted: dict[str, int]
    unresolved: tuple[Any, ...] = ()  # seed.Unresolved rows: file, line, name, kind, nearest

    @property
    def changed(self) -> bool:
        return any(self.inserted.values())


def init_store(engine: Engine, data_dir: Path) -> InitReport:
    """Create the tables and load data/ into them, in one transaction; a second call inserts nothing."""
    from perfledger.seed import load_seed  # the seed module reads CSVs; import here keeps queries light

    seed = load_seed(data_dir)
    create_schema(engine)
    inserted: dict[str, int] = {}
    with _connection(engine, write=True) as conn:
        inserted["source"] = _insert_missing(conn, schema.source, seed.sources)
        inserted["accelerator"] = _insert_missing(conn, schema.accelerator, seed.accelerators)
        inserted["model"] = _insert_missing(conn, schema.model, seed.models)
        inserted["result"] = _insert_results(conn, seed.results)
    return InitReport(inserted, tuple(seed.unresolved))


def rebuild_store(engine: Engine, data_dir: Path) -> InitReport:
    """Drop every table and build the store again from data/ (ingested runs are lost: say so first)."""
    drop_schema(engine)
    return init_store(engine, data_dir)


def _insert_missing(conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> int:
    if not rows:
        return 0
    existing = set(conn.execute(sa.select(table.c.id)).scalars())
    fresh = [dict(r) for r in rows if r["id"] not in existing]
    if fresh:
        conn.execute(_insert_new(conn, table), fresh)
    return len(fresh)


def _insert_new(conn: Connection, table: sa.Table) -> sa.Insert:
    """An INSERT that, on PostgreSQL, skips a row another writer committed since we looked (same key).

    DuckDB has one writer at a time (its file lock), so there the plain INSERT cannot meet such a row.
    """
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table).on_conflict_do_nothing()
    return sa.insert(table)


def result_row_key(record: ResultRecord) -> str:
    """SHA-256 of the record's canonical JSON: the same number from the same place is stored once."""
    payload = json.dumps(asdict(record), sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def _result_row(record: ResultRecord) -> dict[str, Any]:
    row = asdict(record)
    row["row_key"] = result_row_key(record)
    return row


def _insert_results(conn: Connection, records: Sequence[ResultRecord]) -> int:
    if not records:
        return 0
    rows = {r["row_key"]: r for r in map(_result_row, records)}
    existing = set(conn.execute(sa.select(schema.result.c.row_key)).scalars())
    fresh = [row for key, row in rows.items() if key not in existing]
    if fresh:
        conn.execute(_insert_new(conn, schema.result), fresh)
    return len(fresh)


def add_results(engine: Engine, records: Sequence[ResultRecord], *, sources: Sequence[Mapping[str, Any]] = ()) -> int:
    """Store standalone results (a claims CSV, say) and any new sources they cite, in one transaction."""
    with _connection(engine, write=True) as conn:
        _insert_missing(conn, schema.source, sources)
        return _insert_results(conn, records)


# -------------------------------------------------------------------------------------------- runs


@dataclass(frozen=True, slots=True)
class RunHeader:
    format: str
    file_name: str
    ingested_at: datetime
    source_id: str | None = None


@dataclass(frozen=True, slots=True)
class RunFinal:
    """What is known about a run only after its last byte was read (the hash included)."""

    content_sha256: str
    file_bytes: int
    config: Mapping[str, Any]
    warnings: Sequence[str]
    summary: Mapping[str, Any] | None
    skipped_lines: int
    results: Sequence[ResultRecord] = ()
    sources: Sequence[Mapping[str, Any]] = ()


class _AlreadyStored(Exception):
    def __init__(self, run_id: int) -> None:
        self.run_id = run_id


def find_run(engine: Engine, content_sha256: str) -> int | None:
    with _connection(engine, write=False) as conn:
        return conn.scalar(sa.select(schema.run.c.id).where(schema.run.c.content_sha256 == content_sha256))


def save_run(
    engine: Engine,
    header: RunHeader,
    step_batches: Iterable[pl.DataFrame],
    finish: Callable[[], RunFinal],
) -> SaveResult:
    """Store one run, its steps and its results in one transaction; the same bytes again are a no-op.

    The file is read once: steps arrive as batches while the content hash is computed, so the run row is
    written under a placeholder key and given its hash by `finish`, after the last batch. If the hash is
    already stored, the transaction rolls back and the existing run is returned. Any exception rolls
    everything back, so a file that fails halfway leaves nothing.
    """
    try:
        with _connection(engine, write=True) as conn:
            run_id = _insert_run(conn, header)
            with _BulkWriter(conn, schema.step, increasing="step") as steps:
                n_steps = sum(steps.add(_step_rows(run_id, batch)) for batch in step_batches)
            final = finish()
            existing = conn.scalar(
                sa.select(schema.run.c.id).where(schema.run.c.content_sha256 == final.content_sha256)
            )
            if existing is not None:
                raise _AlreadyStored(existing)
            _finish_run(conn, run_id, n_steps, final)
    except _AlreadyStored as dup:
        return SaveResult(dup.run_id, created=False)
    except StoreError as exc:
        if isinstance(exc.__cause__, IntegrityError):  # a racing writer stored the same bytes first
            final = finish()
            existing = find_run(engine, final.content_sha256)
            if existing is not None:
                return SaveResult(existing, created=False)
        raise
    return SaveResult(run_id, created=True)


def _insert_run(conn: Connection, header: RunHeader) -> int:
    placeholder = "pending-" + hashlib.sha256(f"{header.file_name}{time.time_ns()}".encode()).hexdigest()[:48]
    values = asdict(header) | {"content_sha256": placeholder, "config": "{}", "warnings": "[]", "n_steps": 0,
                               "skipped_lines": 0}
    return int(conn.execute(sa.insert(schema.run).values(**values).returning(schema.run.c.id)).scalar_one())


def _finish_run(conn: Connection, run_id: int, n_steps: int, final: RunFinal) -> None:
    conn.execute(
        sa.update(schema.run)
        .where(schema.run.c.id == run_id)
        .values(
            content_sha256=final.content_sha256,
            file_bytes=final.file_bytes,
            config=_json(final.config),
            warnings=_json(list(final.warnings)),
            summary=_json(final.summary) if final.summary is not None else None,
            n_steps=n_steps,
            skipped_lines=final.skipped_lines,
        )
    )
    _insert_missing(conn, schema.source, final.sources)
    _insert_results(conn, [_with_run(r, run_id) for r in final.results])


def _with_run(record: ResultRecord, run_id: int) -> ResultRecord:
    from dataclasses import replace

    return replace(record, run_id=run_id)


def _json(value: Any) -> str:
    return json.dumps(_finite(value), sort_keys=True, default=_json_default, allow_nan=False)


def _finite(value: Any) -> Any:
    """NaN and infinities become null: JSON has no spelling for them, and PostgreSQL refuses them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    return str(value)


def _step_rows(run_id: int, batch: pl.DataFrame) -> pl.DataFrame:
    frame = batch.select(STEP_COLUMNS).with_columns(pl.col(pl.Float64).fill_nan(None))  # missing is NULL on both
    return frame.select(pl.lit(run_id, dtype=pl.Int64).alias("run_id"), *STEP_COLUMNS)


# DuckDB's memory for one INSERT of spooled steps, and the threads that share it (DuckDB 1.5.6; every step column
# filled with random doubles, the costliest case; a test keeps a tenth of the limit to spare). Inserting in
# parallel, each thread fills row groups of its own: two threads need 24 MB for a run of 250k steps or more (60
# sizes up to 2.5 M passed under 28 MB) but up to 35 MB for one of 100k-246k steps (40 of 60 such sizes failed
# under 28 MB); one thread needs 13 MB at any size (40 sizes up to 2.5 M passed under 16 MB). So a run of fewer
# than four row groups is inserted on one thread (240k steps: 0.25 s against 0.21 on two), a bigger one on two
# (2.45 M steps: 1.04 s against 1.50 on one). More threads need more: 16, a team server's default of one per
# core, failed under 64 MB. DuckDB keeps written blocks cached up to the limit: 64 -> 40 MB lowered the 1 GB
# Megatron log's peak RSS by about 25 MB at the same speed.
DUCKDB_INSERT_MEMORY = "32MB"
DUCKDB_INSERT_THREADS = 2
PARALLEL_INSERT_MIN_ROWS = 4 * 122_880  # DuckDB's row group size
# After the insert, the limit is lowered to this for a moment: DuckDB then drops the blocks it keeps cached (the
# insert wrote them to the file already), so the run's summary, computed next, does not sit on them. The 1 GB
# Megatron log's peak RSS went from 276-306 to 248-266 MB (4 runs each).
DUCKDB_EVICT_MEMORY = "16MB"


class _BulkWriter:
    """Appends frames to one table inside the caller's transaction, in memory that does not grow with the rows.

    PostgreSQL: COPY per frame (the server holds the rows). DuckDB keeps a transaction's appended rows in memory
    until it commits, so frames are spooled to Parquet files and inserted once the last frame is in, by one
    INSERT ... SELECT from the files, which DuckDB writes to its file row group by row group (under a memory
    limit). Inserting while the parser still runs overlapped the two peaks: the 1 GB Megatron log peaked
    about 30 MB higher, for a gain within these machines' noise (5% at most). Reading the spool with DuckDB's
    own Parquet reader also keeps pyarrow (about 100 MB resident) out of an ingest process.

    `increasing` names a column that, when the frames hold it in strictly increasing order, orders every read
    of the rows (a run's steps are read ORDER BY step): the order they are stored in then cannot show, so
    DuckDB may insert them in parallel (preserve_insertion_order off: 2.5 M steps 2.7 s -> 1.1 s). Steps
    that repeat or go back (MLPerf logs) are inserted in the log's order, which orders ties.
    """

    def __init__(self, conn: Connection, table: sa.Table, *, increasing: str | None = None) -> None:
        self.conn = conn
        self.table = table
        self._spool: tempfile.TemporaryDirectory[str] | None = None
        self._spooled: list[Path] = []
        self._columns_seen: list[str] = []
        self._increasing = increasing
        self._last: Any = None
        self._order_shows = increasing is None
        self._threads: Any = None
        self._rows = 0

    def __enter__(self) -> _BulkWriter:
        if self.conn.dialect.name == "duckdb":
            self._spool = tempfile.TemporaryDirectory(prefix="perfledger-")
            # Without a limit DuckDB keeps every written block cached: ~50 B per row of resident memory.
            self.conn.exec_driver_sql(f"SET memory_limit = '{DUCKDB_INSERT_MEMORY}'")
            self._threads = self.conn.exec_driver_sql("SELECT current_setting('threads')").scalar()
        return self

    def add(self, frame: pl.DataFrame) -> int:
        if frame.height == 0:
            return 0
        self._columns_seen = self._columns_seen or frame.columns
        if self._increasing is not None and not self._order_shows:
            self._order_shows = not _strictly_increasing(frame[self._increasing], after=self._last)
            self._last = frame[self._increasing][-1]
        if self._spool is not None:
            path = Path(self._spool.name) / f"{len(self._spooled):08d}.parquet"
            frame.write_parquet(path, compression="lz4", statistics=False)
            self._spooled.append(path)
            self._rows += frame.height
        elif self.conn.dialect.name == "postgresql":
            cursor = self.conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
            with cursor.copy(f"COPY {self._name()} ({self._quoted(frame.columns)}) FROM STDIN") as copy:
                for row in frame.iter_rows():
                    copy.write_row(row)
        else:
            self.conn.execute(sa.insert(self.table), frame.to_dicts())
        return frame.height

    def _insert_spooled(self) -> None:
        """One INSERT of the spooled files, in the caller's transaction."""
        if not self._spooled:
            return
        files = ", ".join(_sql_text(path) for path in self._spooled)
        cols = self._quoted(self._columns_seen)
        threads = DUCKDB_INSERT_THREADS if self._rows >= PARALLEL_INSERT_MIN_ROWS else 1
        self.conn.exec_driver_sql(f"SET threads = {threads}")
        if not self._order_shows:
            self.conn.exec_driver_sql("SET preserve_insertion_order = false")
        self.conn.exec_driver_sql(f"INSERT INTO {self._name()} ({cols}) SELECT {cols} FROM read_parquet([{files}])")
        self.conn.exec_driver_sql("RESET preserve_insertion_order")
        self._spooled = []

    def __exit__(self, exc_type: object, *_: object) -> None:
        if self._spool is None:
            return
        with self._spool:
            if exc_type is None:  # else the transaction is rolled back and its connection closed (NullPool)
                self._insert_spooled()
                self._restore_settings()

    def _restore_settings(self) -> None:
        self.conn.exec_driver_sql(f"SET memory_limit = '{DUCKDB_EVICT_MEMORY}'")
        # RESET alone puts the setting back but leaves DuckDB 1.5.6's buffer pool at the lowered limit, for every
        # later query of the database in this process: the limit is set again by value.
        self.conn.exec_driver_sql("RESET memory_limit")
        default = self.conn.exec_driver_sql("SELECT current_setting('memory_limit')").scalar()
        self.conn.exec_driver_sql(f"SET memory_limit = '{default}'")
        self.conn.exec_driver_sql(f"SET threads = {int(self._threads)}")

    def _name(self) -> str:
        return self.conn.dialect.identifier_preparer.quote(self.table.name)

    def _quoted(self, columns: Sequence[str]) -> str:
        return ", ".join(self.conn.dialect.identifier_preparer.quote(c) for c in columns)


def _strictly_increasing(values: pl.Series, *, after: Any) -> bool:
    """Whether values rise strictly, from above `after` (None: no bound); a null breaks the order."""
    if values.null_count():
        return False
    rising = values.len() < 2 or bool((values.diff(null_behavior="drop") > 0).all())
    return rising and (after is None or values[0] > after)


# The external sort's memory. The 1 GB MLPerf bench log (3.2 M steps, repeated step numbers) peaked at 293-299 MB
# with 64 MB and at 250-264 MB with 32, 0.5 s slower in 21 s (2 runs each); its 100 MB log is the same either way.
SORT_MEMORY = "32MB"


def sort_parquet(files: Sequence[Path], column: str, out: Path) -> Path:
    """The rows of Parquet files (columns matched by name) sorted by `column`, written to `out`; ties keep the
    order of the files' names, then of their rows. An external sort in an in-memory DuckDB that spills to disk
    past SORT_MEMORY, so its memory does not grow with the rows."""
    import duckdb  # here, not at the top: a store on PostgreSQL never loads DuckDB (about 50 MB resident)

    names = ", ".join(_sql_text(path) for path in files)
    key = '"' + column.replace('"', '""') + '"'
    with duckdb.connect() as con:
        # Two threads: DuckDB's threads share the memory limit, and many of them under 64 MB fail. Ties are
        # ordered by the file's place in the list and the row's in its file (numbers: the file's name as a key
        # made every row carry its path through the sort).
        con.execute(f"SET threads = 2; SET memory_limit = '{SORT_MEMORY}'; "
                    f"SET temp_directory = {_sql_text(out.parent / (out.name + '.spill'))}")
        con.execute(f"COPY (SELECT * EXCLUDE (file_row_number) FROM read_parquet([{names}], "
                    "union_by_name = true, file_row_number = true) "
                    f"ORDER BY {key}, file_index, file_row_number) TO {_sql_text(out)} (FORMAT parquet)")
    return out


def _sql_text(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def delete_run(engine: Engine, run_id: int) -> bool:
    """Remove a run, its steps and the results it produced, in one transaction."""
    with _connection(engine, write=True) as conn:
        conn.execute(sa.delete(schema.result).where(schema.result.c.run_id == run_id))
        conn.execute(sa.delete(schema.step).where(schema.step.c.run_id == run_id))
        gone = conn.execute(sa.delete(schema.run).where(schema.run.c.id == run_id)).rowcount
    return bool(gone)


# --------------------------------------------------------------------------------------------- copy

COPY_BATCH_ROWS = 50_000


def copy_store(src: Engine, dst: Engine) -> dict[str, int]:
    """Copy every table of the ledger at `src` into the empty store at `dst`, ids kept; rows per table.

    The destination's tables are created when missing and must hold no row. All writes happen in one
    transaction on `dst`: the row counts are checked against the source's before it commits (a mismatch is
    a StoreError and nothing is kept), and the id sequences of `run` and `result` are moved past the copied
    ids, so the next ingest on the destination does not collide with them.
    """
    if not has_schema(src):
        raise StoreError(mask_url(str(src.url)), "it holds no perfledger tables; nothing to copy")
    create_schema(dst)
    held = {t: n for t, n in counts(dst).items() if n}
    if held:
        rows = ", ".join(f"{n} {t}" for t, n in held.items())
        raise StoreError(mask_url(str(dst.url)),
                         f"the destination already holds rows ({rows}); copy into an empty store")
    with _connection(src, write=False) as read, _connection(dst, write=True) as write:
        expected = {t.name: int(read.scalar(sa.select(sa.func.count()).select_from(t)) or 0) for t in schema.TABLES}
        for table in schema.TABLES:
            with _BulkWriter(write, table) as rows:
                for frame in _frames_in_batches(read, sa.select(table).order_by(*_copy_order(table))):
                    rows.add(frame)
        copied = {t.name: int(write.scalar(sa.select(sa.func.count()).select_from(t)) or 0) for t in schema.TABLES}
        if copied != expected:
            diff = ", ".join(f"{t}: {n} read, {copied[t]} written" for t, n in expected.items() if n != copied[t])
            raise StoreError(mask_url(str(dst.url)), f"row counts differ after the copy ({diff}); nothing was kept")
        for table in (schema.run, schema.result):
            _advance_id_sequence(write, table)
    return copied


def _copy_order(table: sa.Table) -> list[sa.ColumnElement[Any]]:
    return list(table.primary_key.columns) or [table.c.run_id, table.c.step]


def _frames_in_batches(conn: Connection, stmt: sa.Select[Any], size: int = COPY_BATCH_ROWS) -> Iterator[pl.DataFrame]:
    """A select's rows as frames of at most `size` rows, in schema dtypes, without reading them all at once."""
    target = {c.name: _polars_type(c) for c in stmt.selected_columns}
    if conn.dialect.name == "duckdb":
        reader = conn.execute(stmt).cursor.to_arrow_reader(size)  # type: ignore[union-attr]
        for batch in reader:
            yield _cast(pl.from_arrow(batch), target)  # type: ignore[arg-type]
        return
    result = conn.execution_options(stream_results=True, yield_per=size).execute(stmt)
    for part in result.partitions(size):
        yield pl.DataFrame([tuple(r) for r in part], schema=target, orient="row")


def _cast(frame: pl.DataFrame, target: Mapping[str, pl.DataType]) -> pl.DataFrame:
    return frame.with_columns(
        pl.col(name).cast(dtype, strict=False) for name, dtype in target.items() if frame.schema[name] != dtype
    )


_SEQUENCE_IN_DEFAULT = re.compile(r"nextval\('([A-Za-z0-9_.]+)'\)")


def _advance_id_sequence(conn: Connection, table: sa.Table) -> None:
    """Move the sequence behind `table.id` past the largest stored id (after rows were inserted with ids)."""
    top = int(conn.scalar(sa.select(sa.func.coalesce(sa.func.max(table.c.id), 0))) or 0)
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT setval(pg_get_serial_sequence(:t, 'id'), :v, :called)"),
                     {"t": table.name, "v": max(top, 1), "called": top > 0})
    elif conn.dialect.name == "duckdb" and top > 0:
        default = conn.scalar(sa.text("SELECT column_default FROM duckdb_columns() "
                                      "WHERE table_name = :t AND column_name = 'id'"), {"t": table.name})
        m = _SEQUENCE_IN_DEFAULT.search(str(default or ""))
        if m is None:
            return
        seq = m.group(1)  # a plain identifier (the pattern allows nothing else)
        current = int(conn.scalar(sa.text(f"SELECT nextval('{seq}')")) or 0)  # DuckDB has no setval
        if current < top:
            conn.execute(sa.text(f"SELECT max(nextval('{seq}')) FROM range({int(top - current)})"))


# ------------------------------------------------------------------------------------------ queries

_PL_TYPES: dict[type, pl.DataType] = {
    sa.Integer: pl.Int64(),
    sa.Float: pl.Float64(),
    sa.Boolean: pl.Boolean(),
    sa.String: pl.String(),
    sa.Text: pl.String(),
    sa.DateTime: pl.Datetime("us", "UTC"),
}


def _polars_type(column: sa.ColumnElement[Any]) -> pl.DataType:
    for sa_type, pl_type in _PL_TYPES.items():
        if isinstance(column.type, sa_type):
            return pl_type
    return pl.String()


def _frame(conn: Connection, stmt: sa.Select[Any]) -> pl.DataFrame:
    """Run a select and return a frame whose dtypes follow the schema, the same on every engine."""
    target = {c.name: _polars_type(c) for c in stmt.selected_columns}
    if conn.dialect.name == "duckdb":
        frame = conn.execute(stmt).cursor.pl()  # type: ignore[union-attr]  # Arrow, no row objects
    else:
        frame = pl.read_database(stmt, conn, infer_schema_length=None)
    if frame.height == 0:
        return pl.DataFrame(schema=target)
    return frame.with_columns(
        pl.col(name).cast(dtype, strict=False) for name, dtype in target.items() if frame.schema[name] != dtype
    )


def query(engine: Engine, stmt: sa.Select[Any]) -> pl.DataFrame:
    with _connection(engine, write=False) as conn:
        return _frame(conn, stmt)


def _results_select() -> sa.Select[Any]:
    r, s, a, m = schema.result, schema.source, schema.accelerator, schema.model
    return (
        sa.select(
            *[c for c in r.c if c.name != "row_key"],
            s.c.kind.label("source_kind"),
            s.c.title.label("source_title"),
            s.c.url.label("source_url"),
            s.c.date.label("source_date"),
            a.c.name.label("accelerator_name"),
            a.c.vendor.label("accelerator_vendor"),
            m.c.name.label("model_name"),
        )
        .select_from(
            r.outerjoin(s, r.c.source_id == s.c.id)
            .outerjoin(a, r.c.accelerator_id == a.c.id)
            .outerjoin(m, r.c.model_id == m.c.id)
        )
        .order_by(r.c.id)
    )


def results(
    engine: Engine,
    *,
    metric: str | Sequence[str] | None = None,
    model_ids: Sequence[str] | None = None,
    accelerator_ids: Sequence[str] | None = None,
    source_ids: Sequence[str] | None = None,
    run_id: int | None = None,
    columns: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Result rows with their source, accelerator and model names; every filter is a bound parameter.

    `columns` keeps only those (in the table's order): a page that reads a third of them fetches a third.
    """
    r = schema.result
    stmt = _results_select()
    if columns is not None:
        unknown = set(columns) - {c.name for c in stmt.selected_columns}
        if unknown:
            raise ValueError(f"no result column named {', '.join(sorted(unknown))}")
        stmt = stmt.with_only_columns(*(c for c in stmt.selected_columns if c.name in set(columns)))
    if metric is not None:
        stmt = stmt.where(r.c.metric.in_([metric] if isinstance(metric, str) else list(metric)))
    if model_ids is not None:
        stmt = stmt.where(r.c.model_id.in_(list(model_ids)))
    if accelerator_ids is not None:
        stmt = stmt.where(r.c.accelerator_id.in_(list(accelerator_ids)))
    if source_ids is not None:
        stmt = stmt.where(r.c.source_id.in_(list(source_ids)))
    if run_id is not None:
        stmt = stmt.where(r.c.run_id == run_id)
    return query(engine, stmt)


def result_counts(engine: Engine, by: str) -> pl.DataFrame:
    """Result rows and distinct sources per value of `by` (source_kind or a result column), counted in SQL."""
    r, src = schema.result, schema.source
    column = src.c.kind if by == "source_kind" else r.c[by]
    stmt = (sa.select(column.label(by), sa.func.count().label("result rows"),
                      sa.func.count(sa.distinct(r.c.source_id)).label("sources"))
            .select_from(r.outerjoin(src, r.c.source_id == src.c.id))
            .group_by(column))
    return query(engine, stmt)


def _accelerators_select() -> sa.Select[Any]:
    return sa.select(schema.accelerator).order_by(schema.accelerator.c.id)


def _models_select() -> sa.Select[Any]:
    return sa.select(schema.model).order_by(schema.model.c.id)


def accelerators(engine: Engine) -> pl.DataFrame:
    return query(engine, _accelerators_select())


def models(engine: Engine) -> pl.DataFrame:
    return query(engine, _models_select())


def catalog_rows(engine: Engine, model_id: str | None, accelerator_id: str | None
                 ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The model's and the accelerator's catalog rows (None where the id is None or unknown), through one
    connection and without Arrow: an ingest process that reads two rows should not load pyarrow (~40 MB)."""
    if model_id is None and accelerator_id is None:
        return None, None
    wanted = [(schema.model, model_id), (schema.accelerator, accelerator_id)]
    with _connection(engine, write=False) as conn:
        found = [conn.execute(sa.select(table).where(table.c.id == ident)).mappings().first()
                 if ident is not None else None for table, ident in wanted]
    return tuple(dict(row) if row is not None else None for row in found)  # type: ignore[return-value]


def catalog(engine: Engine) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(models, accelerators) through one connection: opening a DuckDB connection costs about 10 ms, as much as
    reading both tables."""
    with _connection(engine, write=False) as conn:
        return _frame(conn, _models_select()), _frame(conn, _accelerators_select())


def sources(engine: Engine) -> pl.DataFrame:
    """Every source with the number of result rows it backs."""
    s, r = schema.source, schema.result
    n = sa.select(r.c.source_id, sa.func.count().label("n_results")).group_by(r.c.source_id).subquery()
    stmt = (
        sa.select(*s.c, sa.func.coalesce(n.c.n_results, 0).label("n_results"))
        .select_from(s.outerjoin(n, n.c.source_id == s.c.id))
        .order_by(s.c.id)
    )
    return query(engine, stmt)


def has_data(engine: Engine) -> bool:
    """True when any result or run is stored; False when there is none or the tables do not exist yet.

    One EXISTS query: the pages ask this on every render (counting rows and inspecting the schema took 0.15 s).
    """
    stmt = sa.select(sa.or_(sa.exists(sa.select(schema.result.c.id)), sa.exists(sa.select(schema.run.c.id))))
    try:
        with _connection(engine, write=False) as conn:
            return bool(conn.scalar(stmt))
    except StoreNotInitialised:
        return False


def counts(engine: Engine) -> dict[str, int]:
    """Row counts per table: what the ledger holds."""
    with _connection(engine, write=False) as conn:
        if not sa.inspect(conn).has_table("result"):
            return {t.name: 0 for t in schema.TABLES}
        return {t.name: int(conn.scalar(sa.select(sa.func.count()).select_from(t)) or 0) for t in schema.TABLES}


@dataclass(frozen=True, slots=True)
class RunRow:
    id: int
    content_sha256: str
    format: str
    file_name: str
    file_bytes: int | None
    ingested_at: datetime
    n_steps: int
    skipped_lines: int
    config: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    source_id: str | None = None
    note: str | None = None


def run(engine: Engine, run_id: int) -> RunRow | None:
    with _connection(engine, write=False) as conn:
        row = conn.execute(sa.select(schema.run).where(schema.run.c.id == run_id)).mappings().first()
    if row is None:
        return None
    data = dict(row)
    return RunRow(
        **{k: data[k] for k in ("id", "content_sha256", "format", "file_name", "file_bytes")},
        ingested_at=_utc(data["ingested_at"]),
        n_steps=data["n_steps"],
        skipped_lines=data["skipped_lines"],
        config=json.loads(data["config"] or "{}"),
        warnings=json.loads(data["warnings"] or "[]"),
        summary=json.loads(data["summary"]) if data["summary"] else None,
        source_id=data["source_id"],
        note=data["note"],
    )


RUN_LIST_FIELDS = {
    "model": ("config", "model"),
    "accelerator": ("config", "accelerator"),
    "n_devices": ("config", "n_devices"),
    "precision": ("config", "precision"),
    "step_time_s_median": ("summary", "step_time_s_median"),
    "tokens_per_s_per_device": ("summary", "tokens_per_s_per_device"),
    "model_tflops_per_device": ("summary", "model_tflops_per_device"),
    "mfu": ("summary", "mfu"),
    "jitter_cv": ("summary", "jitter_cv"),
}
_RUN_LIST_TYPES = {"n_devices": pl.Int64()} | dict.fromkeys(
    ("step_time_s_median", "tokens_per_s_per_device", "model_tflops_per_device", "mfu", "jitter_cv"), pl.Float64()
)


def runs(engine: Engine) -> pl.DataFrame:
    """Every ingested run, newest first, with its configuration and steady-state figures flattened."""
    r = schema.run
    base = query(
        engine,
        sa.select(r.c.id, r.c.file_name, r.c.format, r.c.ingested_at, r.c.n_steps, r.c.skipped_lines, r.c.config, r.c.summary)
        .order_by(r.c.id.desc()),
    )
    blobs = {
        "config": [json.loads(v or "{}") for v in base["config"]],
        "summary": [json.loads(v) if v else {} for v in base["summary"]],
    }
    extra = {
        name: pl.Series(name, [blobs[blob][i].get(key) for i in range(base.height)], dtype=_RUN_LIST_TYPES.get(name, pl.String()), strict=False)
        for name, (blob, key) in RUN_LIST_FIELDS.items()
    }
    return base.drop("config", "summary").with_columns(**extra)


def steps(engine: Engine, run_id: int) -> pl.DataFrame:
    s = schema.step
    stmt = sa.select(*[s.c[name] for name in STEP_COLUMNS]).where(s.c.run_id == run_id).order_by(s.c.step)
    return query(engine, stmt)


def step_times(engine: Engine, run_id: int) -> pl.DataFrame:
    """Only the columns the steady-state rule needs, for big runs."""
    s = schema.step
    stmt = sa.select(s.c.step, s.c.step_time_s, s.c.tokens).where(s.c.run_id == run_id).order_by(s.c.step)
    return query(engine, stmt)


def _utc(value: datetime) -> datetime:
    """The same instant in UTC, whatever time zone the engine's session uses (PostgreSQL: the server's)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
