"""Repeats: median and spread of a configuration's runs, overlap of two spreads, and MLCommons' olympic score with
the per-benchmark rule read from data/mlperf_scoring.csv."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import polars as pl
import pytest

from perfledger.calc.repeats import ScoringRule, olympic_score, spread, spreads_overlap, summarise_repeats
from perfledger.errors import DataFileError
from perfledger.mlperf_rules import HEADER, load_rules, parse_rules

FINETUNE = ScoringRule("llama2_70b_lora", runs=10)


def test_spread_quartiles_match_polars_linear_quantiles() -> None:
    values = [1773.263, 1757.738, 1764.256, 1996.12, 1764.042, 1766.423, 1767.908, 1756.325, 1764.454, 1767.759]
    s = spread(values)
    col = pl.Series(values)
    assert s is not None
    assert (s.n, s.minimum, s.maximum) == (10, min(values), max(values))
    assert s.median == pytest.approx(statistics.median(values))
    assert s.q1 == pytest.approx(col.quantile(0.25, interpolation="linear"))
    assert s.q3 == pytest.approx(col.quantile(0.75, interpolation="linear"))
    assert s.iqr == pytest.approx(s.q3 - s.q1)


def test_spread_leaves_out_missing_and_nan_values_and_is_none_without_any() -> None:
    assert spread([None, float("nan"), 2.0]) == spread([2.0])
    assert spread([None, float("nan")]) is None


def test_overlapping_iqrs_are_said_to_overlap_and_separate_ones_not() -> None:
    a, b, c = spread([10.0, 11.0, 12.0]), spread([10.5, 11.5, 13.0]), spread([20.0, 21.0, 22.0])
    assert a is not None and b is not None and c is not None
    assert spreads_overlap(a, b) and spreads_overlap(b, a)
    assert not spreads_overlap(a, c)


def test_olympic_score_drops_the_fastest_and_slowest_and_averages_the_rest() -> None:
    times = [float(t) for t in range(1, 11)]
    scored = olympic_score(times, FINETUNE)
    assert scored.valid and scored.used == 8
    assert scored.value == pytest.approx(sum(range(2, 10)) / 8)


def test_one_non_converging_run_counts_as_the_slowest_and_is_dropped() -> None:
    times: list[float | None] = [float(t) for t in range(1, 10)] + [None]
    scored = olympic_score(times, FINETUNE)
    assert scored.value == pytest.approx(sum(range(2, 10)) / 8)
    assert (scored.converged, scored.non_converged) == (9, 1)


def test_two_non_converging_runs_make_the_result_invalid() -> None:
    scored = olympic_score([float(t) for t in range(1, 9)] + [None, None], FINETUNE)
    assert scored.value is None and "2 runs did not converge" in (scored.problem or "")


def test_fewer_runs_than_the_benchmark_needs_give_no_score() -> None:
    scored = olympic_score([1.0, 2.0, 3.0], FINETUNE)
    assert scored.value is None and "needs 10 runs" in (scored.problem or "")


def test_the_rule_table_gives_each_benchmark_its_run_count_with_a_source() -> None:
    rules = load_rules()
    assert (rules["llama2_70b_lora"].runs, rules["llama31_405b"].runs, rules["unet3d"].runs) == (10, 3, 40)
    assert rules["unet3d"].dropped_each_end == 4
    assert all("training_rules.adoc" in r.source for r in rules.values())


def test_a_rule_row_that_leaves_nothing_to_average_is_refused_with_its_line() -> None:
    text = ",".join(HEADER) + "\nx,problem,2,1,1,src,loc\n"
    with pytest.raises(DataFileError, match=":2: 2 runs with 1 dropped"):
        parse_rules(text, "mlperf_scoring.csv")


def test_repeats_summary_counts_failed_attempts_and_names_overlapping_configurations(tmp_path: Path) -> None:
    a, b = json.dumps({"n_devices": 8}), json.dumps({"n_devices": 16})
    frame = pl.DataFrame({"configuration": [a, a, a, b, b, b],
                          "kind": ["completed", "completed", "oom", "completed", "completed", "completed"],
                          "metric": ["step_time_s"] * 6, "value": [1.0, 1.2, None, 1.05, 1.2, 1.5],
                          "unit": ["s"] * 6})
    summary = summarise_repeats(frame, ("completed",)).sort("configuration")
    rows = {r["configuration"]: r for r in summary.to_dicts()}
    assert (rows[a]["n"], rows[a]["not_measured"], rows[b]["n"]) == (2, 1, 3)
    assert rows[a]["overlaps"] == b and rows[b]["overlaps"] == a
