"""One ingest path for the CLI and the browser: bytes -> gunzip -> size limit -> detect -> parse -> store.

The file is read once, in chunks: each chunk's steps go to the store inside one transaction while the
content hash is computed, so memory does not grow with file size and a failure leaves nothing stored.
`preview` runs the same path without a store write, for the page's preview-before-commit.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import itertools
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import polars as pl

from ingest.detect import WIDE_HEAD_BYTES, detect_head
from ingest.parsers.base import LogParser
from ingest.summary import CatalogRows, RunSummary, resolve_config, summarize
from ingest.text import clean_text, iter_text_chunks
from perfledger import store
from perfledger.errors import FileTooLarge, ParseError, PerfledgerError
from perfledger.records import ParseSummary, RunConfig, SaveResult
from perfledger.vocabulary import LogFormat

GZIP_MAGIC = b"\x1f\x8b"
T = TypeVar("T")
U = TypeVar("U")
V = TypeVar("V")
_STEADY_COLUMNS = ("step", "step_time_s", "tokens")
_REPORTED_COLUMNS = ("reported_tflops_per_device", "reported_mfu", "reported_tokens_per_s_per_device")


@dataclass(frozen=True, slots=True)
class IngestOutcome:
    """What happened to one file: stored (created or already there), with its summary."""

    file_name: str
    format: LogFormat
    run_id: int | None
    created: bool
    steps: int
    summary: RunSummary
    skipped_lines: int
    problems: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"file": self.file_name, "format": self.format.value, "run_id": self.run_id,
                "created": self.created, "steps": self.steps, "skipped_lines": self.skipped_lines,
                "warnings": list(self.summary.warnings), "problems": list(self.problems),
                "config": self.summary.config, "steady_state": self.summary.steady_state_json(),
                "results": self.summary.results_json()}


# ------------------------------------------------------------------------------------------ streams


class _Limited(io.RawIOBase):
    """Reads through to `inner`, hashing what passes and refusing more than `limit` bytes."""

    def __init__(self, inner: BinaryIO, file_name: str, limit: int | None) -> None:
        self.inner = inner
        self.file_name = file_name
        self.limit = limit
        self.count = 0
        self.sha = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self.inner.readinto(buffer)  # type: ignore[attr-defined]
        if not n:
            return 0
        self.count += n
        if self.limit is not None and self.count > self.limit:
            raise FileTooLarge(self.file_name, None,
                               f"larger than the {self.limit // 2**20} MB limit once decompressed; nothing was stored")
        self.sha.update(memoryview(buffer)[:n])
        return n


def _open_content(raw: BinaryIO, file_name: str) -> BinaryIO:
    """The decompressed content of a plain or gzip stream."""
    peek = raw.read(2)
    rest = io.BufferedReader(_Prepend(peek, raw))  # type: ignore[arg-type]
    if peek == GZIP_MAGIC:
        return gzip.GzipFile(fileobj=rest, mode="rb")  # type: ignore[return-value]
    return rest  # type: ignore[return-value]


class _Prepend(io.RawIOBase):
    def __init__(self, first: bytes, inner: BinaryIO) -> None:
        self.first = first
        self.inner = inner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.first:
            n = min(len(buffer), len(self.first))
            buffer[:n] = self.first[:n]
            self.first = self.first[n:]
            return n
        return self.inner.readinto(buffer)  # type: ignore[attr-defined, no-any-return]


# ----------------------------------------------------------------------------------------- parsing


class _SummarySpool:
    """The step columns the summary reads, in Parquet files on disk, read back in streaming passes.

    Held in memory they grew by 32 B per step on top of the parse's own buffers (+110 MB at the peak of the
    1 GB Megatron log), and summarising them in memory by as much again; spooled and read in passes
    (steady_state_of_ordered), memory does not grow with the number of steps.
    """

    def __init__(self) -> None:
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._files: list[Path] = []
        self.rows = 0
        self._last_step: int | None = None
        self.in_step_order = True

    def add(self, frame: pl.DataFrame) -> None:
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="perfledger-summary-")
        path = Path(self._folder.name) / f"{len(self._files):08d}.parquet"
        _for_summary(frame).write_parquet(path, compression="lz4", statistics=False)
        self._files.append(path)
        self.rows += frame.height
        step = frame["step"]
        self.in_step_order = self.in_step_order and step.is_sorted() and (
            self._last_step is None or step[0] >= self._last_step)
        self._last_step = step[-1]

    def read(self) -> pl.LazyFrame:
        """The spooled steps in step order (repeated steps in the log's order), for summarize() to read in passes."""
        if not self._files:
            return pl.LazyFrame(schema={c: pl.Float64 for c in _STEADY_COLUMNS} | {"step": pl.Int64})
        if not self.in_step_order:  # sorted out of core: in memory, the 1 GB MLPerf bench log peaked at 536 MB
            assert self._folder is not None
            out = Path(self._folder.name) / "sorted.parquet"
            return pl.scan_parquet(store.sort_parquet(self._files, "step", out))
        return pl.concat([pl.scan_parquet(path) for path in self._files], how="diagonal_relaxed")

    def close(self) -> None:
        if self._folder is not None:
            self._folder.cleanup()


@dataclass
class _Run:
    """Mutable state of one pass over a file; only the pipeline sees it."""

    file_name: str
    limited: _Limited
    parser: LogParser
    on_progress: Callable[[int], None] | None = None
    summary_steps: _SummarySpool = field(default_factory=_SummarySpool)
    parsed: ParseSummary | None = None

    def batches(self, stream: BinaryIO) -> Iterator[pl.DataFrame]:
        chunks = iter_text_chunks(stream, chunk_bytes=self.parser.chunk_bytes)
        frames = _read_ahead(chunks, self.parser.prepare_chunk, self.parser.feed_prepared)
        for frame in _coalesced(self._reporting(frames), STEP_BATCH_ROWS):
            self.summary_steps.add(frame)
            yield frame
        self.parsed = self.parser.finish()
        tail = getattr(self.parser, "final_steps", None)  # whole-file JSON parsers may finish only here
        if tail is not None:
            frame = tail()
            if frame.height:
                self.summary_steps.add(frame)
                yield frame

    def _reporting(self, frames: Iterator[pl.DataFrame]) -> Iterator[pl.DataFrame]:
        for frame in frames:
            yield frame
            if self.on_progress is not None:
                self.on_progress(self.limited.count)


STEP_BATCH_ROWS = 25_000  # steps per store and summary write; each batch is copied on its way to two Parquet
# files, and 100k rows a batch peaked 25 MB higher on the 1 GB Megatron log


def _coalesced(frames: Iterator[pl.DataFrame], min_rows: int) -> Iterator[pl.DataFrame]:
    """The frames' rows in order, as frames of at least min_rows (the last may be shorter); none empty."""
    held: list[pl.DataFrame] = []
    rows = 0
    for frame in frames:
        if not frame.height:
            continue
        held.append(frame)
        rows += frame.height
        if rows >= min_rows:
            yield pl.concat(held, how="diagonal_relaxed") if len(held) > 1 else held[0]
            held, rows = [], 0
    if held:
        yield pl.concat(held, how="diagonal_relaxed") if len(held) > 1 else held[0]


READ_AHEAD_WORKERS = 2  # 1 -> 2: 1.17x on the 1 GB Megatron log for +22 MB peak RSS; 3: no faster, +60 MB


def _read_ahead(items: Iterator[T], prepare: Callable[[T], U], in_order: Callable[[U], V],
                workers: int = READ_AHEAD_WORKERS) -> Iterator[V]:
    """in_order(prepare(item)) for each item, in order, computed on `workers` threads ahead of the caller.

    Each item goes through three stages on one thread: it is taken from `items` strictly in order (the content
    hash depends on it), prepared in parallel with the other threads' items, then passed to in_order strictly in
    order and one at a time (the parser's stateful part). The caller, meanwhile, writes the previous results to
    the store. Exceptions surface here, in order; after one, later items skip their stages.
    """
    done: Any = object()
    reads, feeds = _Turns(), _Turns()
    stop = threading.Event()

    def run(ticket: int) -> Any:
        try:
            with reads.turn(ticket):
                box = [done if stop.is_set() else next(items, done)]
            prepared, error = (done if box[0] is done else prepare(box.pop())), None  # prepare may drop the item
        except Exception as exc:  # re-raised in its feed turn, so the turns after it still come
            prepared, error = done, exc
        with feeds.turn(ticket):
            if error is not None:
                stop.set()
                raise error
            if prepared is done or stop.is_set():
                return done
            try:
                return in_order(prepared)
            except Exception:
                stop.set()
                raise

    tickets = itertools.count()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ingest-read") as pool:
        pending = deque(pool.submit(run, next(tickets)) for _ in range(workers))
        try:
            while (value := pending.popleft().result()) is not done:
                pending.append(pool.submit(run, next(tickets)))
                yield value
        finally:
            stop.set()  # the caller stopped early or failed: what is still pending skips its work


class _Turns:
    """Lets numbered tickets (0, 1, 2, ...) through a stage one at a time, in order."""

    def __init__(self) -> None:
        self._next = 0
        self._changed = threading.Condition()

    @contextmanager
    def turn(self, ticket: int) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: self._next == ticket)
            try:
                yield
            finally:
                self._next += 1
                self._changed.notify_all()


