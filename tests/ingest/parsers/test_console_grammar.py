"""The console grammar: what one line prints (named values, printed dicts, progress bars with their description
and postfix, box-drawn table rows, a leading timestamp) and how lines make records (a line with a step and a
figure; a block opened by a step-only line and filled by the lines in its own form; a stepless record at the
training bar's position; a run's totals)."""

from __future__ import annotations

import polars as pl
import pytest

from ingest.parsers._common import concat_steps
from ingest.parsers._console import line_pairs
from ingest.parsers.key_value_log import KeyValueLogParser
from perfledger.records import ParseSummary


def read(lines: list[str], chunk: int = 3) -> tuple[ParseSummary, pl.DataFrame]:
    parser = KeyValueLogParser("train.log")
    frames = [parser.feed(lines[i:i + chunk], i + 1) for i in range(0, len(lines), chunk)]
    summary = parser.finish()
    return summary, concat_steps([*frames, parser.final_steps()])


def test_a_progress_bar_gives_its_position_clock_rate_description_and_postfix() -> None:
    pairs = line_pairs("1|51|Loss: 1.2345:  10%|█         | 51/512 [01:02<05:16,  1.46it/s, lr=2e-05, gnorm=0.9]")
    assert pairs == {"Loss": "1.2345", "lr": "2e-05", "gnorm": "0.9", "progress/n": "51", "progress/total": "512",
                     "progress/elapsed": "01:02", "progress/it_per_s": "1.46"}
    assert line_pairs(" 3/101 [00:53<27:44, 16.98s/it]")["progress/s_per_it"] == "16.98"


def test_a_box_drawn_table_row_gives_its_cells_in_name_value_order() -> None:
    assert line_pairs("│ timeperf/train_step │  3.1464e+01 │ rollout/reward │  5.0000e-01 │") == {
        "timeperf/train_step": "3.1464e+01", "rollout/reward": "5.0000e-01"}
    assert line_pairs("├────────────────────┼────────────┤") == {}


@pytest.mark.parametrize(("line", "stamp"), [
    ("[2021-03-24 05:10:52,624 INFO] Step 100/500000; xent: 0.81", "2021-03-24 05:10:52.624"),
    ("2024-11-26T22:09:01Z - loss: 1.0", "2024-11-26T22:09:01Z"),
    ("[INFO|2024-11-26 22:09:01] logging.py:157 >> {'loss': 2.28}", "2024-11-26 22:09:01"),
    ("(AReaL) 20260725-13:51:09.653 StatsLogger INFO: Train step 1/1000 done.", "20260725-13:51:09.653"),
    ("[12:34:56] step: 3 loss: 2.0", "12:34:56"),
])
def test_a_leading_timestamp_in_any_common_form_is_the_lines_time(line: str, stamp: str) -> None:
    assert line_pairs(line)["line_time"] == stamp


def test_tqdm_frames_glued_by_carriage_returns_make_one_record_per_step() -> None:
    frames = "\r".join(f"1|{n}|Loss: {2.0 - n / 100:.4f}:   1%|| {n}/101 [00:{20 + n:02d}<34:51, 0.50it/s]"
                       for n in (1, 1, 2, 3, 4, 5, 6))
    _, steps = read([frames])
    assert steps["step"].to_list() == [1, 2, 3, 4, 5, 6]
    assert steps["loss"].to_list()[1] == pytest.approx(1.98)
    assert steps["step_time_s"].to_list() == pytest.approx([2.0] * 6)  # 0.50 it/s


def test_a_printed_dict_without_a_step_takes_the_training_bars_position() -> None:
    lines = [" 10/500 [00:05<04:00, 2.00it/s]", "{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 0.1}",
             " 3/20 [00:01<00:05, 3.00it/s]",  # an evaluation bar: a smaller total
             " 20/500 [00:10<04:00, 2.00it/s]", "{'loss': 2.4, 'learning_rate': 1e-05, 'epoch': 0.2}",
             "{'train_runtime': 250.0, 'train_samples_per_second': 16.0, 'train_loss': 2.3, 'epoch': 1.0}"]
    summary, steps = read(lines)
    assert steps["step"].to_list() == [10, 20]
    assert steps["loss"].to_list() == pytest.approx([2.5, 2.4])
    assert [(r.metric, r.value, r.evidence) for r in summary.results] == [("samples_per_s", 16.0, "reported")]


def test_a_box_table_block_under_a_step_only_line_is_one_record() -> None:
    lines = ["(AReaL) 20260725-13:51:09.653 StatsLogger INFO: Train step 1/1000 done.",
             "╒════════════════╤════════════╕",
             "│ loss           │ 2.0000e+00 │",
             "├────────────────┼────────────┤",
             "│ lr             │ 1.0000e-05 │",
             "(AReaL) 20260725-13:52:09.653 StatsLogger INFO: Train step 2/1000 done.",
             "│ loss           │ 1.9000e+00 │",
             "(AReaL) 20260725-13:53:09.653 StatsLogger INFO: Train step 3/1000 done.",
             "│ loss           │ 1.8000e+00 │",
             "some other line: 5"]
    _, steps = read(lines, chunk=4)
    assert steps["step"].to_list() == [1, 2, 3]
    assert steps["loss"].to_list() == pytest.approx([2.0, 1.9, 1.8])
    assert steps["step_time_s"].to_list() == [None, 60.0, 60.0]  # the block lines' clock, step to step


def test_a_step_only_line_followed_by_other_output_is_no_block() -> None:
    """DeepSpeed's `[Rank 0] step=N` line in a Trainer log opens nothing: a printed dict after it is its own."""
    lines = ["[2021-05-25 06:38:26,358] [INFO] [logging.py:60:log_dist] [Rank 0] step=10, skipped=0",
             "{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 0.1}"]
    _, steps = read(lines)
    assert steps.filter(pl.col("loss").is_not_null())["loss"].to_list() == [2.5]
