"""Measure how many held-out real logs (tests/fixtures/unseen) the ingest code reads right.

For each row of tests/fixtures/unseen/manifest.csv this runs
`python -m ingest FILE --json --db duckdb:///<fresh tmp>/s.duckdb [--devices N]`
(empty stdout, or a JSON object with `error` / no `format`, counts as refused)
and compares the log's own steady-state figure (own_value, worked out by hand from
the values the log prints) with the figure the product recomputed.  Only recomputed
figures count: a value that is merely echoed in `reported` is not a match.

A manifest with `model`, `n_devices` or `accelerator` columns (tests/fixtures/logs_own_figures.csv) also checks
that the run's stored configuration names what the log states (an empty cell: the log states none).

Usage: python bench/unseen.py [--json] [--manifest CSV]      (always exits 0)
"""
from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
UNSEEN = ROOT / "tests" / "fixtures" / "unseen"
TOLERANCE = 0.01
TIMEOUT_S = 600


def run_ingest(path: Path, devices: str) -> tuple[dict[str, Any] | None, str]:
    """Return (JSON object or None, reason when refused)."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "ingest", str(path), "--json", "--db", f"duckdb:///{tmp}/s.duckdb"]
        if devices:
            cmd += ["--devices", devices]
        try:
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            return None, f"timed out after {TIMEOUT_S}s"
    for line in proc.stdout.splitlines():
        if line.strip().startswith("{"):
            try:
                return json.loads(line), ""
            except json.JSONDecodeError:
                continue
    err = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    return None, (err[0] if err else f"no JSON on stdout (exit {proc.returncode})")


def result_value(obj: dict[str, Any], metric: str) -> float | None:
    for res in obj.get("results") or []:
        if res.get("metric") == metric and res.get("value") is not None:
            return float(res["value"])
    return None


def product_value(obj: dict[str, Any], metric: str) -> tuple[float | None, str]:
    """The product's recomputed figure for `metric`, and a note when only `reported` has one."""
    steady: dict[str, Any] = obj.get("steady_state") or {}
    reported: dict[str, Any] = obj.get("reported") or {}
    value: Any = None
    if metric == "step_time_s":
        value = steady.get("step_time_s_median")
    elif metric in ("tokens_per_s_per_device", "tokens_per_s", "model_tflops_per_device"):
        value = steady.get(metric)
    elif metric == "samples_per_s":
        value = result_value(obj, "samples_per_s")
        if value is None:
            value = steady.get("samples_per_s")
    elif metric == "time_to_train_s":
        value = result_value(obj, "time_to_train_s")
    if value is not None:
        return float(value), ""
    echoed = {"tokens_per_s_per_device": "reported_tokens_per_s_per_device",
              "model_tflops_per_device": "reported_tflops_per_device"}.get(metric)
    if echoed and reported.get(echoed) is not None:
        return None, f"only reported ({reported[echoed]:.6g}), not recomputed"
    return None, "no figure"


IDENTITY = ("model", "n_devices", "accelerator")


def identity_misses(obj: dict[str, Any], row: dict[str, str]) -> list[str]:
    """The identity fields the manifest states that the stored configuration does not hold as stated."""
    config: dict[str, Any] = obj.get("config") or {}
    return [f"{field} {config.get(field)!r} (log: {row[field]})" for field in IDENTITY
            if (row.get(field) or "").strip() and str(config.get(field)) != row[field].strip()]


def measure(row: dict[str, str], folder: Path = UNSEEN) -> dict[str, Any]:
    own = float(row["own_value"])
    obj, reason = run_ingest(folder / row["file"], row.get("devices", "").strip())
    rec: dict[str, Any] = {"file": row["file"], "framework": row["framework"], "kind": row["kind"],
                           "metric": row["own_metric"], "own": own, "read": obj is not None,
                           "format": None, "product": None, "rel_diff": None, "ok": False, "note": reason}
    if obj is not None and (obj.get("error") or not obj.get("format")):
        rec["read"] = False  # a JSON object that says the file was refused
        msg = str(obj.get("error") or "no format detected").split(" (known:")[0]
        rec["note"] = msg.split(": ", 1)[1] if msg.startswith(str(obj.get("file"))) else msg
    if not rec["read"] or obj is None:
        return rec
    rec["format"] = obj.get("format")
    rec["steps"] = obj.get("steps")
    value, note = product_value(obj, row["own_metric"])
    rec["product"], rec["note"] = value, note
    if value is not None and own:
        rec["rel_diff"] = (value - own) / own
        rec["ok"] = abs(rec["rel_diff"]) <= TOLERANCE
    rec["identity_misses"] = identity_misses(obj, row)
    rec["identity_ok"] = not rec["identity_misses"]
    return rec


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the per-file records as a JSON list")
    ap.add_argument("--manifest", type=Path, default=UNSEEN / "manifest.csv",
                    help="the manifest to measure (its file column is relative to the manifest's folder)")
    args = ap.parse_args()
    with open(args.manifest, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    records = [measure(r, args.manifest.parent) for r in rows]
    if args.json:
        print(json.dumps(records, indent=1))
        return 0
    for r in records:
        fmt_read = f"format={r['format']}" if r["read"] else f"REFUSED: {r['note']}"
        diff = "-" if r["rel_diff"] is None else f"{100 * r['rel_diff']:+.2f}%"
        tail = "" if r["ok"] or not r["read"] or not r["note"] else f"  ({r['note']})"
        tail += "".join(f"  [identity: {m}]" for m in r.get("identity_misses", []))
        print(f"{r['file']:<62} {fmt_read:<28} {r['metric']:<16} own={fmt(r['own']):<12} "
              f"product={fmt(r['product']):<12} diff={diff:<9} {'OK' if r['ok'] else 'FAIL'}{tail}")
    n = len(records)
    print(f"read: {sum(r['read'] for r in records)} of {n}")
    print(f"within 1%: {sum(r['ok'] for r in records)} of {n}")
    if any(any((row.get(f) or "").strip() for f in IDENTITY) for row in rows):
        print(f"identity as stated: {sum(r.get('identity_ok', False) for r in records)} of {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
