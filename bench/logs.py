"""bench/run.py's ingest part: each format's parser and whole ingest against its plain loop and `wc -l`, the
process's fixed cost, and the MLPerf parser against MLCommons' reader."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from measure import HERE, MB, ROOT, run_child, stats, timed

BASELINES = HERE / "baselines.py"  # run as a child: python bench/baselines.py FORMAT FILE -> rows, seconds
PARSE_ONLY = HERE / "parse_only.py"  # run as a child: python bench/parse_only.py FILE -> steps, seconds
MLPERF_RULESET = "5.1.0"

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


