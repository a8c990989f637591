"""perfledger benchmark: a measurement, not a test. Prints a table (and with --json one object).

    .venv/bin/python bench/run.py [--quick] [--json] [--repeats N] [--keep DIR]
    .venv/bin/python bench/run.py --scale [--backends duckdb,postgresql] [--scale-size RUNS,STEPS,RESULTS]

Inputs are built at run time from tests/fixtures/logs into a temp dir (bench/inputs.py) and deleted after.
Every timing is the median of --repeats runs (default 3), with min and max; ratios are medians over medians,
measured in the same run on the same files:
  (1) `python -m ingest FILE --db duckdb:///<fresh>` end to end (subprocess, fresh DB each run) per format,
      vs `wc -l` and vs a plain Python regex loop (bench/baselines.py) on the same file (a TensorBoard event
      file, binary: a plain loop decoding every record);
  (2) peak RSS of that ingest process (os.wait4 rusage of the child), small vs large file;
  (3) MLPerf: our parser vs mlperf-logging's reader, when that package is installed;
  (4) a DuckDB store (full: 1,000 runs, 10M steps, 100k results) built in bulk: each page's
      perfledger.views.table(slug, default state) and store.steps for the biggest run vs bare SQL;
  (5) each page rendered whole by Streamlit's AppTest on that store (reported, no target);
  (5b) each page's time to render in headless Chromium (/usr/bin/chromium, Playwright): navigation until the
      page is drawn and the network quiet, as a ratio to an empty Streamlit page served the same way (an empty
      script on a second server of the same Streamlit, started with the same flags); target <= 2x; and the
      floor: a page drawing only Accelerators' chart and table, bare, timed the same way (no target);
  (6) CSV export of 100k result rows through views.render vs polars write_csv of the same frame;
  (6b) a whole MLPerf round (bench/round.py: 1,669 result files copied from the real submissions in the fixtures,
      a few broken) imported by `python -m ingest ROUND` into a fresh store vs mlperf-logging's result_summarizer on
      the same folder; target: at most 30 s and at least 6x the summarizer, scores equal for every complete one;
  (7) the browser's upload path (bench/upload.py; not in --quick: a server, Chromium and a worker per step):
      a 1 MB Megatron log previewed, re-applied and stored on the Runs page in Chromium vs `python -m ingest
      FILE --dry-run` in the same run; target: the preview at most 2 s slower.
With --scale, only the scale benchmark (bench/scale.py): 10,000 runs, 100 M steps and 1 M results on DuckDB
and on PostgreSQL, each page's table against its bare SQL, one run's page, the ingest of one more run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

import inputs
from logs import bench_ingest, bench_mlperf_reader, byte_compile_sources, startup
from measure import machine
from report import headline, print_table
from round import ROUND_FILES, bench_round
from scale import FULL, QUICK, bench_scale, print_scale
from store_pages import bench_browser, bench_csv, bench_pages, bench_views, build_store
from upload import bench_upload

# ---------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, seconds (CI smoke test)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="build inputs in this directory and keep them")
    ap.add_argument("--skip", default="",
                    help="comma list of parts to skip: ingest,mlperf,views,pages,browser,csv,round,upload")
    ap.add_argument("--round-files", type=int, default=ROUND_FILES, help="result files in the round (part round)")
    ap.add_argument("--formats", default="", help="comma list of formats to ingest (default: every one with inputs)")
    ap.add_argument("--scale", action="store_true", help="only the scale benchmark (bench/scale.py), minutes")
    ap.add_argument("--backends", default="duckdb,postgresql", help="--scale: comma list of duckdb,postgresql")
    ap.add_argument("--scale-size", help="--scale: RUNS,STEPS,RESULTS (default 10000,100000000,1000000)")
    args = ap.parse_args(argv)
    if args.scale:
        return scale_main(args)
    skip = set(filter(None, args.skip.split(",")))
    q = args.quick
    sizes = {"megatron": [8 * 10**6] if q else [100 * 10**6, 1000 * 10**6],
             "torchtitan": [2 * 10**6] if q else [100 * 10**6],
             "mlperf": [2 * 10**6] if q else [100 * 10**6],
             "wandb_history": [2 * 10**6] if q else [100 * 10**6],
             "composer": [2 * 10**6] if q else [100 * 10**6],
             "tensorboard": [2 * 10**6] if q else [100 * 10**6]}
    if args.formats:
        sizes = {fmt: v for fmt, v in sizes.items() if fmt in set(args.formats.split(","))}
    store_size = (10, 100_000, 1_000) if q else (1000, 10_000_000, 100_000)
    csv_rows = 1_000 if q else 100_000

    report: dict[str, Any] = {"mode": "quick" if q else "full", "machine": machine(), "repeats": args.repeats,
                              "command": "python bench/run.py" + (" --quick" if q else "")}
    t_start = time.perf_counter()
    work = args.keep or Path(tempfile.mkdtemp(prefix="perfledger-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        if "ingest" not in skip:
            byte_compile_sources()
            if not q:  # informational; four more processes would push --quick past its CI budget
                report["startup"] = startup(work, args.repeats)
            rows = []
            for fmt, fmt_sizes in sizes.items():
                for size in fmt_sizes:
                    path = work / f"{fmt}_{size // 10**6}MB.log"
                    if not path.exists():
                        inputs.build(fmt, size, path)
                    rows.append(bench_ingest(fmt, path, work, args.repeats, 1 if q else args.repeats))
                    if not args.keep and fmt != "mlperf":
                        path.unlink()
            report["ingest"] = rows
        if "mlperf" not in skip:
            path = work / "mlperf_reader.log"
            inputs.build("mlperf", sizes["mlperf"][0], path)
            report["mlperf_reader"] = bench_mlperf_reader(path, args.repeats)
        if not ({"views", "pages", "browser", "csv"} <= skip):
            db = work / "store.duckdb"
            db.unlink(missing_ok=True)
            url = f"duckdb:///{db}"
            report["store"] = build_store(url, db, *store_size)
            if "views" not in skip:
                report["views"] = bench_views(url, db, args.repeats)
            if "pages" not in skip:
                report["pages"] = bench_pages(url, args.repeats)
            if "browser" not in skip:
                report["browser"] = bench_browser(url, work, 1 if q else args.repeats, warm=not q)
            if "csv" not in skip:
                report["csv"] = bench_csv(url, csv_rows, args.repeats)
        if "round" not in skip:
            report["round"] = bench_round(work, 1 if q else args.repeats, 60 if q else args.round_files)
        if "upload" not in skip and not q:
            report["upload"] = bench_upload(work, args.repeats)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    report["total_s"] = time.perf_counter() - t_start
    report["headline"] = headline(report)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print_table(report)
    return 0


def scale_main(args: argparse.Namespace) -> int:
    size = tuple(int(v) for v in args.scale_size.split(",")) if args.scale_size else (QUICK if args.quick else FULL)
    report: dict[str, Any] = {"mode": "scale", "machine": machine(), "repeats": args.repeats,
                              "command": "python bench/run.py --scale"}
    t_start = time.perf_counter()
    work = args.keep or Path(tempfile.mkdtemp(prefix="perfledger-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        report["scale"] = bench_scale(args.backends.split(","), size, work, args.repeats)  # type: ignore[arg-type]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    report["total_s"] = time.perf_counter() - t_start
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        m = report["machine"]
        print(f"perfledger scale bench (median of {args.repeats} [min-max] in the JSON), {m['cpu']}, "
              f"{m['usable_cores']} cores, load {m['load_1min']:.1f}, duckdb {m['duckdb']}")
        print_scale(report["scale"])
        print(f"\ntotal {report['total_s']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
