"""python -m ingest FILE_OR_DIR... [--db URL] [--json] [--model ID] [--accelerator ID] [--devices N] [--precision P]
                    [--seq-len N]     (hints for a file already stored update that run)  [--dry-run]
   python -m ingest --demo [--db URL] [--data DIR]     (the bundled demo logs, as `perfledger init` loads them)

A folder is imported as one campaign (ingest.campaign_cli): every log under it, its failures kept as outcomes.

Exit 0: every file stored (or already stored); 1: some file rejected, the others still stored; 2: usage.
Errors go to stderr as FILE:LINE: reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ingest.demo import ingest_demo_runs
from ingest.hints import Hints, hints
from ingest.pipeline import TO_RESOLVE, IngestOutcome, Overrides, dry_run, ingest_stream
from ingest.streams import open_regular, printable
from perfledger import store
from perfledger.catalog import Catalog
from perfledger.errors import InvalidInput, ParseError, PerfledgerError, UnknownId
from perfledger.process import exit_process, lean_process
from perfledger.records import more_problems
from perfledger.settings import load_settings
from perfledger.store.runs import catalog_is_empty

PROGRESS_MIN_BYTES = 32 * 2**20


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ingest", description="Ingest training logs into the perfledger store.")
    p.add_argument("files", nargs="*", type=Path, metavar="FILE",
                   help="log files (gzip accepted), or a folder to import as one campaign")
    p.add_argument("--demo", action="store_true", help="ingest the demo logs listed in DATA/logs/manifest.csv")
    p.add_argument("--data", type=Path, help="with --demo: the data folder (default: PERFLEDGER_DATA_DIR, else data/)")
    p.add_argument("--db", help="SQLAlchemy URL of the store (default: PERFLEDGER_DB_URL, else data/perfledger.duckdb)")
    p.add_argument("--json", action="store_true", help="print one JSON object per file")
    p.add_argument("--model", help="model id, when the log does not state it (or to override it)")
    p.add_argument("--accelerator", help="accelerator id or name, e.g. h100-sxm or 'NVIDIA H100 80GB HBM3'")
    p.add_argument("--devices", type=int, help="number of devices in the run")
    p.add_argument("--precision", help="fp32 | tf32 | fp16 | bf16 | fp8")
    p.add_argument("--seq-len", type=int, help="sequence length, when the log does not state it")
    p.add_argument("--dry-run", action="store_true",
                   help="store nothing: show what would be stored (a claims file: rows added, updated, refused, unlinked)")
    p.add_argument("--max-mb", type=int,
                   help="refuse a file larger than this once decompressed (default: PERFLEDGER_MAX_UPLOAD_MB, 200)")
    return p


def overrides_from(args: argparse.Namespace, known: Catalog | None = None) -> Hints:
    """The hints given on the command line, names resolved with `known` (the store's catalog; default: data/'s);
    a name not in the catalog is kept as printed, with a warning."""
    return hints(model=args.model, accelerator=args.accelerator, devices=args.devices, precision=args.precision,
                 seq_len=args.seq_len, known=known)


def _progress(path: Path, shown: str) -> tuple[Callable[[int], None] | None, Callable[[], None]]:
    """A tqdm bar on stderr for big files when stderr is a terminal."""
    try:
        size = path.stat().st_size
    except OSError:
        return None, lambda: None
    if not sys.stderr.isatty() or size < PROGRESS_MIN_BYTES or path.suffix == ".gz":
        return None, lambda: None
    # tqdm loads only to draw a progress bar on a terminal, not for every import
    from tqdm import tqdm  # type: ignore[import-untyped]

    bar = tqdm(total=size, unit="B", unit_scale=True, desc=Path(shown).name, file=sys.stderr, leave=False)

    def update(done: int) -> None:
        bar.update(done - bar.n)

    return update, bar.close


def _print_text(o: IngestOutcome) -> None:
    s = o.summary.steady_state_json()
    state = "stored as run" if o.created else "already stored as run"
    if o.dry_run:
        state = "dry run, nothing stored" + (f"; already stored as run {o.run_id}" if o.run_id else "")
    print(f"{o.file_name}: {o.format.value}, {o.steps} steps, {state}" + ("" if o.dry_run else f" {o.run_id}"))
    for key, (was, now) in o.hints_changed.items():
        print(f"  updated {key}: {was} -> {now}")
    figures = [("tokens/s/device", s["tokens_per_s_per_device"], ",.0f"),
               ("model TFLOP/s/device", s["model_tflops_per_device"], ",.1f"), ("MFU", s["mfu"], ".1%"),
               ("step time median (s)", s["step_time_s_median"], ".3f"), ("jitter CV", s["jitter_cv"], ".3f")]
    for label, value, fmt in figures:
        if value is not None:
            print(f"  {label}: {value:{fmt}}")
    reported = o.summary.reported
    for key, label in (("tflops_per_device", "TFLOP/s/device"), ("tokens_per_s_per_device", "tokens/s/device"),
                       ("mfu", "MFU")):
        if (theirs := reported.get(f"reported_{key}")) is not None:
            diff = reported.get(f"diff_{key}")
            over = (reported.get("printed_over") or {}).get(key)
            print(f"  printed by the log: {label} {theirs:,.4g}"
                  + (f" (recomputed differs by {diff:+.1%})" if diff is not None else "")
                  + (f" [{over}]" if over else ""))
    if reported.get("explanation"):
        print(f"  {reported['explanation']}")
    if s["first_step"] is not None:
        print(f"  steady window: steps {s['first_step']}-{s['last_step']} ({s['rule_text']})")
    for r in o.summary.results:
        if r.run_id is None and r.value is not None and r.metric not in (
                "tokens_per_s_per_device", "model_tflops_per_device", "mfu", "step_time_s"):
            print(f"  {r.metric}: {r.value:,.6g} {r.unit} ({r.evidence})")
    for w in o.summary.warnings:
        print(f"  warning: {w}")
    if o.imported is not None:
        print(f"  claims: {o.imported}")
    if o.unread:
        kinds = ", ".join(f"{n:,} {why}" for why, n in sorted(o.unread.items(), key=lambda kv: (-kv[1], kv[0])))
        print(f"  kept as printed, unread yet: {kinds}; answer them with {TO_RESOLVE}")
    for u in o.unlinked:
        print(f"  warning: {u.warning()}")
    if o.skipped_lines:
        print(f"  {o.skipped_lines:,} lines skipped; first: {o.problems[0] if o.problems else '-'}")
    if (more := more_problems(o.problems_left_out)) is not None:
        print(f"  {len(o.problems):,} problems listed (--json lists them) {more}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if bool(args.files) == args.demo:
        parser.error("give log files, or --demo alone")
    try:
        return _ingest(args)
    except store.FAULT_TYPES as exc:  # a driver's or the OS's fault of the store that escaped its translation
        fault: PerfledgerError | None
        try:
            fault = store.store_fault(exc, store.engine_from_url(args.db))
        except PerfledgerError as unusable:
            fault = unusable
        if fault is None:
            raise
        print(f"error: {fault}", file=sys.stderr)
        return 1


def _ingest(args: argparse.Namespace) -> int:
    try:
        engine = store.engine_from_url(args.db)
        store.create_schema(engine)
        known = None if catalog_is_empty(engine) else store.catalog_record(engine)  # never initialised: data/'s
        overrides = overrides_from(args, known)
    except (InvalidInput, UnknownId) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except PerfledgerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.demo:
        return _demo(engine, args.data or load_settings().data_dir)
    try:
        limit = (args.max_mb or load_settings().max_upload_mb) * 2**20  # the uploads' limit, after gunzip
    except PerfledgerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failed = 0
    for path in args.files:
        shown = printable(str(path))  # the name in messages, progress, JSON and the store
        if path.is_dir():
            failed += _ingest_folder(engine, path, overrides, limit, args, known)
            continue
        try:
            outcome = _ingest_file(engine, path, shown, overrides, limit, dry=args.dry_run)
        except PerfledgerError as exc:
            failed += 1
            print(str(exc), file=sys.stderr)
            if args.json:
                print(json.dumps(refused_json(shown, exc)))
            continue
        if args.json:
            print(json.dumps(outcome.as_json(), default=str))
        else:
            _print_text(outcome)
        if outcome.rows_refused:  # a claims file: every refused row on stderr, and exit 1
            failed += 1
            for problem in outcome.problems:
                print(problem, file=sys.stderr)
            counts = "; ".join(f"{n} {why}" for why, n in sorted((outcome.refused or {}).items()))
            print(f"{outcome.file_name}: rows refused: {counts}", file=sys.stderr)
    return 1 if failed else 0


def _ingest_folder(engine: store.Engine, path: Path, overrides: Hints, limit: int, args: argparse.Namespace,
                   known: Catalog | None) -> int:
    # A folder's process pool and campaign modules (multiprocessing, sqlite3: 140 ms) load only for a folder
    from ingest.campaign_cli import ingest_folder

    try:
        return ingest_folder(engine, path, overrides, limit, as_json=args.json, dry=args.dry_run, known=known)
    except PerfledgerError as exc:
        print(f"{printable(str(path))}: {exc}", file=sys.stderr)
        if args.json:  # one object per argument, a refused folder's too
            print(json.dumps(refused_json(printable(str(path)), exc)))
        return 1


def refused_json(shown: str, exc: PerfledgerError) -> dict[str, object]:
    """A refused file's JSON object: the same keys as a stored one's where they apply, and its error."""
    line = exc.line if isinstance(exc, ParseError) else None
    return {"file": shown, "format": None, "run_id": None, "created": False, "steps": 0, "skipped_lines": 0,
            "warnings": [], "problems": [], "results": [], "error": str(exc), "error_line": line}


def _ingest_file(engine: store.Engine, path: Path, shown: str, overrides: Overrides, limit: int, *,
                 dry: bool = False) -> IngestOutcome:
    """One file, refused at once unless it is a regular file (a FIFO would block, a device never end)."""
    with open_regular(path, shown) as handle:
        if dry:
            return dry_run(engine, handle, shown, overrides, limit=limit)
        update, close = _progress(path, shown)
        try:
            return ingest_stream(engine, handle, shown, overrides, limit=limit, on_progress=update)
        finally:
            close()


def _demo(engine: store.Engine, data_dir: Path) -> int:
    try:
        added = ingest_demo_runs(engine, data_dir)
    except PerfledgerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if added:
        print(f"{store.mask_url(str(engine.url))}: added {added} demo runs from {data_dir / 'logs'}")
    return 0


if __name__ == "__main__":
    lean_process()
    exit_process(main())
