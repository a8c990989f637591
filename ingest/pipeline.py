"""One ingest path for the CLI and the browser, in a straight line:

    read (gunzip, size limit, content hash) -> detect -> parse (one pass, every step column into one spool)
    -> summary -> PreparedRun -> store.save_run

`prepare` does everything up to the PreparedRun, reading the file once in chunks; its steps wait on disk, so
memory does not grow with file size. `store.save_run(engine, prepared)` then writes the run in one transaction
and calls nothing back, so the dashboard can show a prepared run and store that same run later without parsing
again. `ingest_stream`, `ingest_path`, `ingest_bytes` and `preview` are the CLI's and the tests' shorthands.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

import polars as pl

from ingest.detect import WIDE_HEAD_BYTES, detect_head, skip_stray_lines
from ingest.parsers.base import LogParser
from ingest.spool import StepSpool
from ingest.streams import STEP_BATCH_ROWS, Limited, coalesced, open_content, read_ahead
from ingest.summary import CatalogRows, RunSummary, resolve_config, summarize
from ingest.text import clean_text, iter_text_chunks
from perfledger import store
from perfledger.errors import ParseError, PerfledgerError
from perfledger.records import ParseSummary, PreparedRun, RunConfig
from perfledger.vocabulary import LogFormat

Progress = Callable[[int], None]
NO_OVERRIDES = RunConfig()  # the log's own configuration, nothing overridden


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
    imported: str | None = None  # a claims file: "3 added, 2 updated, 0 unchanged"
    refused: dict[str, int] | None = None  # a claims file: refused rows counted by reason (parse and store)

    @property
    def rows_refused(self) -> bool:
        """A claims file some of whose rows were refused: the import then exits 1."""
        return bool(self.refused)

    def as_json(self) -> dict[str, Any]:
        return {"file": self.file_name, "format": self.format.value, "run_id": self.run_id,
                "created": self.created, "steps": self.steps, "skipped_lines": self.skipped_lines,
                "warnings": list(self.summary.warnings), "problems": list(self.problems),
                "config": self.summary.config, "steady_state": self.summary.steady_state_json(),
                "results": self.summary.results_json()} | (
                    {"imported": self.imported, "refused": self.refused or {}} if self.imported is not None else {})


# ------------------------------------------------------------------------------------------- prepare


def prepare(raw: BinaryIO | bytes, file_name: str, overrides: RunConfig = NO_OVERRIDES, *,
            engine: store.Engine | None = None, limit: int | None = None,
            on_progress: Progress | None = None) -> PreparedRun:
    """Read, detect, parse and summarise one log: the run store.save_run writes. Close it (or use it in a `with`
    block) once stored or dropped, to remove its step files. `engine` only lends the catalog rows of the run's
    model and accelerator (read before any write); without it, the figures that need them stay empty."""
    return _prepare(raw, file_name, overrides, engine, limit, on_progress)[0]


def _prepare(raw: BinaryIO | bytes, file_name: str, overrides: RunConfig, engine: store.Engine | None,
             limit: int | None, on_progress: Progress | None) -> tuple[PreparedRun, RunSummary]:
    limited = Limited(open_content(io.BytesIO(raw) if isinstance(raw, bytes) else raw, file_name), file_name, limit)
    stream, parser = _detected(limited, file_name)
    spool = StepSpool()
    try:
        parsed = _parse(parser, stream, spool, lambda: on_progress(limited.count) if on_progress else None)
        config = resolve_config(parsed.config.merged(overrides))
        summary = summarize(parsed, config, spool.for_summary(), _catalog_rows(engine, config))
        prepared = PreparedRun(
            file_name=clean_text(Path(file_name).name),
            format=parser.format,
            content_sha256=limited.sha.hexdigest(),
            file_bytes=limited.count,
            config=summary.config | {"format_meta": parsed.meta} if parsed.meta else summary.config,
            summary=summary.steady_state_json() | {"reported": summary.reported, "why_missing": summary.why_missing},
            steps=spool.step_files(),
            warnings=summary.warnings,
            results=summary.results,
            sources=tuple(summary.sources) + _meta_sources(parsed.meta),
            skipped_lines=parsed.skipped_lines,
            problems=tuple(str(p) for p in parsed.problems),
            release=spool.close,
        )
    except BaseException:
        spool.close()
        raise
    return prepared, summary


def _detected(limited: Limited, file_name: str) -> tuple[BinaryIO, LogParser]:
    try:
        stream = io.BufferedReader(limited, buffer_size=WIDE_HEAD_BYTES)
        head_bytes = stream.peek(WIDE_HEAD_BYTES)[:WIDE_HEAD_BYTES]
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ParseError(file_name, None, f"could not be decompressed: {exc}") from None
    if not head_bytes.strip():
        raise ParseError(file_name, None, "the file is empty")
    parser = detect_head(head_bytes, file_name=file_name)(file_name)
    skip_stray_lines(parser, head_bytes)
    return stream, parser


def _parse(parser: LogParser, stream: BinaryIO, spool: StepSpool, progress: Callable[[], None]) -> ParseSummary:
    """One pass over the file: every step frame into the spool, in batches; what else the parser learnt."""
    try:
        chunks = iter_text_chunks(stream, chunk_bytes=parser.chunk_bytes)
        frames = read_ahead(chunks, parser.prepare_chunk, parser.feed_prepared)
        for frame in coalesced(_reporting(frames, progress), STEP_BATCH_ROWS):
            spool.add(frame)
        parsed = parser.finish()
        if parser.notes:
            parsed = replace(parsed, warnings=(*parsed.warnings, *parser.notes))
        tail = getattr(parser, "final_steps", None)  # whole-file JSON parsers may finish only here
        if tail is not None:
            spool.add(tail())
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ParseError(parser.file_name, None, f"could not be read to the end: {exc}") from None
    return parsed


def _reporting(frames: Iterator[pl.DataFrame], progress: Callable[[], None]) -> Iterator[pl.DataFrame]:
    for frame in frames:
        yield frame
        progress()


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


def _meta_sources(meta: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """Sources a claims file names ({id: {title, url, date, kind}}), as `source` rows."""
    found = meta.get("sources") or {}
    return tuple({"id": sid, "kind": info.get("kind") or "cli", "title": info.get("title") or sid,
                  "publisher": info.get("publisher"), "date": info.get("date"), "url": info.get("url"),
                  "evidence": info.get("evidence"), "note": info.get("note")}
                 for sid, info in found.items())


# ------------------------------------------------------------------------------------------ shorthands


def preview(raw: bytes, file_name: str, overrides: RunConfig = NO_OVERRIDES, *,
            engine: store.Engine | None = None, limit: int | None = None) -> IngestOutcome:
    """Parse and summarise without storing; run_id names an existing run with the same bytes, if any."""
    prepared, summary = _prepare(raw, file_name, overrides, engine, limit, None)
    prepared.close()
    existing = store.find_run(engine, prepared.content_sha256) if engine is not None else None
    return _outcome(prepared, summary, file_name, existing, created=False)


def ingest_stream(engine: store.Engine, raw: BinaryIO, file_name: str, overrides: RunConfig = NO_OVERRIDES, *,
                  limit: int | None = None, on_progress: Progress | None = None,
                  now: datetime | None = None) -> IngestOutcome:
    """Prepare `raw` and store it as one run in one transaction (idempotent by content hash)."""
    prepared, summary = _prepare(raw, file_name, overrides, engine, limit, on_progress)
    with prepared:
        saved = store.save_run(engine, prepared, ingested_at=now)
    return _outcome(prepared, summary, file_name, saved.run_id, saved.created, saved)


def ingest_path(engine: store.Engine, path: Path, overrides: RunConfig = NO_OVERRIDES, *, limit: int | None = None,
                on_progress: Progress | None = None) -> IngestOutcome:
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise ParseError(str(path), None, f"cannot be opened: {exc.strerror}") from None
    with handle:
        return ingest_stream(engine, handle, str(path), overrides, limit=limit, on_progress=on_progress)


def ingest_bytes(engine: store.Engine, raw: bytes, file_name: str, overrides: RunConfig = NO_OVERRIDES, *,
                 limit: int | None = None) -> IngestOutcome:
    return ingest_stream(engine, io.BytesIO(raw), file_name, overrides, limit=limit)


commit = ingest_bytes  # stores the bytes in one call (the page stores a prepared run instead)


def _outcome(prepared: PreparedRun, summary: RunSummary, file_name: str, run_id: int | None,
             created: bool, saved: store.SaveResult | None = None) -> IngestOutcome:
    meta = prepared.config.get("format_meta") or {}
    refused = dict(meta.get("refused") or {}) if prepared.format is LogFormat.CLAIMS_CSV else None
    if refused is not None and saved is not None and saved.refused:
        refused["curated source"] = refused.get("curated source", 0) + len(saved.refused)
    return IngestOutcome(file_name=file_name, format=prepared.format, run_id=run_id, created=created,
                         steps=prepared.steps.rows, summary=summary, skipped_lines=prepared.skipped_lines,
                         problems=prepared.problems + (saved.refused if saved else ()),
                         imported=saved.imported if saved else None, refused=refused)


__all__ = ["IngestOutcome", "commit", "ingest_bytes", "ingest_path", "ingest_stream", "prepare", "preview"]
