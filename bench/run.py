"""perfledger benchmark: a measurement, not a test. Prints a table (and with --json one object).

    .venv/bin/python bench/run.py [--quick] [--json] [--repeats N] [--keep DIR]

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
      script has finished and nothing is stale, as a ratio to an empty Streamlit page served the same way
      (an empty script on a second server of the same Streamlit, started with the same flags); target <= 2x;
  (6) CSV export of 100k result rows through views.render vs polars write_csv of the same frame.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

import inputs
from report import headline, print_table

BASELINES = HERE / "baselines.py"  # run as a child: python bench/baselines.py FORMAT FILE -> rows, seconds
PARSE_ONLY = HERE / "parse_only.py"  # run as a child: python bench/parse_only.py FILE -> steps, seconds

MB = 1_000_000  # throughput in decimal MB/s, like wc and most tools
MLPERF_RULESET = "5.1.0"


# ------------------------------------------------------------------------------------------- helpers


def stats(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def _first(row: tuple[Any, ...] | None) -> Any:
    """The first column of a row a query must return (a count, an id)."""
    if row is None:
        raise RuntimeError("the query returned no row")
    return row[0]


def timed(fn: Callable[[], Any], repeats: int) -> tuple[dict[str, float], Any]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return stats(times), out


def machine() -> dict[str, Any]:
    import duckdb
    import polars

    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    return {"cpu": cpu, "cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
            "load_1min": load, "python": platform.python_version(), "duckdb": duckdb.__version__,
            "polars": polars.__version__, "platform": platform.platform()}


def run_child(cmd: list[str]) -> tuple[float, float, int, str]:
    """(seconds, peak RSS MB, exit code, stdout) of one child process, its own rusage only."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode(errors="replace")
        if proc.returncode:
            text += err.read().decode(errors="replace")
    return seconds, usage.ru_maxrss / 1024, proc.returncode, text  # ru_maxrss is KiB on Linux


# -------------------------------------------------------------------------------------------- ingest


def bench_ingest(fmt: str, path: Path, work: Path, repeats: int, work_repeats: int) -> dict[str, Any]:
    size = path.stat().st_size
    wc, _ = timed(lambda: subprocess.run(["wc", "-l", str(path)], check=True, capture_output=True), repeats)
    # In a child, like ours: run here, the loop's rows would raise this process's RSS high-water mark, which
    # every later child inherits through fork and reports as its own peak.
    loop, loop_runs = _child_runs([sys.executable, str(BASELINES), fmt, str(path)], repeats)
    _, parse_runs = _child_runs([sys.executable, str(PARSE_ONLY), str(path)], work_repeats)
    times, rss, steps = [], [], None
    for i in range(repeats):
        db = work / f"ingest_{fmt}_{size}_{i}.duckdb"
        seconds, peak, code, out = run_child([sys.executable, "-m", "ingest", str(path), "--db", f"duckdb:///{db}",
                                              "--json", "--max-mb", "100000"])
        db.unlink(missing_ok=True)
        Path(f"{db}.wal").unlink(missing_ok=True)
        if code != 0:
            raise SystemExit(f"ingest of {path} failed ({code}):\n{out[-2000:]}")
        steps = json.loads(out.splitlines()[0])["steps"]
        times.append(seconds)
        rss.append(peak)
    t = stats(times)
    loop_work, parse_work = (stats([r["seconds"] for r in runs]) for runs in (loop_runs, parse_runs))
    mbs = {k: size / MB / t[k] for k in ("median",)} | {"min": size / MB / t["max"], "max": size / MB / t["min"]}
    return {"format": fmt, "file_mb": size / MB, "steps": steps, "baseline_rows": loop_runs[0]["rows"],
            "seconds": t, "mb_s": mbs, "wc_mb_s": size / MB / wc["median"],
            "regex_loop_mb_s": size / MB / loop["median"], "vs_wc": wc["median"] / t["median"],
            "vs_regex_loop": loop["median"] / t["median"], "parse_s": parse_work, "loop_work_s": loop_work,
            "parser_vs_regex_loop": loop_work["median"] / parse_work["median"], "peak_rss_mb": stats(rss)}


def _child_runs(cmd: list[str], repeats: int) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """(wall-time stats of the child processes, the JSON object each printed)."""
    runs: list[dict[str, Any]] = []
    walls = []
    for _ in range(repeats):
        seconds, _, code, out = run_child(cmd)
        if code:
            raise SystemExit(f"{' '.join(cmd)} failed ({code}):\n{out[-2000:]}")
        walls.append(seconds)
        runs.append(json.loads(out.splitlines()[-1]))
    return stats(walls), runs


