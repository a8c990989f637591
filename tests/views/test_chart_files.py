"""A chart's file: its name says the page, the chart and the view; its bytes are the chart drawn."""

from __future__ import annotations

import altair as alt
import polars as pl

from perfledger import views


def test_the_name_holds_the_page_the_chart_and_the_view_query() -> None:
    name = views.chart_file_name("speedups", "bars", "p=custom&m=llama2-70b,gpt3-175b&ba=a100-80gb", "png")
    assert name == "perfledger-speedups-bars-p=custom_m=llama2-70b,gpt3-175b_ba=a100-80gb.png"


def test_a_default_view_has_no_query_part() -> None:
    assert views.chart_file_name("overview", "counts", "", "svg") == "perfledger-overview-counts.svg"


def test_path_and_shell_characters_in_the_query_never_reach_the_name() -> None:
    name = views.chart_file_name("sources", "x", "src=../../etc/passwd%00;rm -rf ~", "svg")
    assert "/" not in name and "%" not in name and " " not in name and ";" not in name and ".." not in name


def test_two_long_queries_sharing_a_prefix_get_different_names_of_bounded_length() -> None:
    base = "m=" + ",".join(f"model-{i}" for i in range(40))
    a, b = (views.chart_file_name("accelerators", "bars", base + tail, "png") for tail in ("&n=mfu", "&n=tokens"))
    assert a != b
    assert max(len(a), len(b)) <= 130


def test_png_and_svg_are_the_chart_drawn() -> None:
    spec = alt.Chart(pl.DataFrame({"a": ["x", "y"], "b": [1, 2]})).mark_bar().encode(x="a:N", y="b:Q") \
        .properties(title="Two bars").to_json()
    assert views.chart_image(spec, "png").startswith(b"\x89PNG\r\n\x1a\n")
    svg = views.chart_image(spec, "svg")
    assert svg.lstrip().startswith(b"<svg") and b"Two bars" in svg
