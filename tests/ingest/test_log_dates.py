"""When a run ran, read from its log's own clock: a printed date, MLLOG's time_ms, a TensorBoard event's wall time,
a W&B record's _timestamp; nothing when the log printed no date."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from ingest.pipeline import prepare
from tests.cli_runner import run

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
TB = "cscs_gh200_llama3_1b_10n4g_megatron.events.out.tfevents.1776244695.nid007435.275938.0"


@pytest.mark.parametrize(("name", "ran_at"), [
    ("gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log", datetime(2025, 6, 11, 23, 59, 27, tzinfo=UTC)),  # wget's line
    ("amd_mi355x_llama31_8b_v5.1_result_0.txt", datetime(2025, 10, 8, 23, 30, 1, 37_000, tzinfo=UTC)),  # time_ms
    (TB, datetime(2026, 4, 15, 9, 19, 2, 516_037, tzinfo=UTC)),  # the first step's wall time
    ("oraby8_tts_grpo_wandb_history.csv", datetime(2026, 3, 2, 11, 56, 48, 757_069, tzinfo=UTC)),  # _timestamp
])
def test_the_run_date_is_read_from_the_log(name: str, ran_at: datetime) -> None:
    with prepare((LOGS / name).read_bytes(), name) as prepared:
        assert prepared.ran_at == ran_at


def test_a_tensorboard_run_date_is_the_file_names_creation_time_give_or_take_its_start_up() -> None:
    created = datetime.fromtimestamp(int(TB.split(".")[4]), UTC)  # the writer puts its start time in the name
    with prepare((LOGS / TB).read_bytes(), TB) as prepared:
        assert prepared.ran_at is not None and 0 <= (prepared.ran_at - created).total_seconds() < 3600


def test_a_log_that_prints_no_date_has_none() -> None:
    name = "siddanthemani_gpt2_124m_8xa100_main.log"
    with prepare((LOGS / name).read_bytes(), name) as prepared:
        assert prepared.ran_at is None


def test_ingest_json_says_when_the_run_ran(tmp_path: Path) -> None:
    import json
    import os

    root = LOGS.parents[2]
    env = os.environ | {"PERFLEDGER_DB_URL": f"duckdb:///{tmp_path / 's.duckdb'}"}
    done = run("ingest", str(LOGS / "amd_mi355x_llama31_8b_v5.1_result_0.txt"), "--json", env=env, cwd=root, check=True)
    assert json.loads(done.stdout.splitlines()[0])["ran_at"] == "2025-10-08T23:30:01.037000+00:00"
