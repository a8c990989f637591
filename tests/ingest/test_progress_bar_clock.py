"""A log timed only by progress bars is timed by the bars' clock over the steady window, not by tqdm's printed
rate (a moving average, off from the clock for sub-second or uneven steps); the printed rate is kept beside it as
the log's own figure. Through ingest -> store, on a real log (tests/fixtures/unseen PROVENANCE.md: modded-nanogpt's
2024 record, 0.21 s steps) respelled as the tqdm bar its trainer would print: `train: 1%| | 99/6200 [00:18<...,
4.68it/s, loss=5.374]`, elapsed in whole seconds as tqdm prints it, the rate as tqdm smooths it."""

from __future__ import annotations

import re

import polars as pl
import pytest
from sqlalchemy import Engine

from ingest.parsers._times import duration_seconds
from ingest.pipeline import ingest_bytes, preview
from perfledger import store
from perfledger.calc.clock import MIN_CLOCK_SPAN_S, timed_by_clock
from perfledger.calc.steady import SteadyRule, SteadyState
from tests.conftest import ROOT

MODDED = ROOT / "tests" / "fixtures" / "unseen" / "modded_nanogpt_2024_muon_record_8xh100.txt"
CRLF = ROOT / "tests" / "fixtures" / "logs" / "jaong_cpt_large_finetune_windows_console_crlf.txt"
_STEP = re.compile(r"^step:(\d+)/(\d+) train_loss:([\d.]+) train_time:(\d+)ms", re.MULTILINE)


def _clock(seconds: int) -> str:
    minutes, s = divmod(seconds, 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{s:02d}" if minutes >= 60 else f"{minutes:02d}:{s:02d}"


def _bars(last: int | None = None) -> tuple[bytes, list[tuple[int, float]]]:
    """The log's training lines as tqdm bars, a line each as a log file not on a terminal holds them (up to step
    `last`); and each step's train_time (s), the log's own clock in ms."""
    frames, clock = [], []
    ema_dn = ema_dt = 0.0
    calls = 0
    previous: tuple[int, float] | None = None
    for m in _STEP.finditer(MODDED.read_text()):
        n, total, loss, t = int(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4)) / 1000
        if last is not None and n > last:
            break
        clock.append((n, t))
        if previous is not None and t > previous[1]:
            calls += 1  # tqdm's exponential moving averages of the steps and the time between updates (0.3)
            ema_dn = 0.3 * (n - previous[0]) + 0.7 * ema_dn
            ema_dt = 0.3 * (t - previous[1]) + 0.7 * ema_dt
        previous = (n, t)
        rate = ema_dn / ema_dt if ema_dt else 0.0
        shown = "?it/s" if not rate else f"{rate:5.2f}it/s" if rate >= 1 else f"{1 / rate:5.2f}s/it"
        left = _clock(int((total - n) / rate)) if rate else "?"
        frames.append(f"train: {100 * n // total:3d}%|          | {n}/{total} [{_clock(int(t))}<{left}, {shown}, "
                      f"loss={loss}]")
    return ("Training\n" + "\n".join(frames) + "\n").encode(), clock


def _stored(engine: Engine, raw: bytes) -> dict[str, object]:
    outcome = ingest_bytes(engine, raw, "bars.log")
    assert outcome.run_id is not None
    run = store.run(engine, outcome.run_id)
    assert run is not None and run.summary is not None
    return dict(run.summary)


def test_a_bar_timed_run_stores_the_clock_over_its_steady_window(empty_engine: Engine) -> None:
    raw, clock = _bars()
    summary = _stored(empty_engine, raw)
    first, last = int(summary["first_step"]), int(summary["last_step"])  # type: ignore[call-overload]
    times = dict(clock)
    own = (times[last] - times[first]) / (last - first)  # the log's own millisecond clock over the same window
    assert float(summary["step_time_s_median"]) == pytest.approx(own, rel=0.01)  # type: ignore[arg-type]
    assert "progress bar's clock" in str(summary["step_time_source"])


def test_the_printed_rate_is_kept_beside_the_clock_as_the_logs_own_figure(empty_engine: Engine) -> None:
    raw, _ = _bars()
    reported = _stored(empty_engine, raw)["reported"]
    assert isinstance(reported, dict)
    assert reported["reported_step_time_s"] == pytest.approx(0.2138, rel=0.01)  # 4.68it/s, as printed
    assert reported["diff_step_time_s"] is not None


def test_tqdms_minutes_and_seconds_are_read_as_a_clock() -> None:
    assert [duration_seconds(t) for t in ("00:17", "01:02", "59:59", "1:02:03")] == [17.0, 62.0, 3599.0, 3723.0]


def test_a_window_shorter_than_the_whole_second_clock_can_time_keeps_the_printed_rate() -> None:
    steady = SteadyState(10, 100, 91, 9, 0, 1.0, 1.0, 0.0, 1.0, None, SteadyRule())
    short = pl.LazyFrame({"step": [10, 100], "step_time_s": [1.0, 1.0], "clock_s": [2.0, 2.0 + MIN_CLOCK_SPAN_S - 1]})
    assert timed_by_clock(short, steady) == (steady, {})
    long = short.with_columns(clock_s=pl.Series([2.0, 2.0 + MIN_CLOCK_SPAN_S]))
    timed, said = timed_by_clock(long, steady)
    assert timed is not None and timed.step_time_s_median == pytest.approx(MIN_CLOCK_SPAN_S / 90)
    assert said["reported_step_time_s"] == 1.0


def test_a_clock_that_holds_evaluations_between_sparse_records_keeps_the_printed_rate() -> None:
    # a real HF Trainer console (tests/fixtures/logs): one record an epoch, 5 min of training then 50 min of
    # evaluation on the bar's clock, which is no step time
    outcome = preview(CRLF.read_bytes(), CRLF.name)
    assert outcome.summary.steady is not None
    assert outcome.summary.steady.step_time_s_median == pytest.approx(1 / 2.16, rel=0.02)