def _for_summary(frame: pl.DataFrame) -> pl.DataFrame:
    """The columns the summary reads: a reported figure only where the log printed it (the spool grows with steps)."""
    reported = [c for c in _REPORTED_COLUMNS if frame[c].null_count() < frame.height]
    return frame.select(*_STEADY_COLUMNS, *reported)


def _start(raw: BinaryIO, file_name: str, limit: int | None,
           on_progress: Callable[[int], None] | None) -> tuple[_Run, BinaryIO]:
    limited = _Limited(_open_content(raw, file_name), file_name, limit)
    try:
        stream = io.BufferedReader(limited, buffer_size=WIDE_HEAD_BYTES)
        head_bytes = stream.peek(WIDE_HEAD_BYTES)[:WIDE_HEAD_BYTES]
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ParseError(file_name, None, f"could not be decompressed: {exc}") from None
    if not head_bytes.strip():
        raise ParseError(file_name, None, "the file is empty")
    parser_cls = detect_head(head_bytes, file_name=file_name)
    return _Run(file_name, limited, parser_cls(file_name), on_progress), stream


def _guarded(run: _Run, stream: BinaryIO) -> Iterator[pl.DataFrame]:
    try:
        yield from run.batches(stream)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ParseError(run.file_name, None, f"could not be read to the end: {exc}") from None