def byte_compile_sources() -> None:
    """Our modules byte-compiled, as an installed package's (and the Docker image's) are: with
    PYTHONDONTWRITEBYTECODE set, as on these machines, each child would compile them again (about 0.07 s)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "ingest", "perfledger"], cwd=ROOT, check=True)


def startup(work: Path, repeats: int) -> dict[str, Any]:
    """The fixed cost of a `python -m ingest` process on a tiny log (imports, schema, summary)."""
    tiny = ROOT / "tests" / "fixtures" / "logs" / "bigscience_meg_gpt2_perf_n16_v100.out"
    times, rss = [], []
    for i in range(repeats):
        db = work / f"tiny_{i}.duckdb"
        seconds, peak, code, out = run_child([sys.executable, "-m", "ingest", str(tiny), "--db", f"duckdb:///{db}"])
        if code:
            raise SystemExit(out)
        db.unlink(missing_ok=True)
        times.append(seconds)
        rss.append(peak)
    return {"seconds": stats(times), "peak_rss_mb": stats(rss)}


def bench_mlperf_reader(path: Path, repeats: int) -> dict[str, Any]:
    from ingest.parsers.mlperf import MlperfParser
    from ingest.text import iter_line_chunks

    def ours() -> int:
        parser = MlperfParser(path.name)
        n = 0
        with path.open("rb") as f:
            for lineno, lines in iter_line_chunks(f):
                n += parser.feed(lines, lineno).height
        parser.finish()
        tail = getattr(parser, "final_steps", None)
        return n + (tail().height if tail else 0)

    t_ours, n = timed(ours, repeats)
    out: dict[str, Any] = {"file_mb": path.stat().st_size / MB, "ours_s": t_ours, "ours_rows": n,
                           "ours_mb_s": path.stat().st_size / MB / t_ours["median"]}
    try:
        from mlperf_logging.compliance_checker import mlp_parser  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        out["mlperf_logging"] = "not installed"
        return out
    from importlib.metadata import version

    # The newest ruleset's reader (the fixture is a v5.1 submission); every ruleset reads lines the same way.
    t_ref, (loglines, failed) = timed(lambda: mlp_parser.parse_file(str(path), ruleset=MLPERF_RULESET), repeats)
    out |= {"mlperf_logging": version("mlperf-logging"), "ruleset": MLPERF_RULESET, "reference_s": t_ref,
            "reference_lines": len(loglines), "reference_failed": len(failed),
            "ours_vs_reference": t_ref["median"] / t_ours["median"]}
    return out


# --------------------------------------------------------------------------------------------- store


def build_store(url: str, db_path: Path, n_runs: int, n_steps: int, n_results: int) -> dict[str, Any]:
    """Seed data/ through the store, then grow result/run/step in bulk with DuckDB SQL (setup speed only)."""
    import duckdb

    from perfledger import store

    t0 = time.perf_counter()
    engine = store.engine_from_url(url)
    store.init_store(engine, ROOT / "data")
    engine.dispose()
    per_run = max(1, n_steps // n_runs)
    con = duckdb.connect(str(db_path))
    seeded = _first(con.execute("SELECT count(*) FROM result").fetchone())
    cols = [r[0] for r in con.execute("DESCRIBE result").fetchall() if r[0] not in ("id", "row_key")]
    copies = max(0, -(-(n_results - seeded) // max(seeded, 1)))
    con.execute(f"""
        INSERT INTO result (id, row_key, {', '.join(cols)})
        SELECT row_number() OVER () + (SELECT max(id) FROM result), md5(k::VARCHAR || '/' || r.row_key),
               {', '.join('r.' + c for c in cols)}
        FROM result r, range(1, {copies + 1}) t(k)
        LIMIT {max(0, n_results - seeded)}""")
    config = json.dumps({"model": "llama2-7b", "accelerator": "h100-sxm", "n_devices": 8, "precision": "bf16",
                         "seq_len": 4096, "global_batch": 128})
    summary = json.dumps({"first_step": 10, "last_step": per_run, "step_time_s_median": 1.5,
                          "tokens_per_s_per_device": 4000.0, "model_tflops_per_device": 400.0, "mfu": 0.4,
                          "jitter_cv": 0.05})
    con.execute("""
        INSERT INTO run (id, content_sha256, format, file_name, file_bytes, ingested_at, config, warnings, summary,
                         n_steps, skipped_lines)
        SELECT i, sha256(i::VARCHAR), 'megatron', 'bench_' || i || '.log', 1000000, now(), ?, '[]', ?, ?, 0
        FROM range(1, ? + 1) t(i)""", [config, summary, per_run, n_runs])
    con.execute(f"""
        INSERT INTO step (run_id, step, step_time_s, tokens, samples, loss, lr, grad_norm,
                          reported_tflops_per_device, reported_mfu, reported_tokens_per_s_per_device, memory_gb)
        SELECT r, s, 1.5 + 0.1 * sin(s) + CASE WHEN s % 500 = 0 THEN 5 ELSE 0 END, 524288, 128,
               10.0 / (1 + s / 100.0), 3e-4, 1.0 + 0.01 * cos(s), 400, 0.4, 4000, 60
        FROM range(1, {n_runs} + 1) a(r), range(1, {per_run} + 1) b(s)""")
    counts = {t: _first(con.execute(f"SELECT count(*) FROM {t}").fetchone()) for t in ("run", "step", "result")}
    con.close()
    return counts | {"setup_s": time.perf_counter() - t0, "steps_per_run": per_run}


_RESULTS_SQL = """
    SELECT r.* EXCLUDE (row_key), s.kind AS source_kind, s.title AS source_title, s.url AS source_url,
           s.date AS source_date, a.name AS accelerator_name, a.vendor AS accelerator_vendor, m.name AS model_name
    FROM result r LEFT JOIN source s ON r.source_id = s.id LEFT JOIN accelerator a ON r.accelerator_id = a.id
    LEFT JOIN model m ON r.model_id = m.id ORDER BY r.id"""
# Bare SQL per page: the same aggregate where the page's table is one SQL could compute, else the rows the
# page must read (its own work on top is what the ratio shows).
BARE_SQL = {
    "overview": """SELECT coalesce(s.kind, '(not stated)') AS kind, count(*) AS "result rows",
                          count(DISTINCT r.source_id) AS sources
                   FROM result r LEFT JOIN source s ON r.source_id = s.id GROUP BY 1 ORDER BY 2 DESC, 1""",
    "speedups": _RESULTS_SQL,
    "accelerators": _RESULTS_SQL,
    "scaling": _RESULTS_SQL,
    "time-to-train": "SELECT * FROM accelerator, model",
    "runs": """SELECT id, file_name, format, ingested_at, n_steps, skipped_lines,
                      json_extract_string(config, '$.model') AS model,
                      json_extract_string(config, '$.accelerator') AS accelerator,
                      json_extract(config, '$.n_devices')::BIGINT AS n_devices,
                      json_extract_string(config, '$.precision') AS precision,
                      json_extract(summary, '$.step_time_s_median')::DOUBLE AS step_time_s_median,
                      json_extract(summary, '$.tokens_per_s_per_device')::DOUBLE AS tokens_per_s_per_device,
                      json_extract(summary, '$.model_tflops_per_device')::DOUBLE AS model_tflops_per_device,
                      json_extract(summary, '$.mfu')::DOUBLE AS mfu,
                      json_extract(summary, '$.jitter_cv')::DOUBLE AS jitter_cv
               FROM run ORDER BY id DESC""",
    "audit": _RESULTS_SQL,
    "sources": """SELECT s.id, s.kind, s.date, s.title, s.publisher, s.url, s.evidence,
                         coalesce(n.n, 0) AS n_results
                  FROM source s LEFT JOIN (SELECT source_id, count(*) AS n FROM result GROUP BY 1) n
                  ON n.source_id = s.id ORDER BY s.id""",
}
_STEPS_SQL = """SELECT step, step_time_s, tokens, samples, loss, lr, grad_norm, reported_tflops_per_device,
                       reported_mfu, reported_tokens_per_s_per_device, memory_gb
                FROM step WHERE run_id = ? ORDER BY step"""


def bench_views(url: str, db_path: Path, repeats: int) -> dict[str, Any]:
    import duckdb
    import polars as pl

    from perfledger import store, views

    engine = store.engine_from_url(url)

    def bare(sql: str, params: list[Any] | None = None) -> pl.DataFrame:
        con = duckdb.connect(str(db_path), read_only=True)  # a fresh connection, like the store's NullPool
        try:
            return con.execute(sql, params or []).pl()
        finally:
            con.close()

    pages: dict[str, Any] = {}
    for slug in views.SLUGS:
        try:
            state = views.PAGE_STATES[slug]()
            t_view, frame = timed(partial(views.table, slug, state, engine), repeats)
        except Exception as exc:  # noqa: BLE001  (a page that fails is reported in its row; the others are timed)
            pages[slug] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            continue
        t_sql, ref = timed(partial(bare, BARE_SQL[slug]), repeats)
        pages[slug] = {"view_s": t_view, "sql_s": t_sql, "rows": frame.height, "sql_rows": ref.height,
                       "ratio": t_view["median"] / t_sql["median"]}
    with duckdb.connect(str(db_path), read_only=True) as con:
        big = _first(con.execute("SELECT run_id FROM step GROUP BY 1 ORDER BY count(*) DESC LIMIT 1").fetchone())
    for name, fn in (("store.steps(big run)", lambda: store.steps(engine, big)), ("store.runs", lambda: store.runs(engine))):
        t_view, frame = timed(fn, repeats)
        reference = partial(bare, _STEPS_SQL, [big]) if "steps" in name else partial(bare, BARE_SQL["runs"])
        t_sql, _ = timed(reference, repeats)
        pages[name] = {"view_s": t_view, "sql_s": t_sql, "rows": frame.height, "ratio": t_view["median"] / t_sql["median"]}
    engine.dispose()
    return pages


def bench_pages(url: str, repeats: int) -> dict[str, Any]:
    """Each page rendered whole by Streamlit's AppTest against the store (table, chart, widgets; no browser)."""
    import logging

    from streamlit.testing.v1 import AppTest

    from screens import PAGES

    os.environ["PERFLEDGER_DB_URL"] = url
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(
        lambda record: "missing ScriptRunContext" not in record.getMessage())  # once per AppTest, harmless
    out: dict[str, Any] = {}
    for page in PAGES:
        app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
        app.switch_page(page.file)

        def render(app: AppTest = app) -> AppTest:
            return app.run()

        t, done = timed(render, repeats)
        out[page.slug] = {"render_s": t, "errors": [e.value for e in done.exception] + [e.value for e in done.error]}
    return out


