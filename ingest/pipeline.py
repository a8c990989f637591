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
import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

import polars as pl

from ingest import hints as hint
from ingest import identity
from ingest.config_lines import ConfigLines
from ingest.detect import WIDE_HEAD_BYTES, detect_stream, skip_stray_lines
from ingest.hints import Hints
from ingest.known import KnownRows, bundled_rows
from ingest.parsers._common import backwards_warning, without_backward_durations
from ingest.parsers.base import LogParser, date_in_text
from ingest.spool import StepSpool
from ingest.streams import STEP_BATCH_ROWS, Limited, coalesced, open_content, read_ahead
from ingest.summary import CatalogRows, RunSummary, parser_warnings, resolve_config, summarize
from ingest.text import TextChunk, clean_text, iter_text_chunks
from ingest.timeline import PrintedSpan
from perfledger import store
from perfledger.calc.steady import SteadyRule
from perfledger.catalog.link import UnlinkedName
from perfledger.errors import ParseError, PerfledgerError
from perfledger.frameworks import load_frameworks
from perfledger.records import ParseSummary, PreparedRun, RunConfig, SaveResult, more_problems
from perfledger.store.runs import catalog_is_empty, restate_run
from perfledger.vocabulary import LogFormat

Progress = Callable[[int], None]
TO_RESOLVE = "python -m perfledger resolve list"  # where a claims file's unread cells and names are answered
Overrides = RunConfig | Hints
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
    problems_left_out: Mapping[str, int] = field(default_factory=dict)  # problems past the listed ones, by kind
    hints_changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # a stored run's update: (was, now)
    imported: str | None = None  # a claims file: "3 added, 2 updated, 0 unchanged"
    refused: dict[str, int] | None = None  # a claims file: rows refused by reason (a curated source, a broken line)
    unread: dict[str, int] | None = None  # a claims file: cells kept as printed, unread yet, counted by reason
    unlinked: tuple[UnlinkedName, ...] = ()  # a claims file: each printed name its stored rows leave unlinked
    dry_run: bool = False  # nothing was stored: the outcome says what storing would do
    ran_at: datetime | None = None  # when the run ran, by the log's own clock; None: the log printed no date

    @property
    def rows_refused(self) -> bool:
        """A claims file some of whose rows were refused: the import then exits 1."""
        return bool(self.refused)

    def as_json(self) -> dict[str, Any]:
        return {"file": self.file_name, "format": self.format.value, "run_id": self.run_id,
                "created": self.created, "hints_changed": {k: list(v) for k, v in self.hints_changed.items()},
                "steps": self.steps, "skipped_lines": self.skipped_lines,
                "warnings": list(self.summary.warnings), "problems": list(self.problems),
                "problems_left_out": dict(self.problems_left_out), "problems_more": more_problems(self.problems_left_out),
                "config": self.summary.config, "identity": self.summary.identity,
                "steady_state": self.summary.steady_state_json(),
                "launches": self.summary.launches_json(), "reported": self.summary.reported,
                "results": self.summary.results_json(), "dry_run": self.dry_run,
                "ran_at": self.ran_at.isoformat() if self.ran_at else None} | (
                    {"imported": self.imported, "refused": self.refused or {}, "unread": self.unread or {},
                     "to_resolve": TO_RESOLVE if self.unread or self.unlinked else None,
                     "unlinked": [u.as_json() for u in self.unlinked]} if self.imported is not None else {})


# ------------------------------------------------------------------------------------------- prepare


def prepare(raw: BinaryIO | bytes, file_name: str, overrides: Overrides = NO_OVERRIDES, *,
            engine: store.Engine | KnownRows | None = None, limit: int | None = None,
            on_progress: Progress | None = None, watch: Callable[[bytes], None] | None = None) -> PreparedRun:
    """Read, detect, parse and summarise one log: the run store.save_run writes. Close it (or use it in a `with`
    block) once stored or dropped, to remove its step files. `engine` only lends the catalog rows of the run's
    model and accelerator (read before any write; a folder's files take them from the catalog read once,
    `KnownRows`); without it, the figures that need them stay empty. `watch` sees
    the decompressed bytes as they are read, so that a caller can scan them in the same pass."""
    return _prepare(raw, file_name, overrides, engine, limit, on_progress, watch)[0]


