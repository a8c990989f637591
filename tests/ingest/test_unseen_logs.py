"""Real public logs of frameworks and setups the readers were not written for (tests/fixtures/unseen, with their
provenance): every file's format is read, and the log's own steady-state figure (worked out from the values the
log prints, manifest.csv) is recomputed within 1% for at least MIN_MATCHED of them. bench/unseen.py prints the same
comparison file by file through `python -m ingest`."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from ingest.pipeline import preview
from perfledger.errors import ParseError
from perfledger.records import RunConfig

UNSEEN = Path(__file__).resolve().parents[1] / "fixtures" / "unseen"
ROWS = list(csv.DictReader((UNSEEN / "manifest.csv").read_text(encoding="utf-8").splitlines()))
MIN_MATCHED = 26  # of 30: the four left are named in bench/README.md
TOLERANCE = 0.01


def recomputed(row: dict[str, str]) -> float | None:
    """The product's own figure for the manifest's metric (a figure echoed from the log does not count)."""
    devices = int(row["devices"]) if row["devices"].strip() else None
    outcome = preview((UNSEEN / row["file"]).read_bytes(), row["file"], RunConfig(n_devices=devices))
    steady: dict[str, Any] = outcome.summary.steady_state_json()
    metric = row["own_metric"]
    if metric == "step_time_s":
        return steady["step_time_s_median"]
    if metric in ("tokens_per_s_per_device", "tokens_per_s", "model_tflops_per_device"):
        return steady[metric]
    return next((r.value for r in outcome.summary.results if r.metric == metric), None)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["file"])
def test_every_unseen_log_is_read(row: dict[str, str]) -> None:
    try:
        recomputed(row)
    except ParseError as exc:
        pytest.fail(f"refused: {exc}")


def test_most_unseen_logs_give_their_own_figure_within_one_percent() -> None:
    missed = []
    for row in ROWS:
        own, ours = float(row["own_value"]), recomputed(row)
        if ours is None or abs(ours - own) > TOLERANCE * abs(own):
            missed.append(f"{row['file']}: own {own:.6g}, recomputed {ours if ours is None else f'{ours:.6g}'}")
    assert len(ROWS) - len(missed) >= MIN_MATCHED, "\n".join(missed)