CHROMIUM = Path("/usr/bin/chromium")
_SETTLED = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def _serve(script: Path, url: str) -> tuple[subprocess.Popen[bytes], str]:
    """`streamlit run script` headless on a free loopback port against the store at `url`; waits for health."""
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    cmd = [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true", "--server.port",
           str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "PERFLEDGER_DB_URL": url},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=1):
                return proc, base
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"streamlit did not start for {script}")


def bench_browser(url: str, work: Path, repeats: int, *, warm: bool = True) -> dict[str, Any]:
    """Each page's time to render in Chromium (fresh context each time, so no session is reused) against an empty
    Streamlit page; the first, warming load of each is not timed (with `warm`; --quick leaves it out)."""
    if not CHROMIUM.exists():
        return {"error": "needs /usr/bin/chromium"}
    from playwright.sync_api import sync_playwright

    from screens import PAGES

    blank = work / "blank_page.py"
    blank.write_text("import streamlit as st\n\nst.title('blank')\n")
    servers = [_serve(ROOT / "app.py", url), _serve(blank, url)]
    out: dict[str, Any] = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                        args=["--no-sandbox", "--disable-gpu", "--no-first-run"])

            def load(address: str) -> None:
                ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
                page = ctx.new_page()
                page.goto(address, wait_until="networkidle", timeout=120_000)
                page.wait_for_selector(_SETTLED, timeout=120_000)
                page.wait_for_function("() => !document.querySelector('[data-stale=\"true\"]')", timeout=120_000)
                ctx.close()

            app_base, blank_base = servers[0][1], servers[1][1]
            if warm:
                load(blank_base)
            t_blank, _ = timed(partial(load, blank_base), repeats)
            out["blank"] = {"render_s": t_blank}
            for page_ in PAGES:
                address = f"{app_base}/{page_.slug}"
                if warm:
                    load(address)
                t, _ = timed(partial(load, address), repeats)
                out[page_.slug] = {"render_s": t, "ratio": t["median"] / t_blank["median"]}
            browser.close()
    finally:
        for proc, _ in servers:
            proc.terminate()
            proc.wait(timeout=10)
    return out


def bench_csv(url: str, n_rows: int, repeats: int) -> dict[str, Any]:
    import io

    from perfledger import store, views

    engine = store.engine_from_url(url)
    frame = store.results(engine).head(n_rows)
    engine.dispose()
    t_ours, ours = timed(lambda: views.render(frame, "csv"), repeats)

    def plain() -> bytes:
        buf = io.BytesIO()
        frame.write_csv(buf)
        return buf.getvalue()

    t_pl, ref = timed(plain, repeats)
    return {"rows": frame.height, "ours_s": t_ours, "polars_s": t_pl, "ratio": t_ours["median"] / t_pl["median"],
            "same_bytes": ours == ref}


# ---------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, seconds (CI smoke test)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="build inputs in this directory and keep them")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: ingest,mlperf,views,pages,browser,csv")
    ap.add_argument("--formats", default="", help="comma list of formats to ingest (default: every one with inputs)")
    args = ap.parse_args(argv)
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


if __name__ == "__main__":
    raise SystemExit(main())