def _prepare(raw: BinaryIO | bytes, file_name: str, overrides: Overrides, engine: store.Engine | KnownRows | None,
             limit: int | None, on_progress: Progress | None,
             watch: Callable[[bytes], None] | None = None) -> tuple[PreparedRun, RunSummary]:
    content = open_content(io.BytesIO(raw) if isinstance(raw, bytes) else raw, file_name)
    limited = Limited(content, file_name, limit, watch)
    stream, parser = _detected(limited, file_name)
    spool = StepSpool()
    try:
        scan = None if parser.reads_bytes or parser.format in _NO_IDENTITY else ConfigLines(load_frameworks())
        parser.config_lines = scan
        parsed = _parse(parser, stream, spool, lambda: on_progress(limited.count) if on_progress else None, scan)
        given = _hints(overrides)
        read = _identity(parsed, scan)
        config = resolve_config(hint.apply(read.config, given))
        provenance = identity.merged_provenance(read.provenance, hint.changes(read.config, config), given.config,
                                                hint.FLAGS)
        still_true = identity.still_true(parsed.warnings, parsed.config, read)
        parsed = replace(parsed, warnings=still_true + read.warnings + given.warnings)
        summary = summarize(parsed, config, spool.for_summary(), _catalog_rows(engine, config),
                            provenance=provenance)
        prepared = PreparedRun(
            file_name=clean_text(Path(file_name).name),
            format=parser.format,
            content_sha256=limited.sha.hexdigest(),
            file_bytes=limited.count,
            config=_stored_config(summary, parsed.meta),
            summary=_stored_summary(summary),
            steps=spool.step_files(),
            warnings=summary.warnings,
            results=summary.results,
            sources=tuple(summary.sources) + _meta_sources(parsed.meta),
            skipped_lines=parsed.skipped_lines,
            problems=tuple(str(p) for p in parsed.problems),
            problems_left_out=dict(parsed.problems_left_out),
            ran_at=parser.started_at,
            release=spool.close,
        )
    except BaseException:
        spool.close()
        raise
    return prepared, summary


_NO_IDENTITY = frozenset({LogFormat.CLAIMS_CSV, LogFormat.MICROBENCH})  # a table of claims: each row its own


def _identity(parsed: ParseSummary, scan: ConfigLines | None) -> identity.Identity:
    """The run's identity from its reader's configuration and every configuration line of the log."""
    if parsed.format in _NO_IDENTITY:
        return identity.Identity(parsed.config, {})
    return identity.resolve(parsed.config, scan.statements() if scan is not None else (), reader=parsed.format.value,
                            frameworks=load_frameworks(), scope=tuple(parsed.meta.get("frameworks") or ()))


def _hints(overrides: Overrides) -> Hints:
    return overrides if isinstance(overrides, Hints) else Hints(config=overrides)


def _stored_config(summary: RunSummary, meta: dict[str, Any]) -> dict[str, Any]:
    config = summary.config | ({"identity": summary.identity} if summary.identity else {})
    return config | {"format_meta": meta} if meta else config


def _stored_summary(summary: RunSummary) -> dict[str, Any]:
    """The run's summary JSON as stored: the steady state, the log's own figures beside ours, the launches."""
    return summary.steady_state_json() | {"reported": summary.reported, "why_missing": summary.why_missing,
                                          "launches": summary.launches_json()}


