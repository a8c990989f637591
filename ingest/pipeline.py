"""One ingest path for the CLI and the browser: bytes -> gunzip -> size limit -> detect -> parse -> store.

The file is read once, in chunks: each chunk's steps go to the store inside one transaction while the
content hash is computed, so memory does not grow with file size and a failure leaves nothing stored.
`preview` runs the same path without a store write, for the page's preview-before-commit.
"""

from __future__ import annotations

import gzip
import hashlib
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import polars as pl
from sqlalchemy import Engine

from ingest.detect import WIDE_HEAD_BYTES, detect_head
from ingest.parsers.base import LogParser
from ingest.summary import RunSummary, resolve_config, summarize
from ingest.text import iter_line_chunks
from perfledger import store
from perfledger.errors import FileTooLarge, ParseError
from perfledger.records import ParseSummary, RunConfig, SaveResult
from perfledger.vocabulary import LogFormat

GZIP_MAGIC = b"\x1f\x8b"
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


@dataclass
class _Run:
    """Mutable state of one pass over a file; only the pipeline sees it."""

    file_name: str
    limited: _Limited
    parser: LogParser
    on_progress: Callable[[int], None] | None = None
    steady_frames: list[pl.DataFrame] = field(default_factory=list)
    parsed: ParseSummary | None = None

    def batches(self, stream: BinaryIO) -> Iterator[pl.DataFrame]:
        for first_lineno, lines in iter_line_chunks(stream):
            frame = self.parser.feed(lines, first_lineno)
            if frame.height:
                self.steady_frames.append(_for_summary(frame))
                yield frame
            if self.on_progress is not None:
                self.on_progress(self.limited.count)
        self.parsed = self.parser.finish()
        tail = getattr(self.parser, "final_steps", None)  # whole-file JSON parsers may finish only here
        if tail is not None:
            frame = tail()
            if frame.height:
                self.steady_frames.append(_for_summary(frame))
                yield frame

    def steps_for_summary(self) -> pl.DataFrame:
        if not self.steady_frames:
            return pl.DataFrame(schema={c: pl.Float64 for c in _STEADY_COLUMNS} | {"step": pl.Int64})
        frame = pl.concat(self.steady_frames, how="diagonal_relaxed", rechunk=False)
        self.steady_frames = [frame]
        return frame


def _for_summary(frame: pl.DataFrame) -> pl.DataFrame:
    """The columns the summary reads: a reported figure only where the log printed it (memory grows with steps)."""
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
            engine: Engine | None = None, limit: int | None = None) -> IngestOutcome:
    """Parse and summarise without storing; run_id names an existing run with the same bytes, if any."""
    run, stream = _start(io.BytesIO(raw), file_name, limit, None)
    n_steps = sum(frame.height for frame in _guarded(run, stream))
    summary = _summary(run, overrides, engine)
    existing = store.find_run(engine, run.limited.sha.hexdigest()) if engine is not None else None
    return _outcome(run, summary, existing, created=False, steps=n_steps)


def ingest_stream(engine: Engine, raw: BinaryIO, file_name: str, overrides: RunConfig = RunConfig(), *,
                  limit: int | None = None, on_progress: Callable[[int], None] | None = None,
                  now: datetime | None = None) -> IngestOutcome:
    """Parse `raw` and store it as one run in one transaction (idempotent by content hash)."""
    run, stream = _start(raw, file_name, limit, on_progress)
    header = store.RunHeader(format=run.parser.format.value, file_name=Path(file_name).name,
                             ingested_at=now or datetime.now(UTC))
    holder: dict[str, RunSummary] = {}

    def finish() -> store.RunFinal:
        if "summary" not in holder:
            holder["summary"] = _summary(run, overrides, engine)
        return _final(run, holder["summary"])

    saved: SaveResult = store.save_run(engine, header, _guarded(run, stream), finish)
    steps = sum(f.height for f in run.steady_frames)
    return _outcome(run, holder.get("summary") or _summary(run, overrides, engine), saved.run_id, saved.created, steps)


def ingest_path(engine: Engine, path: Path, overrides: RunConfig = RunConfig(), *, limit: int | None = None,
                on_progress: Callable[[int], None] | None = None) -> IngestOutcome:
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise ParseError(str(path), None, f"cannot be opened: {exc.strerror}") from None
    with handle:
        return ingest_stream(engine, handle, str(path), overrides, limit=limit, on_progress=on_progress)


def ingest_bytes(engine: Engine, raw: bytes, file_name: str, overrides: RunConfig = RunConfig(), *,
                 limit: int | None = None) -> IngestOutcome:
    return ingest_stream(engine, io.BytesIO(raw), file_name, overrides, limit=limit)


commit = ingest_bytes  # the page's name for it


def _summary(run: _Run, overrides: RunConfig, engine: Engine | None) -> RunSummary:
    assert run.parsed is not None, "finish() runs after the last batch"
    config = resolve_config(run.parsed.config.merged(overrides))
    return summarize(run.parsed, config, run.steps_for_summary(), engine)


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