# ------------------------------------------------------------------------------------------ public


def preview(raw: bytes, file_name: str, overrides: RunConfig = RunConfig(), *,
            engine: store.Engine | None = None, limit: int | None = None) -> IngestOutcome:
    """Parse and summarise without storing; run_id names an existing run with the same bytes, if any."""
    run, stream = _start(io.BytesIO(raw), file_name, limit, None)
    try:
        n_steps = sum(frame.height for frame in _guarded(run, stream))
        summary = _summary(run, overrides, engine)
    finally:
        run.summary_steps.close()
    existing = store.find_run(engine, run.limited.sha.hexdigest()) if engine is not None else None
    return _outcome(run, summary, existing, created=False, steps=n_steps)


def ingest_stream(engine: store.Engine, raw: BinaryIO, file_name: str, overrides: RunConfig = RunConfig(), *,
                  limit: int | None = None, on_progress: Callable[[int], None] | None = None,
                  now: datetime | None = None) -> IngestOutcome:
    """Parse `raw` and store it as one run in one transaction (idempotent by content hash)."""
    run, stream = _start(raw, file_name, limit, on_progress)
    header = store.RunHeader(format=run.parser.format.value, file_name=clean_text(Path(file_name).name),
                             ingested_at=now or datetime.now(UTC))
    holder: dict[str, RunSummary] = {}

    def finish() -> store.RunFinal:
        if "summary" not in holder:
            holder["summary"] = _summary(run, overrides, engine)
        return _final(run, holder["summary"])

    try:
        saved: SaveResult = store.save_run(engine, header, _guarded(run, stream), finish)
        summary = holder.get("summary") or _summary(run, overrides, engine)
    finally:
        run.summary_steps.close()
    return _outcome(run, summary, saved.run_id, saved.created, run.summary_steps.rows)


