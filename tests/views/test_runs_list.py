"""The run list holds runs only: a claims CSV import is listed on Sources, not as a run with 0 steps."""

from __future__ import annotations

import polars as pl

from perfledger.views.runs import runs_list


def test_a_claims_csv_import_is_not_a_run() -> None:
    frame = pl.DataFrame({"id": [2, 1], "format": ["claims_csv", "megatron"], "n_steps": [0, 120]})
    assert runs_list(frame)["id"].to_list() == [1]
