"""bench/run.py's report: the headline figures judged against their targets, and the table it prints."""

from __future__ import annotations

from typing import Any

from store_pages import FLOOR

TARGETS = {"ingest_vs_wc_ratio": 0.03, "ingest_vs_regex_loop_ratio": 2.0, "parser_vs_regex_loop_min": 2.0,
           "ingest_peak_rss_mb": 300.0, "mlperf_vs_reference_ratio": 3.0, "view_vs_sql_ratio_max": 2.0,
           "browser_vs_blank_ratio_max": 2.0, "upload_preview_extra_s": 2.0, "round_s": 30.0,
           "round_vs_summarizer_ratio": 6.0}
AT_LEAST = {"ingest_vs_wc_ratio", "ingest_vs_regex_loop_ratio", "parser_vs_regex_loop_min", "mlperf_vs_reference_ratio",
            "round_vs_summarizer_ratio"}


def fmt_t(s: dict[str, float]) -> str:
    return f"{s['median']:.3f} s [{s['min']:.3f}-{s['max']:.3f}]"


def headline(r: dict[str, Any]) -> dict[str, Any]:
    """The figures the README quotes; ingest ones are for the largest Megatron file of the run."""
    h: dict[str, Any] = {}
    meg = [x for x in r.get("ingest", []) if x["format"] == "megatron"]
    if meg:
        big, small = meg[-1], meg[0]
        h |= {"ingest_file_mb": round(big["file_mb"], 1), "ingest_mb_s": round(big["mb_s"]["median"], 1),
              "ingest_vs_wc_ratio": round(big["vs_wc"], 4), "ingest_vs_regex_loop_ratio": round(big["vs_regex_loop"], 2),
              "ingest_peak_rss_mb": round(big["peak_rss_mb"]["max"], 1),
              "ingest_peak_rss_mb_small_file": round(small["peak_rss_mb"]["max"], 1)}
    parsers = r.get("ingest", [])
    if parsers:
        slowest = min(parsers, key=lambda x: x["parser_vs_regex_loop"])
        h |= {"parser_vs_regex_loop_min": round(slowest["parser_vs_regex_loop"], 2),
              "parser_slowest_vs_loop": slowest["format"]}
    views_ = {k: v for k, v in r.get("views", {}).items() if "ratio" in v}
    if views_:
        worst = max(views_, key=lambda k: views_[k]["ratio"])
        h |= {"view_vs_sql_ratio_max": round(views_[worst]["ratio"], 2), "view_vs_sql_slowest": worst}
    pages_ = {k: v for k, v in r.get("browser", {}).items() if "ratio" in v and k != FLOOR}
    if pages_:
        worst = max(pages_, key=lambda k: pages_[k]["ratio"])
        h |= {"browser_vs_blank_ratio_max": round(pages_[worst]["ratio"], 2), "browser_slowest_page": worst}
        if FLOOR in r["browser"]:
            h["browser_floor_ratio"] = round(r["browser"][FLOOR]["ratio"], 2)
    if "preview_extra_s" in r.get("upload", {}):
        h["upload_preview_extra_s"] = round(r["upload"]["preview_extra_s"], 2)
    if "csv" in r:
        h["csv_export_vs_polars_ratio"] = round(r["csv"]["ratio"], 2)
    if "round" in r:
        x = r["round"]
        h |= {"round_files": x["files"], "round_s": round(x["ours_s"]["median"], 1),
              "round_vs_summarizer_ratio": round(x["ratio"], 2), "round_scores_equal": not x["scores_unequal"]}
    if "ours_vs_reference" in r.get("mlperf_reader", {}):
        h["mlperf_vs_reference_ratio"] = round(r["mlperf_reader"]["ours_vs_reference"], 2)
    h["meets"] = {k: (h[k] >= v if k in AT_LEAST else h[k] <= v)
                  for k, v in TARGETS.items() if k in h}
    return h


