"""Per-step metrics files of any framework (JSON lines, CSV, TSV) read through the key vocabulary in data/: the
step, step time from whatever clock the records carry, tokens from counters, and what is not a step set aside."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from sqlalchemy import Engine

from ingest.detect import detect_head
from ingest.parsers._times import duration_seconds
from ingest.parsers.metrics_file import MetricsFileParser
from ingest.pipeline import ingest_bytes
from perfledger import names, store
from perfledger.errors import ParseError
from perfledger.settings import DEFAULT_DATA_DIR
from perfledger.vocabulary import LogFormat
from tests.ingest.parsers.helpers import parse_text


def jsonl(records: list[dict[str, object]]) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


def llama_factory_log() -> str:
    """LLaMA-Factory's trainer_log.jsonl: a record every 5 steps, an evaluation record every 50, run clock as text."""
    out: list[dict[str, object]] = []
    for step in range(5, 105, 5):
        seconds = step * 2.4
        out.append({"current_steps": step, "total_steps": 100, "loss": 2.0 - step / 100, "lr": 1e-5,
                    "epoch": step / 100, "percentage": step, "total_tokens": step * 12_000,
                    "elapsed_time": f"0:{int(seconds // 60):02d}:{seconds % 60:05.2f}", "remaining_time": "0:01:00"})
        if step % 50 == 0:
            out.append({"current_steps": step, "total_steps": 100, "eval_loss": 1.5, "epoch": step / 100,
                        "elapsed_time": "0:00:10"})
    return jsonl(out)


