"""Every real log fixture still gives the summary that was reviewed and committed beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import Engine

from tests.ingest.golden import expected_path, fixtures, summarize_fixture


@pytest.mark.parametrize("log", fixtures(), ids=lambda p: p.name)
def test_fixture_summary_matches_its_golden_file(log: Path, seeded_engine: Engine) -> None:
    golden = expected_path(log)
    assert golden.exists(), f"no golden summary for {log.name}: run python -m tests.ingest.golden and review it"
    assert summarize_fixture(log, seeded_engine) == json.loads(golden.read_text())


def test_every_log_format_has_a_real_fixture() -> None:
    from perfledger.vocabulary import LogFormat

    seen = {json.loads(expected_path(log).read_text())["format"] for log in fixtures()}
    microbench = Path(__file__).resolve().parents[1] / "fixtures" / "microbench_sample.jsonl"
    assert microbench.exists()
    assert set(LogFormat) - {LogFormat.MICROBENCH} <= seen
