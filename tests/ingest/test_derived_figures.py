"""Every figure the printed ones imply is derived and labelled so: samples/s from the global batch and the step
time, a batch shape from the samples and tokens per step, step time from timestamps in any common form, the device
count from a per-device figure beside a total; a printed samples/s is reported, not only used."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest

from ingest import derived
from ingest.parsers._times import timestamp_seconds
from ingest.pipeline import preview
from perfledger.calc.steady import steady_state
from perfledger.records import RunConfig
from tests.conftest import LOGS


def results(name: str) -> list[tuple[str, float, str]]:
    outcome = preview((LOGS / name).read_bytes(), name)
    return [(r.metric, r.value, r.evidence) for r in outcome.summary.results]


def test_samples_per_second_is_derived_from_the_global_batch_and_step_time_and_said_so() -> None:
    """DeepSpeed prints CurrSamplesPerSec; it was used for the step time and never reported."""
    found = [r for r in results("dschat_step2_dpo_opt350m_gbs32.log") if r[0] == "samples_per_s"]
    assert found == [("samples_per_s", pytest.approx(46.4937, rel=1e-3), "derived")]


def test_a_printed_run_summary_samples_per_second_is_reported() -> None:
    assert ("samples_per_s", 0.511, "reported") in results("jaong_cpt_large_finetune_all_results.json")
    assert ("samples_per_s", 2.363, "reported") in results("msswift_qwen3_8b_lora_deepclima_logging.jsonl")


def test_step_time_comes_from_iso_timestamps() -> None:
    outcome = preview((LOGS / "nemo_automodel_llama3_1_8b_hellaswag_pp_h100.jsonl").read_bytes(), "training.jsonl")
    assert outcome.summary.steady.step_time_s_median == pytest.approx(1.092, rel=0.002)
    assert outcome.summary.step_time_source == "wall clock from the records' timestamps, over the steps between them"


def test_step_time_comes_from_a_progress_bars_rate() -> None:
    outcome = preview((LOGS / "jaong_cpt_large_finetune_windows_console_crlf.txt").read_bytes(), "cmd.txt")
    assert outcome.summary.steady.step_time_s_median == pytest.approx(1 / 2.16, rel=0.02)  # tqdm's "2.16it/s"


@pytest.mark.parametrize(("printed", "seconds"), [
    ("1727486493.241469", 1727486493.241469),
    ("2026-04-01T16:04:59.626Z", datetime(2026, 4, 1, 16, 4, 59, 626000, tzinfo=UTC).timestamp()),
    ("2026-04-01T18:04:59.626+02:00", datetime(2026, 4, 1, 16, 4, 59, 626000, tzinfo=UTC).timestamp()),
    ("2021-05-25 06:38:26,358", datetime(2021, 5, 25, 6, 38, 26, 358000, tzinfo=UTC).timestamp()),
    ("20260725-13:51:09.653", datetime(2026, 7, 25, 13, 51, 9, 653000, tzinfo=UTC).timestamp()),
    ("13:51:09", 13 * 3600 + 51 * 60 + 9.0),
    ("not a time", None),
])
def test_timestamps_in_every_common_form(printed: str, seconds: float | None) -> None:
    assert timestamp_seconds(printed) == (pytest.approx(seconds) if seconds is not None else None)


def test_epoch_milliseconds_scale() -> None:
    assert timestamp_seconds("1727486493241", 1e-3) == pytest.approx(1727486493.241)


def test_a_batch_shape_follows_from_the_samples_and_tokens_per_step() -> None:
    steps = pl.DataFrame({"step": [1, 2, 3], "samples": [2.0, 2.0, 2.0], "tokens": [2048.0, 2048.0, 2048.0]})
    said: dict[str, dict[str, str]] = {}
    config = derived.batch_from_steps(steps, RunConfig(micro_batch=2, n_devices=1), said)
    assert (config.global_batch, config.seq_len, config.grad_accum) == (2, 1024, 1)
    assert said["seq_len"]["where"].startswith("derived")


def steady_of(tokens_per_step: float) -> object:
    return steady_state(pl.DataFrame({"step": range(1, 21), "step_time_s": [1.0] * 20,
                                      "tokens": [tokens_per_step] * 20}))


def test_a_per_device_figure_beside_a_total_gives_the_device_count() -> None:
    said: dict[str, dict[str, str]] = {}
    config = derived.devices_from_rates(steady_of(8000.0), {"reported_tokens_per_s_per_device": 1000.0}, RunConfig(),
                                        said, {"tokens": ["num_tokens_per_step"]}, [])
    assert config.n_devices == 8
    assert "num_tokens_per_step" in said["n_devices"]["where"]


def test_a_per_device_figure_that_is_not_the_total_over_the_stated_devices_is_said() -> None:
    warnings: list[str] = []
    derived.devices_from_rates(steady_of(8000.0), {"reported_tokens_per_s_per_device": 8000.0},
                               RunConfig(n_devices=8), {}, {"reported_tokens_per_s_per_device": ["tps"]}, warnings)
    assert len(warnings) == 1 and "`tps`" in warnings[0] and "1.00 devices, not the 8" in warnings[0]
