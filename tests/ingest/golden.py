"""Golden summaries of the real log fixtures: what `python -m ingest` concludes from each file.

Regenerate after an intended change, then review the diff:

    .venv/bin/python -m tests.ingest.golden          # rewrites tests/fixtures/logs/*.expected.json
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from ingest.pipeline import IngestOutcome, preview
from perfledger import store

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "fixtures" / "logs"
SKIP_SUFFIXES = (".md", ".expected.json")


def fixtures() -> list[Path]:
    return sorted(p for p in LOGS.iterdir() if p.is_file() and not p.name.endswith(SKIP_SUFFIXES))


def expected_path(log: Path) -> Path:
    return log.with_name(log.name + ".expected.json")


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return None if not math.isfinite(value) else float(f"{value:.5g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def golden_summary(outcome: IngestOutcome) -> dict[str, Any]:
    steady = {k: v for k, v in outcome.summary.steady_state_json().items() if k not in ("rule", "rule_text")}
    return _rounded({
        "format": outcome.format.value,
        "steps": outcome.steps,
        "skipped_lines": outcome.skipped_lines,
        "config": outcome.summary.config,
        "identity": outcome.summary.identity,
        "steady_state": steady,
        "reported": outcome.summary.reported,
        "warnings": list(outcome.summary.warnings),
        "results": [{"metric": r.metric, "value": r.value, "unit": r.unit, "evidence": r.evidence}
                    for r in outcome.summary.results],
    })


def summarize_fixture(log: Path, engine: Engine) -> dict[str, Any]:
    return golden_summary(preview(log.read_bytes(), log.name, engine=engine))


def seeded_engine(folder: Path) -> Engine:
    engine = store.engine_from_url(f"duckdb:///{folder / 'golden.duckdb'}")
    store.init_store(engine, ROOT / "data")
    return engine


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        engine = seeded_engine(Path(tmp))
        for log in fixtures():
            summary = summarize_fixture(log, engine)
            expected_path(log).write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
            print(f"{log.name}: {summary['format']}, {summary['steps']} steps", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