@pytest.mark.parametrize(("text", "seconds"), [
    ("0:02:12", 132.0), ("1 day, 0:08:23", 86400.0 + 503.0), ("1m 42s", 102.0), ("2h 3m 4s", 7384.0),
    ("42s", 42.0), ("12.5", 12.5), ("0:00:01.50", 1.5), ("soon", None), ("1m then", None),
])
def test_a_printed_duration_reads_as_seconds(text: str, seconds: float | None) -> None:
    assert duration_seconds(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_llama_factory_steps_are_timed_by_their_run_clock_and_evaluation_records_set_aside() -> None:
    text = llama_factory_log()
    assert detect_head(text.encode(), file_name="trainer_log.jsonl") is MetricsFileParser
    summary, steps = parse_text(MetricsFileParser, text, "trainer_log.jsonl")
    assert steps["step"].to_list() == list(range(5, 105, 5))
    assert steps["step_time_s"][1:].to_list() == pytest.approx([2.4] * 19)  # 12 s over 5 steps
    assert steps["tokens"][1:].to_list() == pytest.approx([12_000.0] * 19)
    assert summary.config.framework == "llama-factory"
    assert summary.meta["records_set_aside"] == {"evaluation record": 2}
    assert any("wall clock from the run time" in w for w in summary.warnings)


def test_ms_swift_steps_read_from_n_of_total_and_iterations_per_second_and_its_summary_is_no_step() -> None:
    records: list[dict[str, object]] = [
        {"loss": 1.2, "grad_norm": 3.0, "learning_rate": 1e-5, "memory(GiB)": 20.5, "train_speed(iter/s)": 0.4,
         "global_step/max_steps": f"{s}/40", "percentage": "2.5%", "elapsed_time": f"{s}m 2s"} for s in range(1, 41)]
    records.append({"train_runtime": 100.0, "train_loss": 1.2, "global_step/max_steps": "40/40"})
    summary, steps = parse_text(MetricsFileParser, jsonl(records), "logging.jsonl")
    assert steps.height == 40 and steps["step"][-1] == 40
    assert steps["step_time_s"].to_list() == pytest.approx([2.5] * 40)  # the logged rate wins over the clock
    assert steps["memory_gb"][0] == pytest.approx(20.5 * 1.073741824)
    assert summary.config.framework == "ms-swift"
    assert summary.meta["records_set_aside"] == {"end-of-run summary record": 1}


def test_a_lightning_csv_logger_file_reads_its_training_rows_and_sets_validation_rows_aside() -> None:
    rows = ["epoch,step,train_loss,lr-AdamW,val_loss,timestamp"]
    rows += [f"0,{s},{2 - s / 1000},0.001,,{1_700_000_000 + s * 0.5}" for s in range(49, 1000, 50)]
    rows += ["0,999,,,1.2,1700000600.0"]
    summary, steps = parse_text(MetricsFileParser, "\n".join(rows) + "\n", "metrics.csv")
    assert steps.height == 20
    assert steps["lr"].unique().to_list() == [0.001]
    assert steps["step_time_s"][1:].to_list() == pytest.approx([0.5] * 19)  # timestamps 25 s apart, 50 steps
    assert summary.meta["records_set_aside"] == {"evaluation record": 1}


def test_a_tab_separated_file_is_read_like_a_csv() -> None:
    text = "step\tloss\tstep_time\n" + "".join(f"{s}\t{3 - s / 10}\t1.25\n" for s in range(1, 11))
    assert detect_head(text.encode(), file_name="log.tsv") is MetricsFileParser
    _, steps = parse_text(MetricsFileParser, text, "log.tsv")
    assert steps["step_time_s"].to_list() == [1.25] * 10


def test_the_same_step_written_by_a_second_rank_is_counted_once() -> None:
    records = [{"step": s, "loss": 2.0, "step_time": 1.0} for s in range(1, 11) for _ in range(2)]
    summary, steps = parse_text(MetricsFileParser, jsonl(records), "metrics.jsonl")
    assert steps["step"].to_list() == list(range(1, 11))
    assert summary.meta["records_set_aside"] == {"the same step written again (another rank or a repeated row)": 10}


def test_a_clock_that_steps_back_gives_no_step_time_for_that_record() -> None:
    records = [{"step": s, "loss": 2.0, "elapsed": t} for s, t in ((1, 10.0), (2, 12.0), (3, 5.0), (4, 7.0))]
    _, steps = parse_text(MetricsFileParser, jsonl(records), "metrics.jsonl")
    assert steps["step_time_s"].to_list() == [None, 2.0, None, 2.0]


def test_a_file_whose_names_the_vocabulary_does_not_know_is_not_claimed() -> None:
    text = jsonl([{"it": s, "objective": 2.0, "ms_per_it": 800} for s in range(1, 5)])
    assert not MetricsFileParser.sniff(text, "x.jsonl")
    with pytest.raises(ParseError, match="not a log format"):
        detect_head(text.encode(), file_name="x.jsonl")


def test_a_framework_becomes_readable_by_a_data_row_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         empty_engine: Engine,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A framework the code never names: refused, then stored through the same path once three rows are added with
    `python -m perfledger keys add`; the stored run's steps carry the converted step time."""
    from perfledger import cli

    text = jsonl([{"it": s, "objective": 2.0 - s / 100, "ms_per_it": 800.0, "toks": 4096} for s in range(1, 31)])
    with pytest.raises(ParseError, match="not a log format"):
        ingest_bytes(empty_engine, text.encode(), "novel.jsonl")
    data = tmp_path / "data"
    shutil.copytree(DEFAULT_DATA_DIR, data, ignore=shutil.ignore_patterns("*.duckdb*", "logs"))
    monkeypatch.setenv("PERFLEDGER_DATA_DIR", str(data))
    for row in (["it", "step", "count", "--framework", "novel", "--identifies"], ["objective", "loss"],
                ["ms_per_it", "step_time_s", "ms"], ["toks", "tokens", "count"]):
        assert cli.main(["keys", "add", *row]) == 0
    outcome = ingest_bytes(empty_engine, text.encode(), "novel.jsonl")
    assert outcome.format is LogFormat.METRICS and outcome.steps == 30 and outcome.created
    assert outcome.summary.config["framework"] == "novel"
    assert outcome.summary.steady.step_time_s_median == pytest.approx(0.8)
    assert outcome.summary.steady.tokens_per_s == pytest.approx(4096 / 0.8)
    stored = store.steps(empty_engine, outcome.run_id)
    assert stored.height == 30 and stored["step_time_s"].unique().to_list() == [pytest.approx(0.8)]
    capsys.readouterr()
    url = empty_engine.url.render_as_string(hide_password=False)
    assert cli.main(["export", "runs", f"run={outcome.run_id}", "--db", url]) == 0  # the Runs page's own table
    page = pl.read_csv(io.StringIO(capsys.readouterr().out))
    step_time = page[names.column_label("step_time_s")]  # the CSV's header is the page's display name
    assert page.height == 30 and step_time.unique().to_list() == [pytest.approx(0.8)]
    assert page["tokens"].unique().to_list() == [4096.0]


def test_a_bad_vocabulary_row_is_refused_with_its_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from perfledger import cli

    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(DEFAULT_DATA_DIR / "metric_keys.csv", data / "metric_keys.csv")
    monkeypatch.setenv("PERFLEDGER_DATA_DIR", str(data))
    before = (data / "metric_keys.csv").read_text()
    assert cli.main(["keys", "add", "my_time", "step_time_s", "GiB"]) == 2
    assert "unit 'GiB' does not fit column step_time_s" in capsys.readouterr().err
    assert cli.main(["keys", "add", "loss", "loss", "--framework", "nemo", "--identifies"]) == 0
    assert cli.main(["keys", "add", "loss", "loss", "--framework", "nemo", "--identifies"]) == 1
    assert "already there" in capsys.readouterr().err
    assert (data / "metric_keys.csv").read_text().startswith(before)


def test_steps_logged_again_after_a_resume_are_set_aside_and_a_restart_is_kept() -> None:
    """Died at 40, resumed from the step-30 checkpoint (31-40 logged again); then a new launch from step 1."""
    steps = [*range(1, 41), *range(31, 51), *range(1, 11)]
    records = [{"step": s, "loss": 2.0, "step_time": 1.0 if i < 40 else 1.5} for i, s in enumerate(steps)]
    summary, frame = parse_text(MetricsFileParser, jsonl(records), "metrics.jsonl")
    assert frame["step"].to_list() == [*range(1, 51), *range(1, 11)]
    assert frame.filter(pl.col("step") == 35)["step_time_s"].to_list() == [1.0]  # the first time it was logged
    assert summary.meta["records_set_aside"] == {"a step logged again after a resume": 10}


def test_a_json_line_of_objects_nested_1000_deep_is_a_skipped_line_not_a_crash() -> None:
    """Polars' NDJSON reader overflowed its stack on it and the process died (found by bench/fuzz.py)."""
    deep = '{"step": 3, "loss": 2.0, "meta": ' + '{"a":' * 1000 + "1" + "}" * 1000 + "}"
    text = jsonl([{"step": 1, "loss": 2.0, "step_time": 1.0}, {"step": 2, "loss": 2.0, "step_time": 1.0}])
    summary, steps = parse_text(MetricsFileParser, text + deep + "\n", "metrics.jsonl")
    assert steps["step"].to_list() == [1, 2]
    assert summary.problems[0].line == 3 and "not a JSON object" in summary.problems[0].reason


def test_an_infinite_micro_batch_is_not_read() -> None:
    records = [{"step": s, "loss": 2.0, "trainer/device_train_microbatch_size": "inf"} for s in range(1, 4)]
    summary, _ = parse_text(MetricsFileParser, jsonl(records), "metrics.jsonl")
    assert summary.config.micro_batch is None