def _detected(limited: Limited, file_name: str) -> tuple[BinaryIO, LogParser]:
    try:
        buffered = io.BufferedReader(limited, buffer_size=WIDE_HEAD_BYTES)
        head_bytes = buffered.peek(WIDE_HEAD_BYTES)[:WIDE_HEAD_BYTES]
        if not head_bytes.strip():
            raise ParseError(file_name, None, "the file is empty")
        stream, head_bytes, found = detect_stream(buffered, head_bytes, file_name=file_name)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ParseError(file_name, None, f"could not be decompressed: {exc}") from None
    parser = found.parser(file_name)
    skip_stray_lines(parser, found)
    if not parser.reads_bytes:
        head = clean_text(head_bytes.decode("utf-8", "replace"))
        parser.saw_time(date_in_text(head))
        parser.look(head)
    return stream, parser


def _parse(parser: LogParser, stream: BinaryIO, spool: StepSpool, progress: Callable[[], None],
           scan: ConfigLines | None = None) -> ParseSummary:
    """One pass over the file: every step frame into the spool, in batches; what else the parser learnt; and, into
    `scan`, every configuration line (searched for on the reader threads beside the parser's own preparing)."""
    span: PrintedSpan | None = None
    try:
        if parser.reads_bytes:  # a binary format: the stream itself, read once in order
            frames = parser.feed_stream(stream)
        else:
            span = PrintedSpan(iter_text_chunks(stream, chunk_bytes=parser.chunk_bytes))
            frames = _chunk_frames(parser, iter(span), scan)
        backwards = 0

        def kept(frame: pl.DataFrame) -> pl.DataFrame:  # durations a clock that stepped back gave are no figures
            nonlocal backwards
            frame, count = without_backward_durations(frame)
            backwards += count
            return frame

        for frame in coalesced(_reporting(frames, progress), STEP_BATCH_ROWS):
            spool.add(kept(frame))
        parsed = parser.finish()
        if "step_time_source" not in parsed.meta:  # the format's own, where the parser said nothing finer
            parsed = replace(parsed, meta=parsed.meta | {"step_time_source": {parser.step_time_source: 0}})
        if parser.notes:
            parsed = replace(parsed, warnings=(*parsed.warnings, *parser.notes))
        if parser.left_out:  # every parser's overflow, counted by kind in LogParser.note_problem
            parsed = replace(parsed, problems_left_out=dict(parser.left_out))
        tail = getattr(parser, "final_steps", None)  # whole-file JSON parsers may finish only here
        if tail is not None:
            spool.add(kept(tail()))
        if backwards:
            parsed = replace(parsed, warnings=(*parsed.warnings, backwards_warning(backwards)))
        if span is not None:  # the log's own clock, for goodput
            parsed = replace(parsed, meta=parsed.meta | span.as_meta())
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ParseError(parser.file_name, None, f"could not be read to the end: {exc}") from None
    return parsed


def _chunk_frames(parser: LogParser, chunks: Iterator[TextChunk], scan: ConfigLines | None) -> Iterator[pl.DataFrame]:
    """The parser's frames of each chunk, read ahead on threads (ingest.streams.read_ahead) when there is more than
    one chunk: for a file of one chunk (a round's result files: 10 KB-1 MB) the threads were all cost, 2-4 ms."""
    prepare, feed = (parser.prepare_chunk, parser.feed_prepared) if scan is None \
        else scan.beside(parser.prepare_chunk, parser.feed_prepared)
    ahead = list(itertools.islice(chunks, 2))
    if len(ahead) < 2:
        return iter([feed(prepare(chunk)) for chunk in ahead])
    return read_ahead(itertools.chain(ahead, chunks), prepare, feed)


def _reporting(frames: Iterator[pl.DataFrame], progress: Callable[[], None]) -> Iterator[pl.DataFrame]:
    for frame in frames:
        yield frame
        progress()


