"""A text log's first and last printed dates are kept with the run (format_meta.printed_span): the clock goodput
measures the wall time with."""

from __future__ import annotations

from pathlib import Path

from ingest import pipeline

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


def _meta(name: str) -> dict[str, object]:
    with pipeline.prepare((LOGS / name).read_bytes(), name) as prepared:
        return dict(prepared.config.get("format_meta") or {})


def test_a_nemo_log_keeps_its_first_and_last_printed_dates() -> None:
    span = _meta("gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log")["printed_span"]
    assert span == ["2025-06-11T23:59:27+00:00", "2025-06-12T00:03:35+00:00"]


def test_a_log_that_prints_no_date_keeps_no_span() -> None:
    assert "printed_span" not in _meta("chenzihua_nanogpt_shakespeare_char_termux_nan.log")