def ingest_path(engine: store.Engine, path: Path, overrides: RunConfig = RunConfig(), *, limit: int | None = None,
                on_progress: Callable[[int], None] | None = None) -> IngestOutcome:
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise ParseError(str(path), None, f"cannot be opened: {exc.strerror}") from None
    with handle:
        return ingest_stream(engine, handle, str(path), overrides, limit=limit, on_progress=on_progress)


def ingest_bytes(engine: store.Engine, raw: bytes, file_name: str, overrides: RunConfig = RunConfig(), *,
                 limit: int | None = None) -> IngestOutcome:
    return ingest_stream(engine, io.BytesIO(raw), file_name, overrides, limit=limit)


commit = ingest_bytes  # the page's name for it


def _summary(run: _Run, overrides: RunConfig, engine: store.Engine | None) -> RunSummary:
    assert run.parsed is not None, "finish() runs after the last batch"
    config = resolve_config(run.parsed.config.merged(overrides))
    return summarize(run.parsed, config, run.summary_steps.read(), _catalog_rows(engine, config))


def _catalog_rows(engine: store.Engine | None, config: RunConfig) -> CatalogRows:
    """The stored catalog rows of the run's model and accelerator; none without a store, or an unreadable one
    (the summary then says which figures need them)."""
    if engine is None:
        return CatalogRows()
    try:
        model, accelerator = store.catalog_rows(engine, config.model, config.accelerator)
    except PerfledgerError:
        return CatalogRows()
    return CatalogRows(model=model, accelerator=accelerator)


def _final(run: _Run, summary: RunSummary) -> store.RunFinal:
    assert run.parsed is not None
    return store.RunFinal(
        content_sha256=run.limited.sha.hexdigest(),
        file_bytes=run.limited.count,
        config=summary.config | {"format_meta": run.parsed.meta} if run.parsed.meta else summary.config,
        warnings=summary.warnings,
        summary=summary.steady_state_json() | {"reported": summary.reported, "why_missing": summary.why_missing},
        skipped_lines=run.parsed.skipped_lines,
        results=summary.results,
        sources=tuple(summary.sources) + _meta_sources(run.parsed.meta),
    )


def _meta_sources(meta: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """Sources a claims file names ({id: {title, url, date, kind}}), as `source` rows."""
    found = meta.get("sources") or {}
    return tuple({"id": sid, "kind": info.get("kind") or "cli", "title": info.get("title") or sid,
                  "publisher": info.get("publisher"), "date": info.get("date"), "url": info.get("url"),
                  "evidence": info.get("evidence"), "note": info.get("note")}
                 for sid, info in found.items())


def _outcome(run: _Run, summary: RunSummary, run_id: int | None, created: bool, steps: int) -> IngestOutcome:
    assert run.parsed is not None
    return IngestOutcome(
        file_name=run.file_name,
        format=run.parser.format,
        run_id=run_id,
        created=created,
        steps=steps,
        summary=summary,
        skipped_lines=run.parsed.skipped_lines,
        problems=tuple(str(p) for p in run.parsed.problems),
    )


__all__ = ["IngestOutcome", "commit", "ingest_bytes", "ingest_path", "ingest_stream", "preview"]
