"""bench/run.py's store part: a 1,000-run store built in bulk, each page's table against its bare SQL, each page
rendered by AppTest and in Chromium, and the CSV export against polars."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from measure import ROOT, first_value, stats, timed

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
    seeded = first_value(con.execute("SELECT count(*) FROM result").fetchone())
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
    counts = {t: first_value(con.execute(f"SELECT count(*) FROM {t}").fetchone()) for t in ("run", "step", "result")}
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
    "history": """SELECT r.id, r.run_id, r.model_id, r.accelerator_id, r.n_devices, r.precision, r.framework, r.tp,
                         r.pp, r.dp, r.cp, r.ep, r.strategy, r.framework_version, r.metric, r.value, r.unit,
                         r.evidence, run.file_name, run.ran_at, run.ingested_at
                  FROM result r JOIN run ON r.run_id = run.id
                  WHERE r.metric = 'tokens_per_s_per_device' AND run.format <> 'claims_csv'
                  ORDER BY r.run_id, r.id""",
    "campaigns": """SELECT c.id, c.name, c.kind, c.imported_at, count(o.id) AS attempts, count(o.run_id) AS runs,
                           coalesce(sum(CASE WHEN o.kind <> 'completed' THEN 1 ELSE 0 END), 0) AS failed,
                           c.score, c.score_unit, c.score_rule, c.score_note
                    FROM campaign c LEFT JOIN outcome o ON o.campaign_id = c.id
                    GROUP BY c.id, c.name, c.kind, c.imported_at, c.score, c.score_unit, c.score_rule, c.score_note
                    ORDER BY c.id DESC""",
    "audit": _RESULTS_SQL,
    "mlperf": """SELECT r.id, r.file_name, r.config, x.id AS result_id, x.value / 60 AS minutes
                 FROM run r LEFT JOIN result x ON x.run_id = r.id AND x.metric = 'time_to_train_s'
                 WHERE r.format = 'mlperf' ORDER BY r.id DESC""",
    "sources": """SELECT s.id, s.kind, s.date, s.title, s.publisher, s.url, s.evidence,
                         coalesce(n.n, 0) AS n_results
                  FROM source s LEFT JOIN (SELECT source_id, count(*) AS n FROM result GROUP BY 1) n
                  ON n.source_id = s.id ORDER BY s.id""",
}
_STEPS_SQL = """SELECT step, step_time_s, tokens, samples, loss, lr, grad_norm, reported_tflops_per_device,
                       reported_mfu, reported_tokens_per_s_per_device, memory_gb
                FROM step WHERE run_id = ? ORDER BY step"""


def _computed_afresh(slug: str, state: Any, engine: Any) -> Any:
    """The page's table with nothing remembered from an earlier call (perfledger.views.remembered)."""
    from perfledger import views
    from perfledger.views.remembered import forget

    forget()
    return views.table(slug, state, engine)


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
            t_view, frame = timed(partial(_computed_afresh, slug, state, engine), repeats)
            t_again, _ = timed(partial(views.table, slug, state, engine), repeats)
        except Exception as exc:  # noqa: BLE001  (a page that fails is reported in its row; the others are timed)
            pages[slug] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            continue
        t_sql, ref = timed(partial(bare, BARE_SQL[slug]), repeats)
        pages[slug] = {"view_s": t_view, "view_remembered_s": t_again, "sql_s": t_sql, "rows": frame.height,
                       "sql_rows": ref.height, "ratio": t_view["median"] / t_sql["median"]}
    with duckdb.connect(str(db_path), read_only=True) as con:
        big = first_value(con.execute("SELECT run_id FROM step GROUP BY 1 ORDER BY count(*) DESC LIMIT 1").fetchone())
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
        app = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=120).run()
        app.switch_page(page.file)

        def render(app: AppTest = app) -> AppTest:
            return app.run()

        t, done = timed(render, repeats)
        out[page.slug] = {"render_s": t, "errors": [e.value for e in done.exception] + [e.value for e in done.error]}
    return out


CHROMIUM = Path("/usr/bin/chromium")
_SETTLED = '[data-testid="stApp"][data-test-script-state="notRunning"]'
# Drawn: the script's elements are all on screen. A chart, a table or a download button whose code is still
# loading shows as a skeleton after the script has finished; a chart or a table is drawn once it has its canvas.
_DRAWN = """() => !document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]')
  && [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')].every(e => e.querySelector('canvas, svg'))
  && [...document.querySelectorAll('[data-testid="stDataFrame"]')].every(e => e.querySelector('canvas'))"""
