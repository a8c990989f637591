"""Measure how many held-out real logs (a folder with a manifest.csv) the ingest code reads right.

For each row of FOLDER/manifest.csv this runs
`python -m ingest FILE --json --db duckdb:///<fresh tmp>/s.duckdb [--devices N]`
(empty stdout, or a JSON object with `error` / no `format`, counts as refused)
and scores four things:
- the format is read (not refused);
- the log's own steady-state figure (own_value, worked out by hand from the values the log prints) is
  recomputed within 1%; only recomputed figures count, a value merely echoed in `reported` is not a match
  (`--devices` is passed only from the `devices` column, which some per-device figures need);
- where the manifest has a `model` (a catalog id the log names), the stored config's `model` equals it;
- where the manifest has `devices_stated`, the stored config's `n_devices` equals it, read from a run given
  no `--devices` hint (the point is whether the product reads the count from the log); a manifest may call that
  column `n_devices` (tests/fixtures/logs_own_figures.csv), and an `accelerator` column is scored the same way.

Usage: python bench/unseen.py [--dir FOLDER | --manifest CSV] [--json]   (default tests/fixtures/unseen; exits 0)
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


def devices_stated(row: dict[str, str]) -> str:
    return (row.get("devices_stated") or row.get("n_devices") or "").strip()


def identity_checks(row: dict[str, str], obj: dict[str, Any] | None) -> dict[str, Any]:
    """The model, device count and accelerator the product stored, against the manifest's (None where the manifest
    has none)."""
    config: dict[str, Any] = (obj or {}).get("config") or {}
    model, devices = (row.get("model") or "").strip(), devices_stated(row)
    accelerator = (row.get("accelerator") or "").strip()
    got_devices = config.get("n_devices")
    return {"model_expected": model or None, "model_got": config.get("model"),
            "model_ok": (config.get("model") == model) if model else None,
            "devices_expected": int(devices) if devices else None, "devices_got": got_devices,
            "devices_ok": (got_devices == int(devices)) if devices else None,
            "accelerator_expected": accelerator or None, "accelerator_got": config.get("accelerator"),
            "accelerator_ok": (config.get("accelerator") == accelerator) if accelerator else None}


def measure(row: dict[str, str], folder: Path) -> dict[str, Any]:
    own = float(row["own_value"])
    hint = row.get("devices", "").strip()
    obj, reason = run_ingest(folder / row["file"], hint)
    plain = run_ingest(folder / row["file"], "")[0] if hint and devices_stated(row) else obj
    rec: dict[str, Any] = {"file": row["file"], "framework": row["framework"], "kind": row["kind"],
                           "metric": row["own_metric"], "own": own, "read": obj is not None,
                           "format": None, "product": None, "rel_diff": None, "ok": False, "note": reason}
    rec |= identity_checks(row, plain if plain is not None and not plain.get("error") else None)
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
    return rec


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def identity_text(expected: object, got: object, ok: bool | None) -> str:
    if ok is None:
        return "-"
    return "OK" if ok else f"FAIL (want {expected}, got {got})"


def share(records: list[dict[str, Any]], key: str) -> str:
    scored = [r[key] for r in records if r[key] is not None]
    return f"{sum(scored)} of {len(scored)}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=UNSEEN, help="folder with the logs and their manifest.csv")
    ap.add_argument("--manifest", type=Path, help="a manifest CSV elsewhere (its file column relative to its folder)")
    ap.add_argument("--json", action="store_true", help="print the per-file records as a JSON list")
    args = ap.parse_args()
    manifest = args.manifest or (args.dir if args.dir.is_absolute() else ROOT / args.dir) / "manifest.csv"
    folder = manifest.parent
    with open(manifest, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    records = [measure(r, folder) for r in rows]
    if args.json:
        print(json.dumps(records, indent=1))
        return 0
    for r in records:
        fmt_read = f"format={r['format']}" if r["read"] else f"REFUSED: {r['note']}"
        diff = "-" if r["rel_diff"] is None else f"{100 * r['rel_diff']:+.2f}%"
        tail = "" if r["ok"] or not r["read"] or not r["note"] else f"  ({r['note']})"
        print(f"{r['file']:<62} {fmt_read:<28} {r['metric']:<16} own={fmt(r['own']):<12} "
              f"product={fmt(r['product']):<12} diff={diff:<9} {'OK' if r['ok'] else 'FAIL'}{tail}"
              f"  model: {identity_text(r['model_expected'], r['model_got'], r['model_ok'])}"
              f"  devices: {identity_text(r['devices_expected'], r['devices_got'], r['devices_ok'])}"
              f"  accelerator: {identity_text(r['accelerator_expected'], r['accelerator_got'], r['accelerator_ok'])}")
    n = len(records)
    print(f"read: {sum(r['read'] for r in records)} of {n}")
    print(f"within 1%: {sum(r['ok'] for r in records)} of {n}")
    print(f"model (where the log names one in the catalog): {share(records, 'model_ok')}")
    print(f"devices (where the log states the count): {share(records, 'devices_ok')}")
    print(f"accelerator (where the log states it): {share(records, 'accelerator_ok')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
