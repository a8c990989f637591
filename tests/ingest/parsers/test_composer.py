"""Composer / llm-foundry console logs, read by the console reader through Composer's rows (data/frameworks.csv:
its `[batch=N/M]:` line is recognised, its `Train ` prefix removed; data/metric_keys.csv: its names): the batch
blocks of `Train <name>: <value>` lines become steps with step time from batches/s or wall clock, per-step tokens
from the cumulative counters, printed speed figures kept beside ours; the Config block and warnings give devices,
precision and accelerator (data/config_keys.csv), and the counters the batch shape."""

from __future__ import annotations

import polars as pl
import pytest

from ingest.detect import detect_file, parse_file
from ingest.parsers._common import concat_steps
from ingest.parsers.key_value_log import KeyValueLogParser
from ingest.pipeline import prepare
from perfledger.errors import ParseError
from perfledger.records import ParseSummary
from tests.ingest.parsers.helpers import LOGS

LOG = LOGS / "helios113_dyna_composer_h100nvl_console.log"


def feed(lines: list[str], chunk: int = 4) -> tuple[ParseSummary, pl.DataFrame]:
    parser = KeyValueLogParser("train.log")
    frames = [parser.feed(lines[i:i + chunk], i + 1) for i in range(0, len(lines), chunk)]
    summary = parser.finish()
    return summary, concat_steps([*frames, parser.final_steps()])


def block(batch: int, *items: str, tag: str = "") -> list[str]:
    return [f"{tag}[batch={batch}/100]:", *(f"{tag}\t Train {item}" for item in items)]


def test_composer_console_log_is_read_by_the_console_reader_as_composer() -> None:
    assert detect_file(LOG) is KeyValueLogParser
    assert parse_file(LOG)[0].config.framework == "composer"


def test_composer_steps_take_batches_per_sec_or_the_train_clock() -> None:
    _, steps = parse_file(LOG)
    assert steps["step"].to_list() == [1, 10, 20]
    by_step = {r["step"]: r for r in steps.iter_rows(named=True)}
    assert by_step[20]["step_time_s"] == pytest.approx(1 / 0.1085)
    assert by_step[10]["step_time_s"] == pytest.approx((0.0280 - 0.0050) * 3600 / 9)  # time/train is in hours
    assert by_step[20]["tokens"] == pytest.approx((38912 - 18432) / 10)
    assert by_step[20]["reported_tokens_per_s_per_device"] == pytest.approx(222.2194)
    assert by_step[20]["memory_gb"] == pytest.approx(4.0643)
    assert by_step[10]["grad_norm"] == pytest.approx(0.0022)


def test_composer_config_block_gives_devices_precision_batch_shape_and_accelerator() -> None:
    with prepare(LOG.read_bytes(), LOG.name) as run:
        config = run.config
    assert (config["n_devices"], config["precision"], config["micro_batch"]) == (1, "bf16", 2)
    assert (config["global_batch"], config["seq_len"], config["grad_accum"]) == (2, 1024, 1)
    assert config["accelerator_as_printed"] == "nvidia h100 nvl"
    assert config["framework_version"] == "0.31.0"
    assert config["identity"]["n_devices"]["where"].startswith("derived: 1 nodes x 1 devices per node")
    assert config["identity"]["seq_len"]["where"] == "derived: the tokens logged per step / the samples per step"


def test_composer_log_prepares_within_a_percent_of_its_printed_tokens_per_device() -> None:
    with prepare(LOG.read_bytes(), LOG.name) as run:
        assert run.format.value == "key_value"
        assert run.summary["tokens_per_s_per_device"] == pytest.approx(222.2194, rel=0.01)


def test_composer_mfu_and_flops_are_kept_as_printed_fractions_and_tflops() -> None:
    lines = (block(1, "time/token: 0", "time/sample: 0", "time/train: 0.001", "loss/train/total: 9.0")
             + block(2, "time/token: 8192", "time/sample: 4", "time/train: 0.002", "loss/train/total: 8.0",
                     "throughput/batches_per_sec: 0.5", "throughput/device/mfu: 0.4132",
                     "throughput/device/flops_per_sec: 1.2e14", "trainer/device_train_microbatch_size: 4",
                     "Eval metrics/eval/LanguageCrossEntropy: 7.0"))
    summary, steps = feed(lines, chunk=3)
    last = steps.filter(pl.col("step") == 2).row(0, named=True)
    assert last["reported_mfu"] == pytest.approx(0.4132)
    assert last["reported_tflops_per_device"] == pytest.approx(120.0)
    assert last["step_time_s"] == pytest.approx(2.0)
    assert last["tokens"] == pytest.approx(8192)
    assert summary.config.micro_batch == 4


def test_rank_tagged_and_epoch_blocks_are_read() -> None:
    lines = (["0: [epoch=1][batch=1/300000000]:", "0:       Train time/batch: 0", "0:       Train time/train: 0.0037",
              "0:       Train loss/train/total: 12.0000"]
             + block(2, "time/train: 0.0040", "loss/train/total: 11.5", tag="0: "))
    _, steps = feed(lines)
    assert steps["step"].to_list() == [1, 2]
    assert steps["loss"].to_list() == pytest.approx([12.0, 11.5])


def test_items_printed_on_the_batch_line_are_read() -> None:
    lines = ["[batch=1/40]:   Train loss/train/total: 2.5845   LanguageCrossEntropy: 2.2906",
             "[batch=40/40]: Train throughput/device/tokens_per_sec: 4884.9990   memory/peak_reserved_mem: 14.7660"]
    _, steps = feed(lines)
    assert steps["loss"].to_list()[0] == pytest.approx(2.5845)
    assert steps["reported_tokens_per_s_per_device"].to_list()[1] == pytest.approx(4884.999)
    assert steps["memory_gb"].to_list()[1] == pytest.approx(14.766)


def test_a_log_without_batch_blocks_is_refused() -> None:
    with pytest.raises(ParseError, match="no lines of `name: value` pairs with a step"):
        feed(["Config:", "num_nodes: 1", "******************************"])