def _catalog_rows(engine: store.Engine | KnownRows | None, config: RunConfig) -> CatalogRows:
    """The stored catalog rows of the run's model and accelerator; none without a store, or an unreadable one
    (the summary then says which figures need them)."""
    if engine is None:
        return CatalogRows()
    if isinstance(engine, KnownRows):
        return engine.rows_for(config)
    try:
        model, accelerator = store.catalog_rows(engine, config.model, config.accelerator)
        if (model is None and config.model or accelerator is None and config.accelerator) \
                and catalog_is_empty(engine):
            return bundled_rows().rows_for(config)  # a store never initialised: the catalog bundled in data/
    except PerfledgerError:
        return CatalogRows()
    return CatalogRows(model=model, accelerator=accelerator)


def _meta_sources(meta: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """Sources a claims file names ({id: {title, url, date, kind}}), as `source` rows."""
    found = meta.get("sources") or {}
    return tuple({"id": sid, "kind": info.get("kind") or None, "title": info.get("title") or sid,
                  "publisher": info.get("publisher"), "date": info.get("date"), "url": info.get("url"),
                  "evidence": info.get("evidence"), "note": info.get("note")}
                 for sid, info in found.items())


# ------------------------------------------------------------------------------------------ shorthands


def preview(raw: bytes, file_name: str, overrides: Overrides = NO_OVERRIDES, *,
            engine: store.Engine | None = None, limit: int | None = None) -> IngestOutcome:
    """Parse and summarise without storing; run_id names an existing run with the same bytes, if any."""
    prepared, summary = _prepare(raw, file_name, overrides, engine, limit, None)
    prepared.close()
    existing = store.find_run(engine, prepared.content_sha256) if engine is not None else None
    return _outcome(prepared, summary, file_name, existing, created=False)


def dry_run(engine: store.Engine, raw: BinaryIO, file_name: str, overrides: Overrides = NO_OVERRIDES, *,
            limit: int | None = None) -> IngestOutcome:
    """Everything `ingest_stream` would do, storing nothing: a log is parsed and summarised; a claims file also
    says what it would add, update, leave unchanged, refuse and leave unlinked (`imported` reads "would ...")."""
    prepared, summary = _prepare(raw, file_name, overrides, engine, limit, None)
    prepared.close()
    if prepared.format is not LogFormat.CLAIMS_CSV:
        return replace(_outcome(prepared, summary, file_name, store.find_run(engine, prepared.content_sha256),
                                created=False), dry_run=True)
    existing, plan = store.plan_run(engine, prepared)
    would = SaveResult(existing or 0, created=False, imported=f"would be {plan.describe()}",
                       refused=store.claims_refusals(prepared, plan), unlinked=plan.unlinked)
    return replace(_outcome(prepared, summary, file_name, existing, False, would), dry_run=True)


def ingest_stream(engine: store.Engine, raw: BinaryIO, file_name: str, overrides: Overrides = NO_OVERRIDES, *,
                  limit: int | None = None, on_progress: Progress | None = None,
                  now: datetime | None = None) -> IngestOutcome:
    """Prepare `raw` and store it as one run in one transaction (idempotent by content hash). Hints for bytes
    already stored update that run from its stored steps instead (restate), without parsing the file."""
    given = _hints(overrides)
    if given.given and raw.seekable():
        stored = store.find_run(engine, _content_sha256(raw, file_name, limit))
        raw.seek(0)
        if stored is not None:
            return restate(engine, stored, given, file_name=file_name)
    prepared, summary = _prepare(raw, file_name, given, engine, limit, on_progress)
    with prepared:
        saved = store.save_run(engine, prepared, ingested_at=now)
    if not saved.created and prepared.steps.rows and prepared.format is not LogFormat.CLAIMS_CSV:
        return restate(engine, saved.run_id, given, file_name=file_name)  # the stored run, these hints applied
    return _outcome(prepared, summary, file_name, saved.run_id, saved.created, saved)


def _content_sha256(raw: BinaryIO, file_name: str, limit: int | None) -> str:
    """The content hash a run is stored under (of the decompressed bytes), read without parsing."""
    try:
        limited = Limited(open_content(raw, file_name), file_name, limit)
        while limited.read(1 << 20):
            pass
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ParseError(file_name, None, f"could not be read to the end: {exc}") from None
    return limited.sha.hexdigest()


def restate(engine: store.Engine, run_id: int, overrides: Overrides, *, file_name: str | None = None) -> IngestOutcome:
    """Apply hints to a stored run: its configuration, and its figures recomputed from its stored steps under the
    stored steady-state rule (nothing parsed). The outcome's hints_changed says what changed ({} = nothing)."""
    stored = store.run(engine, run_id)
    if stored is None:
        raise PerfledgerError(f"there is no run {run_id} to update")
    given = _hints(overrides)
    before = resolve_config(RunConfig(**{f.name: stored.config[f.name] for f in fields(RunConfig)
                                         if f.name in stored.config}))
    after = resolve_config(hint.apply(before, given))
    changed = hint.changes(before, after)
    provenance = identity.merged_provenance(stored.config.get("identity") or {}, changed, given.config, hint.FLAGS)
    parsed = ParseSummary(format=LogFormat(stored.format), config=after, meta=stored.config.get("format_meta") or {},
                          warnings=parser_warnings(stored.warnings) + given.warnings)
    rule_fields = {f.name for f in fields(SteadyRule)}
    rule = SteadyRule(**{k: v for k, v in ((stored.summary or {}).get("rule") or {}).items() if k in rule_fields})
    summary = summarize(parsed, after, store.steps(engine, run_id), _catalog_rows(engine, after), rule,
                        provenance=provenance)
    if changed:
        meta = stored.config.get("format_meta") or {}
        restate_run(engine, run_id, config=_stored_config(summary, meta), summary=_stored_summary(summary),
                    warnings=summary.warnings,
                    results=[r for r in summary.results if r.locator == "steady-state window"])
    return IngestOutcome(file_name=file_name or stored.file_name, format=parsed.format, run_id=run_id,
                         created=False, steps=stored.n_steps, summary=summary, skipped_lines=stored.skipped_lines,
                         hints_changed=changed, ran_at=stored.ran_at)


def ingest_path(engine: store.Engine, path: Path, overrides: Overrides = NO_OVERRIDES, *, limit: int | None = None,
                on_progress: Progress | None = None) -> IngestOutcome:
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise ParseError(str(path), None, f"cannot be opened: {exc.strerror}") from None
    with handle:
        return ingest_stream(engine, handle, str(path), overrides, limit=limit, on_progress=on_progress)


def ingest_bytes(engine: store.Engine, raw: bytes, file_name: str, overrides: Overrides = NO_OVERRIDES, *,
                 limit: int | None = None) -> IngestOutcome:
    return ingest_stream(engine, io.BytesIO(raw), file_name, overrides, limit=limit)


commit = ingest_bytes  # stores the bytes in one call (the page stores a prepared run instead)


def _outcome(prepared: PreparedRun, summary: RunSummary, file_name: str, run_id: int | None,
             created: bool, saved: store.SaveResult | None = None) -> IngestOutcome:
    meta = prepared.config.get("format_meta") or {}
    refused = dict(meta.get("refused") or {}) if prepared.format is LogFormat.CLAIMS_CSV else None
    if refused is not None and saved is not None and saved.refused:
        refused["curated source"] = refused.get("curated source", 0) + len(saved.refused)
    unread = dict(meta.get("unread") or {}) if prepared.format is LogFormat.CLAIMS_CSV else None
    return IngestOutcome(file_name=file_name, format=prepared.format, run_id=run_id, created=created,
                         steps=prepared.steps.rows, summary=summary, skipped_lines=prepared.skipped_lines,
                         problems=prepared.problems + (saved.refused if saved else ()),
                         problems_left_out=prepared.problems_left_out,
                         imported=saved.imported if saved else None, refused=refused, unread=unread,
                         unlinked=saved.unlinked if saved else (), ran_at=prepared.ran_at)


__all__ = ["IngestOutcome", "commit", "dry_run", "ingest_bytes", "ingest_path", "ingest_stream", "prepare", "preview", "restate"]
