"""Score the claims import and the audit on published tables against a hand-worked oracle.

For every FILE.csv of a folder (FILE.expected.csv beside it is its oracle: one row per printed table row and
relation its columns allow, with the verdict a careful engineer gives; a table with none is scored for storage only)
this copies one store made by `python -m perfledger init`, then runs

    python -m ingest FILE --json --db duckdb:///TMP/s.duckdb
    python -m perfledger export sources "src=ID" --format json --db ...   (each source the file names)
    python -m perfledger audit --format json --db ...

and reports per table: figures and table rows printed and stored (a table row is stored when every figure printed
in it is), the relations the oracle lists, those the product checked, the verdicts that agree and the wrong ones,
and the rows the publisher's own formula contradicts that the product flags. A product verdict is put on a table
row by the locator of its claim (the audit's `locator`, else the sources export's row for its `claim_id`) and on a
relation by its `relation`, else by its metric; one that cannot be put on an oracle row counts as unchecked there,
and as an extra verdict of the table.

Usage: python bench/tables.py [FOLDER] [--json]      (default tests/fixtures/claims_heldout; always exits 0)
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FOLDER = ROOT / "tests" / "fixtures" / "claims_heldout"
TIMEOUT_S = 600
CHECKED = ("consistent", "inconsistent", "other convention")
METRIC_RELATION = {
    "model_tflops_per_device": "tflops", "mfu": "mfu", "hfu": "mfu", "time_to_train_s": "time_to_train",
    "est_days_to_train_10T_tokens_1k_gpus": "time_to_train", "est_days_to_train_1T_tokens_1k_gpus": "time_to_train",
    "est_minutes_to_finetune_10M_tokens": "time_to_train", "relative_throughput": "speedup",
    "scaling_efficiency": "scaling", "tokens_per_s_per_device": "throughput", "tokens_per_s": "throughput",
    "step_time_s": "throughput", "global_batch": "batch_decomposition",  # GBS = MBS x DP x GA, judged on the GBS cell
}
RELATION_WORDS = (  # a word in the audit's `relation` -> the oracle's relation name, first match wins
    ("tokensperstep", "tokens_per_step"), ("publisher", "publisher_formula"), ("tflop", "tflops"), ("mfu", "mfu"),
    ("timetotrain", "time_to_train"), ("speedup", "speedup"), ("relativethroughput", "speedup"),
    ("gradientaccum", "batch_decomposition"), ("batchdecomposition", "batch_decomposition"),
    ("memoryfraction", "memory_fraction"), ("memoryshare", "memory_fraction"), ("memoryratio", "memory_ratio"),
    ("throughput", "throughput"))


def product(args: list[str], db: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", *args, "--db", f"duckdb:///{db}"]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


def first_json(text: str) -> Any:
    """The first JSON document in a command's output: an object on one line, or an indented array."""
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None
    try:
        return json.JSONDecoder().raw_decode(text[start:])[0]
    except json.JSONDecodeError:
        return None


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def template_store(tmp: Path) -> Path:
    db = tmp / "template.duckdb"
    done = subprocess.run([sys.executable, "-m", "perfledger", "init", "--db", f"duckdb:///{db}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise SystemExit(f"perfledger init failed: {done.stderr.strip()[-500:]}")
    return db


def ingest(path: Path, db: Path) -> tuple[dict[str, Any], str]:
    """The import's JSON object, and the sentence that refused the file whole ("" when it was not)."""
    done = product(["ingest", str(path), "--json"], db)
    obj = first_json(done.stdout)
    if not isinstance(obj, dict):
        err = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        return {}, err[-1] if err else f"no JSON on stdout (exit {done.returncode})"
    return obj, (obj.get("error") or "") if not obj.get("format") else ""


def stored(db: Path, source_ids: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for source in source_ids:
        found = first_json(product(["perfledger", "export", "sources", f"src={source}", "--format", "json"], db).stdout)
        rows += found if isinstance(found, list) else []
    return rows


def audited(db: Path, source_ids: list[str]) -> list[dict[str, Any]]:
    found = first_json(product(["perfledger", "audit", "--format", "json"], db).stdout)
    return [r for r in found or [] if r.get("source_id") in source_ids]


def relation_of(verdict: dict[str, Any]) -> str:
    named = re.sub(r"[^a-z]", "", str(verdict.get("relation") or "").lower())
    for word, relation in RELATION_WORDS:
        if named and word in named:
            return relation
    metric = str(verdict.get("metric") or "")
    return METRIC_RELATION.get(metric, metric)


def locator_of(verdict: dict[str, Any], by_id: dict[Any, dict[str, Any]]) -> str | None:
    if verdict.get("locator"):
        return str(verdict["locator"])
    return (by_id.get(verdict.get("claim_id")) or {}).get("locator")


def number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def pick(candidates: list[dict[str, Any]], oracle_row: dict[str, str]) -> dict[str, Any] | None:
    """The product verdict for an oracle row among those on its table row and relation: the one whose reported
    figure is nearest the printed figure the relation judges (a cell that prints two figures gives two rows)."""
    if not candidates:
        return None
    target = number(oracle_row.get("printed_value"))
    if target is None:
        return candidates[0]
    return min(candidates, key=lambda v: abs((number(v.get("reported")) or 0.0) - target) / max(abs(target), 1e-12))


def match(oracle: list[dict[str, str]], verdicts: list[dict[str, Any]],
          by_id: dict[Any, dict[str, Any]]) -> tuple[list[dict[str, Any] | None], list[dict[str, Any]]]:
    """Each oracle row's product verdict (None when none), and the product verdicts no oracle row took."""
    pool: dict[tuple[str | None, str], list[dict[str, Any]]] = {}
    for verdict in verdicts:
        pool.setdefault((locator_of(verdict, by_id), relation_of(verdict)), []).append(verdict)
    taken: list[dict[str, Any] | None] = []
    for row in oracle:
        chosen = pick(pool.get((row["locator"], row["relation"]), []), row)
        if chosen is not None:
            pool[(row["locator"], row["relation"])].remove(chosen)
        taken.append(chosen)
    return taken, [v for left in pool.values() for v in left]


def score_relations(oracle: list[dict[str, str]], taken: list[dict[str, Any] | None]) -> dict[str, Any]:
    counts: Counter[str] = Counter(dict.fromkeys(("listed", "judgeable", "checked", "right", "wrong"), 0))
    by_relation: dict[str, Counter[str]] = {}
    for row, verdict in zip(oracle, taken, strict=True):
        said = (verdict or {}).get("verdict")
        kind = by_relation.setdefault(row["relation"], Counter())
        kind["listed"] += 1
        counts["listed"] += 1
        counts["judgeable"] += row["verdict"] != "unchecked"
        if said not in CHECKED:
            continue
        for key in ("checked", "right" if said == row["verdict"] else "wrong"):
            counts[key] += 1
            kind[key] += 1
        counts["inconsistent flagged"] += row["verdict"] == said == "inconsistent"
        counts["publisher formula flagged"] += row["relation"] == "publisher_formula" and said == row["verdict"] == \
            "inconsistent"
    counts["inconsistent"] = sum(r["verdict"] == "inconsistent" for r in oracle)
    counts["publisher formula contradicts"] = sum(
        r["relation"] == "publisher_formula" and r["verdict"] == "inconsistent" for r in oracle)
    return {"relations": dict(counts), "by_relation": {k: dict(v) for k, v in sorted(by_relation.items())}}


def score_table(path: Path, template: Path, tmp: Path) -> dict[str, Any]:
    printed = csv_rows(path)
    source_ids = sorted({r.get("source_id") or "" for r in printed} - {""})
    oracle_path = path.with_name(path.stem + ".expected.csv")
    oracle = csv_rows(oracle_path) if oracle_path.exists() else []
    db = tmp / f"{path.stem}.duckdb"
    shutil.copyfile(template, db)
    obj, refused_whole = ingest(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path, db)
    rows = stored(db, source_ids)
    verdicts = audited(db, source_ids)
    taken, extra = match(oracle, verdicts, {r.get("id"): r for r in rows})
    per_locator = Counter(r["locator"] for r in printed)
    stored_at = Counter(r.get("locator") for r in rows)
    return {
        "table": path.name, "sources": source_ids, "refused_whole": refused_whole or None,
        "imported": obj.get("imported"), "refused_rows": obj.get("refused") or {},
        "figures_printed": len(printed), "figures_stored": len(rows),
        "rows_printed": len(per_locator),
        "rows_stored": sum(stored_at[loc] >= n for loc, n in per_locator.items()),
        "oracle": oracle_path.name if oracle else None,
        **score_relations(oracle, taken),
        "extra_verdicts": dict(Counter(f"{relation_of(v)}: {v.get('verdict')}" for v in extra)),
    }


def totals(reports: list[dict[str, Any]]) -> dict[str, int]:
    keys = ("figures_printed", "figures_stored", "rows_printed", "rows_stored")
    out = {k: sum(r[k] for r in reports) for k in keys}
    for r in reports:
        for k, v in r["relations"].items():
            out[k] = out.get(k, 0) + v
    return out


def line(r: dict[str, Any]) -> str:
    rel = r["relations"]
    text = (f"{r['table']}: rows {r['rows_stored']}/{r['rows_printed']} stored (figures {r['figures_stored']}/"
            f"{r['figures_printed']}); relations checked {rel.get('checked', 0)}/{rel.get('listed', 0)} "
            f"({rel.get('judgeable', 0)} judgeable), right {rel.get('right', 0)}, wrong {rel.get('wrong', 0)}; "
            f"inconsistent flagged {rel.get('inconsistent flagged', 0)}/{rel.get('inconsistent', 0)}; publisher "
            f"formula flagged {rel.get('publisher formula flagged', 0)}/{rel.get('publisher formula contradicts', 0)}")
    if r["refused_whole"]:
        text += f"\n    refused whole: {r['refused_whole']}"
    if r["refused_rows"]:
        text += f"\n    rows refused: {r['refused_rows']}"
    if r["extra_verdicts"]:
        text += f"\n    verdicts on no oracle relation: {r['extra_verdicts']}"
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER)
    parser.add_argument("--json", action="store_true", help="one JSON document: per table and totals")
    args = parser.parse_args()
    tables = sorted(p for p in args.folder.glob("*.csv") if not p.name.endswith(".expected.csv"))
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        template = template_store(tmp)
        reports = [score_table(path, template, tmp) for path in tables]
    if args.json:
        print(json.dumps({"folder": str(args.folder), "tables": reports, "totals": totals(reports)}, indent=1))
    else:
        print("\n".join(line(r) for r in reports))
        print("totals: " + ", ".join(f"{k} {v}" for k, v in totals(reports).items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