def print_table(r: dict[str, Any]) -> None:
    m = r["machine"]
    print(f"perfledger bench ({r['mode']}, median of {r['repeats']} [min-max])")
    print(f"machine: {m['cpu']}, {m['cores']} cores ({m['usable_cores']} usable, load {m['load_1min']:.1f}), "
          f"python {m['python']}, duckdb {m['duckdb']}, polars {m['polars']}")
    if "startup" in r:
        s = r["startup"]
        print(f"\nprocess fixed cost (tiny log): {fmt_t(s['seconds'])}, peak RSS {s['peak_rss_mb']['max']:.0f} MB")
    if "ingest" in r:
        print(f"\n{'format':<14}{'MB':>7}{'steps':>10}  {'ingest MB/s [min-max]':<24}{'wc MB/s':>9}{'loop MB/s':>10}"
              f"{'vs wc':>8}{'vs loop':>8}{'peak RSS MB':>12}")
        for x in r["ingest"]:
            mbs = x["mb_s"]
            print(f"{x['format']:<14}{x['file_mb']:>7.0f}{x['steps']:>10}  "
                  f"{mbs['median']:>6.1f} [{mbs['min']:.1f}-{mbs['max']:.1f}]{'':<7}{x['wc_mb_s']:>9.0f}"
                  f"{x['regex_loop_mb_s']:>10.1f}{x['vs_wc']:>8.4f}{x['vs_regex_loop']:>8.2f}"
                  f"{x['peak_rss_mb']['max']:>12.0f}")
        print(f"\nparser alone (prepare: detect, parse, summary; no start-up, no store) vs the loop alone, "
              f"target >= {TARGETS['parser_vs_regex_loop_min']:g}x:")
        print(f"{'format':<14}{'MB':>7}{'parser s [min-max]':>26}{'loop s [min-max]':>26}{'vs loop':>8}")
        for x in r["ingest"]:
            print(f"{x['format']:<14}{x['file_mb']:>7.0f}{fmt_t(x['parse_s']):>26}{fmt_t(x['loop_work_s']):>26}"
                  f"{x['parser_vs_regex_loop']:>8.2f}")
    if "mlperf_reader" in r:
        x = r["mlperf_reader"]
        ref = (f", mlperf-logging {x['mlperf_logging']} (ruleset {x['ruleset']}) {fmt_t(x['reference_s'])}, "
               f"ours {x['ours_vs_reference']:.2f}x faster"
               if "reference_s" in x else f", mlperf-logging: {x['mlperf_logging']}")
        print(f"\nMLPerf parser on {x['file_mb']:.0f} MB: ours {fmt_t(x['ours_s'])} ({x['ours_mb_s']:.1f} MB/s){ref}")
    if "store" in r:
        s = r["store"]
        print(f"\nstore: {s['run']:,} runs, {s['step']:,} steps, {s['result']:,} results (built in {s['setup_s']:.1f} s)")
    if "views" in r:
        print(f"{'page table':<24}{'ours':>28}{'bare SQL':>28}{'ratio':>8}{'rows':>10}")
        for name, v in r["views"].items():
            if "error" in v:
                print(f"{name:<24}  ERROR {v['error']}")
                continue
            print(f"{name:<24}{fmt_t(v['view_s']):>28}{fmt_t(v['sql_s']):>28}{v['ratio']:>8.2f}{v['rows']:>10}")
    if "pages" in r:
        print("\nAppTest render of each page (whole page: table, chart, widgets), default view:")
        for slug, v in r["pages"].items():
            errors = f"  ERRORS: {v['errors']}" if v["errors"] else ""
            print(f"{slug:<24}{fmt_t(v['render_s']):>28}{errors}")
    if "browser" in r:
        b = r["browser"]
        if "error" in b:
            print(f"\nChromium render: skipped ({b['error']})")
        else:
            print(f"\nChromium render (navigation until drawn: script done, nothing stale, every chart and table "
                  f"drawn, no request for 0.5 s), each load paired with an empty page's just before it (all: "
                  f"{fmt_t(b['blank']['render_s'])}); ratio: median [min-max] of the pairs'; "
                  f"target <= {TARGETS['browser_vs_blank_ratio_max']:g}x:")
            for slug, v in b.items():
                if slug == "blank":
                    continue
                name = "floor (table+chart only)" if slug == FLOOR else slug
                spread = f" [{v['ratio_min']:.2f}-{v['ratio_max']:.2f}]" if "ratio_min" in v else ""
                print(f"{name:<24}{fmt_t(v['render_s']):>28}  blank {fmt_t(v['paired_blank_s'])}"
                      f"{v['ratio']:>8.2f}x{spread}")
    if "csv" in r:
        c = r["csv"]
        print(f"\nCSV export, {c['rows']:,} rows: views.render {fmt_t(c['ours_s'])}, polars write_csv "
              f"{fmt_t(c['polars_s'])}, ratio {c['ratio']:.2f} (same bytes: {c['same_bytes']})")
    if "round" in r:
        x = r["round"]
        print(f"\nMLPerf round: {x['files']:,} result files, {x['mb']:.0f} MB ({len(x['broken'])} broken on purpose): "
              f"python -m ingest ROUND {fmt_t(x['ours_s'])}, peak RSS {x['peak_rss_mb']['max']:.0f} MB (exit "
              f"{x['exit_codes'][0]}); result_summarizer {fmt_t(x['summarizer_s'])}: {x['ratio']:.2f}x; scores of "
              f"{x['scored_by_both']} benchmarks scored by both, unequal: {x['scores_unequal'] or 'none'} "
              f"(ours only {x['scored_by_us_only']}, summarizer only {x['scored_by_summarizer_only']})")
    if "upload" in r:
        u = r["upload"]
        if "error" in u:
            print(f"\nupload in Chromium: skipped ({u['error']})")
        else:
            print(f"\nupload of a {u['log_mb']:.1f} MB Megatron log on the Runs page in Chromium vs `python -m ingest "
                  f"--dry-run` ({fmt_t(u['cli_dry_run_s'])}): preview {fmt_t(u['preview_s'])} "
                  f"({u['preview_extra_s']:+.2f} s, target <= +{u['target_extra_s']:g} s), apply {fmt_t(u['apply_s'])}, "
                  f"store {fmt_t(u['store_s'])}")
    h = r["headline"]
    print("\nheadline: " + ", ".join(f"{k}={v}" for k, v in h.items() if k != "meets"))
    if r["mode"] == "quick":
        print("targets:  judged on the full run only (the quick sizes are a smoke test)")
    else:
        print("targets:  " + ", ".join(f"{k} {'ok' if ok else 'MISSED'}" for k, ok in h["meets"].items()))
    print(f"total {r['total_s']:.1f} s")