QUIET_S = 0.5  # as Playwright's networkidle: no request for 500 ms


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


def _to_idle(page: Any, address: str) -> float:
    """Seconds from navigation to idle: the script finished, everything it drew on screen (see _DRAWN), and no
    request in flight or made for QUIET_S since. Waiting for the network alone ended before a chart's code had
    arrived: with no request during the script's run, the network was idle before the page was drawn."""
    in_flight, last = 0, time.perf_counter()

    def sent(_: Any) -> None:
        nonlocal in_flight, last
        in_flight, last = in_flight + 1, time.perf_counter()

    def ended(_: Any) -> None:
        nonlocal in_flight, last
        in_flight, last = in_flight - 1, time.perf_counter()

    page.on("request", sent)
    page.on("requestfinished", ended)
    page.on("requestfailed", ended)
    t0 = time.perf_counter()
    page.goto(address, wait_until="commit", timeout=120_000)
    page.wait_for_selector(_SETTLED, timeout=120_000)
    page.wait_for_function(_DRAWN, timeout=120_000, polling=20)
    drawn = time.perf_counter()
    while in_flight > 0 or time.perf_counter() - last < QUIET_S:
        page.wait_for_timeout(20)
    return max(drawn, last + QUIET_S) - t0


FLOOR = "floor"  # the browser part's reference page that draws only a table and a chart


def _floor_page(url: str, work: Path) -> Path:
    """A script that draws only what a comparing page cannot do without: the Accelerators page's default chart
    and table, as a bare st.vega_lite_chart and st.dataframe under a title. Its ratio is the part of every page's
    ratio that is Streamlit's table and chart code, whatever perfledger draws around them."""
    from perfledger import charts, store, views

    engine = store.engine_from_url(url)
    table = views.table("accelerators", views.PAGE_STATES["accelerators"](), engine)
    engine.dispose()
    chart, rows, script = work / "floor_chart.json", work / "floor_table.parquet", work / "floor_page.py"
    chart.write_text(json.dumps(charts.spec(charts.accelerator_bars, table, table["normalized unit"][0])))
    table.write_parquet(rows)
    script.write_text("import json\n\nimport polars as pl\nimport streamlit as st\n\nst.title('floor')\n"
                      f"st.vega_lite_chart(json.loads(open({str(chart)!r}).read()), width='stretch')\n"
                      f"st.dataframe(pl.read_parquet({str(rows)!r}), width='stretch')\n")
    return script


def bench_browser(url: str, work: Path, repeats: int, *, warm: bool = True) -> dict[str, Any]:
    """Each page's time to render in Chromium, navigation to idle (_to_idle; a fresh context each time, so no
    session or cache is reused), against an empty Streamlit page loaded just before it: a page's ratio is the
    median of its paired ratios, so the machine's load drifting during the run (2 cores, shared) moves both sides
    of a pair alike. The floor page (_floor_page) is timed the same way. The first, warming load of each is not
    timed (with `warm`; --quick leaves it out)."""
    if not CHROMIUM.exists():
        return {"error": "needs /usr/bin/chromium"}
    from playwright.sync_api import sync_playwright

    from screens import PAGES

    blank = work / "blank_page.py"
    blank.write_text("import streamlit as st\n\nst.title('blank')\n")
    servers = [_serve(ROOT / "app.py", url), _serve(blank, url), _serve(_floor_page(url, work), url)]
    out: dict[str, Any] = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                        args=["--no-sandbox", "--disable-gpu", "--no-first-run"])

            def load(address: str) -> float:
                ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
                page = ctx.new_page()
                seconds = _to_idle(page, address)
                ctx.close()
                return seconds

            app_base, blank_base, floor_base = (base for _, base in servers)
            if warm:
                load(blank_base)
            blanks: list[float] = []
            for name, address in [(page_.slug, f"{app_base}/{page_.slug}") for page_ in PAGES] + [(FLOOR, floor_base)]:
                if warm:
                    load(address)
                pairs = [(load(blank_base), load(address)) for _ in range(repeats)]
                blanks += [b for b, _ in pairs]
                ratios = [t / b for b, t in pairs]
                out[name] = {"render_s": stats([t for _, t in pairs]), "paired_blank_s": stats([b for b, _ in pairs]),
                             "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios)}
            out = {"blank": {"render_s": stats(blanks)}} | out
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


