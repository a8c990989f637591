"""TensorBoard tags read through the key vocabulary: MaxText's perf/ tags, a tag added as a data row, step time from
the events' wall times where no tag gives it, and Megatron's batch ramp-up from its `lm loss vs samples` copies;
the compiled walk and the Python reader agree on each."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import polars as pl
import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2  # type: ignore[import-untyped]

from ingest import native
from ingest.parsers.base import step_frames
from ingest.parsers.tensorboard import TensorBoardParser
from perfledger.errors import ParseError
from perfledger.settings import DEFAULT_DATA_DIR
from tests.ingest.parsers.test_tensorboard import file_version, record


def event(step: int, wall: float, values: dict[str, float]) -> bytes:
    summary = summary_pb2.Summary()
    for tag, number in values.items():
        summary.value.add(tag=tag).simple_value = number
    return record(event_pb2.Event(wall_time=wall, step=step, summary=summary).SerializeToString())


def read(raw: bytes, monkeypatch: pytest.MonkeyPatch, *, walk: bool) -> tuple[TensorBoardParser, pl.DataFrame]:
    """The parser after reading `raw` whole, and its steps: with the compiled walk, or the Python reader alone."""
    with monkeypatch.context() as patch:
        if not walk:
            patch.setattr(native, "tfrecord_scan", lambda: None)
        parser = TensorBoardParser("events.out.tfevents.1.host.1.0")
        assert (parser._reader._walk is not None) == walk
        frames = list(step_frames(parser, io.BytesIO(raw)))
    return parser, pl.concat(frames) if frames else pl.DataFrame()


@pytest.mark.parametrize("walk", [True, False], ids=["walk", "python"])
def test_maxtext_perf_tags_are_read(walk: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = file_version() + b"".join(event(s, 100.0 + s, {"learning/loss": 5.0, "perf/step_time_seconds": 0.33,
                                                          "perf/per_device_tflops_per_sec": 180.0,
                                                          "learning/current_learning_rate": 1e-4})
                                    for s in range(1, 11))
    parser, steps = read(raw, monkeypatch, walk=walk)
    assert steps["step_time_s"].to_list() == pytest.approx([0.33] * 10)
    assert steps["reported_tflops_per_device"].to_list() == pytest.approx([180.0] * 10)
    assert parser.finish().config.framework == "maxtext"


@pytest.mark.parametrize("walk", [True, False], ids=["walk", "python"])
def test_without_a_step_time_tag_the_event_wall_times_give_it(walk: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Megatron logging every 10 iterations, 4.2 s apart, with no `iteration-time` tag."""
    raw = file_version() + b"".join(event(s, 1000.0 + 0.42 * s, {"learning-rate": 1e-4, "lm loss": 3.0})
                                    for s in range(10, 110, 10))
    parser, steps = read(raw, monkeypatch, walk=walk)
    assert steps["step_time_s"].to_list() == [None] + [pytest.approx(0.42)] * 9
    assert any("wall clock from the event times" in w for w in parser.finish().warnings)


@pytest.mark.parametrize("walk", [True, False], ids=["walk", "python"])
def test_a_batch_ramp_up_is_read_from_the_samples_consumed(walk: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """32 samples a step for 20 steps, then 256: `lm loss vs samples` is written at the samples consumed so far."""
    consumed, parts = 0, [file_version()]
    for step in range(10, 60, 10):
        consumed += 10 * (32 if step <= 20 else 256)
        loss = 10.0 - step / 100
        parts += [event(step, 1000.0 + step, {"lm loss": loss}), event(consumed, 1000.0 + step,
                                                                        {"lm loss vs samples": loss})]
    parser, steps = read(b"".join(parts), monkeypatch, walk=walk)
    assert steps["samples"].to_list() == [32.0, 32.0, 256.0, 256.0, 256.0]
    assert any("the batch in force" in w for w in parser.finish().warnings)


def test_a_tag_added_as_a_data_row_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = file_version() + b"".join(event(s, 10.0 + s, {"my/objective": 2.0, "my/sec_per_step": 1.5})
                                    for s in range(1, 6))
    with pytest.raises(ParseError, match="no training scalars the key vocabulary knows"):
        read(raw, monkeypatch, walk=True)[0].finish()
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(DEFAULT_DATA_DIR / "metric_keys.csv", data / "metric_keys.csv")
    with (data / "metric_keys.csv").open("a") as fh:
        fh.write("mine,my/objective,loss,,,yes,\nmine,my/sec_per_step,step_time_s,s,,,\n")
    monkeypatch.setenv("PERFLEDGER_DATA_DIR", str(data))
    parser, steps = read(raw, monkeypatch, walk=True)
    assert steps["step_time_s"].to_list() == [1.5] * 5 and parser.finish().config.framework == "mine"
