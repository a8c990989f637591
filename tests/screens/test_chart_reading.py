"""Charts a performance engineer can read, asserted on their Vega-Lite specs (chart.to_dict(), not pixels): the
overlay's cross-hair names every run's value at the pointer's x, its legend names every run whole and hides a run on
a click, it zooms and draws on a log axis on request, the main run thicker and every run in its own colour; a run's
axes span its steady window, a warm-up outlier drawn at the edge and named instead of setting the scale; the band is
said only where it is drawn; ticks are the scale's own (no "11.000"), a log axis ticks 1-2-5; History names every
configuration, its years, and leaves room round its first and last points; the Speedups chart keeps the URL's order."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl

import numpy as np
import polars as pl
from sqlalchemy import Engine

from perfledger import charts, history_chart, numbers, overlay_chart, step_charts, views
from perfledger.chart_colours import RUN_COLOURS


def _layers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield spec
    for child in spec.get("layer", []):
        yield from _layers(child)


def _rows(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [row for rows in spec.get("datasets", {}).values() for row in rows]


def _steps(n: int = 300, *, outlier: float = 13.0) -> pl.DataFrame:
    """A run of 0.45 s steps whose first step took `outlier` s, its tenth first steps warm-up."""
    rng = np.random.default_rng(7)
    step_time = 0.45 + rng.random(n) * 0.01
    step_time[0] = outlier
    return pl.DataFrame({"step": np.arange(1, n + 1), "step_time_s": step_time,
                         "phase": ["warmup"] * (n // 10) + ["steady"] * (n - n // 10),
                         "tokens_per_s_per_device": 4096 * 8 / step_time, "mfu": 0.45 * 0.42 / step_time,
                         "loss": 11.0 - np.log1p(np.arange(n)), "tokens_seen": np.arange(1, n + 1) * 32_768.0})


WINDOW = (31, 300)


def test_a_warm_up_outlier_is_marked_at_the_axis_edge_and_no_longer_sets_the_scale() -> None:
    spec = step_charts.step_times(_steps(), WINDOW).to_dict()
    domains = {tuple(s["encoding"]["y"]["scale"]["domain"]) for s in _layers(spec)
               if "domain" in s.get("encoding", {}).get("y", {}).get("scale", {})}
    assert len(domains) == 1
    low, high = domains.pop()
    assert 0.4 < low < 0.45 and 0.46 < high < 0.5, (low, high)  # the 0.45 s steps, not 0-13 s
    marked = [r for r in _rows(spec) if r.get("outside")]
    assert {(r["step"], r["value"], r["shown"]) for r in marked} == {(1, 13.0, high)}
    triangles = next(s for s in _layers(spec) if s.get("mark", {}).get("color") == step_charts.OUTLIER_COLOUR)
    assert triangles["encoding"]["shape"]["field"] == "mark"
    assert any("step 1 (13 s)" in line and "off the axis" in line for line in spec["title"]["subtitle"])


def test_the_band_is_drawn_and_said_only_where_there_is_a_steady_window() -> None:
    drawn = step_charts.step_times(_steps(), WINDOW).to_dict()
    band = [r for r in _rows(drawn) if "first" in r]
    assert band == [{"first": 31, "last": 300}]
    assert any("shaded: the steady window, steps 31-300" in line for line in drawn["title"]["subtitle"])
    bare = step_charts.step_times(_steps(outlier=0.45), None).to_dict()
    assert not [r for r in _rows(bare) if "first" in r]
    assert "shaded" not in str(bare["title"])


def test_mfu_reads_in_percent_and_loss_keeps_its_falling_scale_with_the_scales_own_ticks() -> None:
    mfu = step_charts.step_figure(_steps(), "mfu", "MFU", "MFU (%)", window=WINDOW).to_dict()
    values = [r["value"] for r in _rows(mfu) if "figure" in r and r["step"] > 31]
    assert values and all(30 < v < 50 for v in values)  # %, not 0.42
    assert all(numbers.within_rule(v) for v in values)
    loss = step_charts.step_figure(_steps(), "loss", "Loss", "loss", window=WINDOW, steady=False).to_dict()
    ys = [s["encoding"]["y"] for s in _layers(loss) if "y" in s.get("encoding", {})]
    assert all("domain" not in y.get("scale", {}) for y in ys)  # a falling loss is not an outlier of its window
    assert all("format" not in y.get("axis", {}) for y in ys)  # "11.000" came from a fixed ",.3f"


def _overlaid() -> tuple[dict[str, Any], list[str]]:
    runs = ["#1 cscs_gh200_gated_attn_te_1gpu_rankprefix.out", "#2 gaudi_hpu_megatron_llama1b_8card_settrace.log",
            "#4 gcp_a4_b200_qwen2_5_32b_16gpu_nemo2504.log"]
    frames = [_steps().with_columns(run=pl.lit(name), step_time_s=pl.col("step_time_s") * (i + 1))
              for i, name in enumerate(runs)]
    chart = overlay_chart.overlay(pl.concat(frames), "step_time_s", "step", "Step time", "step time (s)",
                                  main=runs[0], log=True)
    return chart.to_dict(), runs


def test_the_overlay_cross_hair_lists_every_runs_value_by_name() -> None:
    spec, runs = _overlaid()
    rule = next(s for s in _layers(spec) if s.get("mark", {}).get("type") == "rule")
    titles = [t.get("title") for t in rule["encoding"]["tooltip"]]
    assert titles == ["step", *runs]
    crosshair = next(p for p in spec["params"] if p["name"] == "crosshair")
    assert crosshair["select"]["nearest"] and crosshair["select"]["on"] == "pointerover"
    readout = [r for r in _rows(spec) if "r0" in r]
    at_step_200 = next(r for r in readout if r["step"] == 200.0)
    assert all(at_step_200[f"r{i}"] is not None for i in range(len(runs)))  # every run read at that x


def test_the_overlay_legend_is_whole_above_the_chart_and_a_click_hides_a_run() -> None:
    spec, runs = _overlaid()
    lines = next(s for s in _layers(spec) if s.get("mark", {}).get("type") == "line")
    legend = lines["encoding"]["color"]["legend"]
    assert legend["orient"] == "top" and legend["labelLimit"] == 0 and legend["titleLimit"] == 0
    assert lines["encoding"]["color"]["scale"] == {"domain": runs, "range": list(RUN_COLOURS[:3])}
    hidden = next(p for p in spec["params"] if p["name"] == "hidden")
    assert hidden["bind"] == "legend" and hidden["select"]["toggle"] == "true"
    assert lines["encoding"]["opacity"]["condition"]["param"] == "hidden"
    zoom = next(p for p in spec["params"] if p["name"] == "zoom")
    assert zoom["bind"] == "scales"
    width = lines["encoding"]["strokeWidth"]
    assert runs[0] in width["condition"]["test"] and width["condition"]["value"] > width["value"]
    assert lines["encoding"]["y"]["scale"]["type"] == "log"


def test_time_to_train_ticks_one_two_five_and_the_device_counts() -> None:
    frame = pl.DataFrame({"devices": [2, 4, 8, 16, 32], "time (days)": [3.08, 1.54, 0.77, 0.385, 0.192],
                          "time (h)": [73.9, 36.9, 18.5, 9.2, 4.6], "cost (USD)": [591.0] * 5,
                          "scaling": ["linear scaling from the 8 devices measured"] * 5, "basis": ["b"] * 5,
                          "chosen": [False, False, True, False, False]})
    spec = charts.time_vs_devices(frame).to_dict()
    y = next(s["encoding"]["y"] for s in _layers(spec) if "axis" in s.get("encoding", {}).get("y", {}))
    assert y["axis"]["values"] == [0.1, 0.2, 0.5, 1.0, 2.0, 5.0]
    x = next(s["encoding"]["x"] for s in _layers(spec) if "x" in s.get("encoding", {}))
    assert x["axis"]["values"] == [2, 4, 8, 16, 32]


def test_history_names_every_configuration_its_years_and_cuts_no_point() -> None:
    dates = pl.datetime_range(pl.datetime(2022, 1, 1), pl.datetime(2026, 1, 1), "8mo", time_zone="UTC", eager=True)
    configs = [f"config {i} · h100-sxm · 8 · bf16 · tp1 pp1 dp8 · a very long framework name, release 24.{i}"
               for i in range(7)]
    points = pl.DataFrame({"x": dates[:7], "date": dates[:7], "configuration": configs, "run id": range(7),
                           "file": ["f.log"] * 7, "value": [1000.0 + i for i in range(7)], "unit": ["tokens/s/device"] * 7,
                           "level": [1000.0] * 7, "regression": [False] * 7, "change point": [False] * 7,
                           "worse than before": [None] * 7, "reference line": [None] * 7,
                           "framework version": ["24"] * 7}, schema_overrides={"worse than before": pl.Float64,
                                                                                "reference line": pl.Float64})
    spec = history_chart.history_lines(points, by="date", value_title="tokens/s/device").to_dict()
    line = next(s for s in _layers(spec) if s.get("mark", {}).get("type") == "line")
    legend = line["encoding"]["color"]["legend"]
    assert legend["labelLimit"] == 0 and legend["symbolLimit"] == 0 and legend["orient"] == "top"
    assert {r["configuration"] for r in _rows(spec)} == set(configs)
    assert line["encoding"]["x"]["axis"]["format"] == "%b %Y"
    assert line["encoding"]["x"]["scale"]["padding"] > 0
    assert spec["height"] >= 360 + 7 * 20  # the legend's lines are added to the plot's height


def test_the_speedups_chart_keeps_the_order_the_url_sorts_its_table_by(seeded_engine: Engine) -> None:
    def bars(query: str) -> list[str]:
        state = views.state_from_query("speedups", parse_qsl(query))
        spec = charts.speedup_bars(views.table("speedups", state, seeded_engine)).to_dict()
        return list(dict.fromkeys(r["row"] for r in _rows(spec) if "row" in r))

    assert bars("sort=speedup+(x)&desc=1") == bars("sort=speedup+(x)&desc=1")
    assert bars("sort=speedup+(x)&desc=1") == list(reversed(bars("sort=speedup+(x)")))
