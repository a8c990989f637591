"""The scaling chart draws one point per series and device count: repeated results become their median and range."""

from __future__ import annotations

import polars as pl

from perfledger import charts
from perfledger.calc.pairing import THROUGHPUT, points_by_devices


def _computed(rows: list[tuple[str, int, float, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"series": s, "accelerator": "h100-sxm", "devices": d, THROUGHPUT: t, "ideal linear (tokens/s)": 100.0 * d,
          "scaling efficiency": t / (100.0 * d), "source": "src", "result id": i} for s, d, t, i in rows])


def test_repeated_results_at_a_device_count_are_one_point_at_their_median_with_their_range() -> None:
    rows = [("a", 8, 800.0, 1), ("a", 16, 1500.0, 2), ("a", 16, 1600.0, 3), ("a", 16, 1000.0, 4), ("a", 16, 1580.0, 5)]
    points = points_by_devices(_computed(rows))
    assert points.select("devices", "results").rows() == [(8, 1), (16, 4)]
    at16 = points.row(1, named=True)
    assert at16[THROUGHPUT] == 1540.0  # median of 1000, 1500, 1580, 1600
    assert (at16["lowest (tokens/s)"], at16["highest (tokens/s)"]) == (1000.0, 1600.0)
    assert at16["scaling efficiency"] == 1540.0 / 1600.0
    assert at16["result id"] == "2 … 5 (4 rows)"
    assert points.row(0, named=True)["result id"] == "1"


def test_series_are_never_merged_and_rows_without_throughput_are_left_out() -> None:
    rows = [("a", 8, 800.0, 1), ("b", 8, 700.0, 2), ("b", 16, 1300.0, 3)]
    frame = _computed(rows).vstack(_computed([("b", 32, 0.0, 9)]).with_columns(pl.lit(None, pl.Float64).alias(THROUGHPUT)))
    points = points_by_devices(frame)
    assert points.select("series", "devices", THROUGHPUT).rows() == [("a", 8, 800.0), ("b", 8, 700.0),
                                                                     ("b", 16, 1300.0)]


def test_the_chart_spans_repeated_results_with_a_rule_and_says_so() -> None:
    once = charts.scaling_lines(points_by_devices(_computed([("a", 8, 800.0, 1), ("a", 16, 1500.0, 2)]))).to_dict()
    many = charts.scaling_lines(points_by_devices(_computed([("a", 8, 800.0, 1), ("a", 16, 1500.0, 2),
                                                             ("a", 16, 1400.0, 3)]))).to_dict()
    assert [layer["mark"]["type"] for layer in once["layer"]] == ["line", "line"]
    assert [layer["mark"]["type"] for layer in many["layer"]] == ["line", "line", "rule"]
    assert any("median" in line for line in many["title"]["subtitle"])
    assert len(many["datasets"][many["data"]["name"]]) == 2  # two points drawn for three results
