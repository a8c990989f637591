"""nanoGPT stdout: NaN losses as null and counted, unmeasured MFU dropped."""

from __future__ import annotations

import pytest

from ingest.parsers import nanogpt
from tests.ingest.parsers.helpers import LOGS, parse_with


def test_nanogpt_stores_nan_losses_as_null_counts_them_and_drops_unmeasured_mfu() -> None:
    summary, steps = parse_with(nanogpt.PARSER, LOGS / "chenzihua_nanogpt_shakespeare_char_termux_nan.log")
    first = steps.row(0, named=True)
    assert first["step"] == 0 and first["reported_mfu"] is None  # "mfu -100.00%"
    assert first["step_time_s"] == pytest.approx(10.26808)
    nan_steps = [row["step"] for row in steps.iter_rows(named=True) if row["loss"] is None]
    assert nan_steps[0] == 425 and len(nan_steps) == 6
    assert any("nan" in w for w in summary.warnings)
