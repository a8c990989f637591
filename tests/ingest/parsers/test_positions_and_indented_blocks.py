"""Two console grammars read through ingest -> store:

- lines timed only by a `YYYY-MM-DD HH:MM:SS.mmm` prefix and logged every N steps with a bracketed position
  (`Epoch:[1/1](100/44173)`, `Iter(train) [ 10/720]`): the step is the position, the step time the timestamps'
  difference over the steps between the lines (MiniMind's loguru log, tests/fixtures/heldout);
- a step header followed by indented `key=value` lines with thousands separators (OLMo's `[step=2/739328]` then
  `    throughput/device/tokens_per_second=45,538`): one record spanning lines.

Each with a small log of the same grammar with its labels respelled: the same figures."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from ingest.parsers._console import line_pairs
from ingest.pipeline import ingest_bytes
from perfledger import store
from tests.conftest import ROOT

MINIMIND = ROOT / "tests" / "fixtures" / "heldout" / "minimind_pretrain_output.log"


def stored(engine: Engine, raw: bytes, name: str) -> dict[str, object]:
    outcome = ingest_bytes(engine, raw, name)
    assert outcome.run_id is not None
    run = store.run(engine, outcome.run_id)
    assert run is not None and run.summary is not None
    return dict(run.summary) | {"steps": outcome.steps}


def test_minimind_step_time_comes_from_its_millisecond_timestamps_over_the_steps_between(empty_engine: Engine) -> None:
    summary = stored(empty_engine, MINIMIND.read_bytes(), MINIMIND.name)
    assert summary["step_time_s_median"] == pytest.approx(0.14779, rel=0.01)
    assert summary["last_step"] == 44100


def _positioned(label: str, stamp: str) -> bytes:
    lines = []
    for k in range(12):
        ms = 1500 * k + (300 if k == 0 else 0)  # 100 steps every 1.5 s: 0.015 s a step
        second, milli = divmod(ms, 1000)
        lines.append(f"2025-06-28 11:{second // 60:02d}:{second % 60:02d}{stamp}{milli:03d} | INFO | main:28 - "
                     f"{label}({100 * k}/1200) loss:{6 - k / 10:.3f} lr:0.0005 epoch_Time:9.0min:")
        lines.append("some sample text the script prints between steps")
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize(("label", "stamp"), [("Epoch:[1/1]", "."), ("Epoch: [1/1] ", ","), ("Epoch(train) [1]", ".")])
def test_a_bracketed_position_with_timestamps_gives_the_step_time(empty_engine: Engine, label: str,
                                                                 stamp: str) -> None:
    summary = stored(empty_engine, _positioned(label, stamp), "pos.log")
    assert summary["step_time_s_median"] == pytest.approx(0.015)
    assert summary["last_step"] == 1100


def test_a_position_follows_a_bracket_or_is_glued_to_a_word() -> None:
    assert line_pairs("Epoch:[1/1](100/44173) loss:6.460")["position/n"] == "100"
    assert line_pairs("Iter(train) [ 10/720]  time: 2.68")["position/total"] == "720"
    assert line_pairs("Epoch(train) [1][ 10/720]  time: 2.68")["position/n"] == "10"  # the innermost position
    assert "position/n" not in line_pairs("loss: 1.0 [3/4]")  # a number before the bracket: no position
    assert "position/n" not in line_pairs("[12:00:01][I] Using [24/24] GPUs loss: 1.0")  # a count, not a step


def _blocks(step_key: str, tokens_key: str, indent: str) -> bytes:
    out = []
    for step in range(1, 13):
        out.append(f"[2024-04-17 09:{step:02d}:00] INFO     [olmo.train:816, rank=0] [{step_key}={step}/739328]")
        out.append(f"{indent}train/CrossEntropyLoss={11 - step / 10:.2f}")
        out.append(f"{indent}train/Perplexity={76_631 - step:,}")
        if step > 1:
            out.append(f"{indent}{tokens_key}={45_000 + (step % 3):,}")
            out.append(f"{indent}throughput/device/batches_per_second=0.0869")
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize(("step_key", "tokens_key", "indent"), [
    ("step", "throughput/device/tokens_per_second", "    "),
    ("Step", "throughput/device/tokens_per_sec", "\t"),
])
def test_a_step_header_with_indented_key_value_lines_is_one_record(empty_engine: Engine, step_key: str,
                                                                  tokens_key: str, indent: str) -> None:
    summary = stored(empty_engine, _blocks(step_key, tokens_key, indent), "olmo.log")
    assert summary["steps"] == 12
    assert summary["step_time_s_median"] == pytest.approx(1 / 0.0869)
    assert summary["reported"]["reported_tokens_per_s_per_device"] == pytest.approx(45_001)


def test_lines_indented_no_deeper_than_a_step_line_are_not_its_block(empty_engine: Engine) -> None:
    """Script source printed before the log: `    7. wait on step 3` then lines at its own indentation (or code
    under it) are no record; the log's own lines still read (modded-nanogpt prints its script first)."""
    source = "def train():\n    7. wait on step 3, then go\n    step_time: 2.0\n"
    log = "".join(f"step:{s}/40 train_time:{100 * s}ms step_avg:100.00ms\n" for s in range(1, 41))
    outcome = ingest_bytes(empty_engine, (source + log).encode(), "script_then_log.txt")
    assert outcome.run_id is not None and outcome.steps == 40
    assert outcome.summary.steady_state_json()["step_time_s_median"] == pytest.approx(0.1)
