"""A stored, quoted figure is shown as stored: thousands separators, no rounding of significant digits. Sources
showed NVIDIA's 10,752 GPUs as "10,750" and 16,913 tokens/s as "16,910" ("%,.4g"); the Accelerators bars too."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable

import polars as pl
import pytest
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from perfledger import names, numbers

SOURCE = "nv_blog_nemo_h200_2023"


def _grouped(text: str) -> str:
    sign, digits, rest = re.fullmatch(r"(-?)(\d+)(.*)", text).groups()  # type: ignore[union-attr]
    return sign + f"{int(digits):,}" + rest


def js_number(value: float) -> str:
    """JavaScript's String(number) for the finite numbers a table holds (Python's repr without a trailing .0)."""
    return repr(float(value)).removesuffix(".0")


def printf(value: float, fmt: str) -> str:
    """The text Streamlit's table draws for `value` under a printf `fmt` of the kinds the pages use (its
    sprintf-js: %g is String(Number(x.toPrecision(p))), "," groups the integer part)."""
    comma, precision, kind = re.fullmatch(r"%(,?)(?:\.(\d+))?([gfd])", fmt).groups()  # type: ignore[union-attr]
    if kind == "g":
        text = js_number(float(f"{value:.{precision}g}")) if precision else js_number(value)
    elif kind == "f":
        text = f"{value:.{precision}f}" if precision else js_number(value)
    else:
        text = str(int(value))
    return _grouped(text) if comma else text


def d3(value: float, fmt: str) -> str:
    """The text Vega draws for `value` under the d3-format `fmt` kinds the bar charts use: "," alone (at most 12
    significant digits, zeros trimmed) and ",.Nf" with "~" (trailing zeros trimmed)."""
    if fmt == ",":
        return _grouped(js_number(float(f"{value:.12g}")))
    precision = re.fullmatch(r",\.(\d+)~f", fmt).group(1)  # type: ignore[union-attr]
    text = f"{value:.{precision}f}"
    return _grouped(text.rstrip("0").rstrip(".") if "." in text else text)


def shown(at: AppTest, index: int, column: str) -> list[str]:
    """The cells of `column` in the page's `index`-th table as the browser draws them."""
    element = at.dataframe[index]
    fmt = json.loads(element.proto.columns)[column]["type_config"]["format"]
    return [printf(v, fmt) for v in element.value[column].dropna().tolist()]


def test_sources_shows_every_stored_value_as_stored(seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page("sources", f"src={SOURCE}")
    values = at.dataframe[0].value["value"].dropna().tolist()
    assert "10,752" in shown(at, 0, "value") and "16,913" in shown(at, 0, "value")
    assert shown(at, 0, "value") == [_grouped(js_number(v)) for v in values]


def test_the_accelerators_bars_and_table_quote_the_stored_figure(seeded_url: str,
                                                                  open_page: Callable[..., AppTest]) -> None:
    at = open_page("accelerators", "m=llama2-7b")
    assert not at.exception
    assert "16,913" in shown(at, 0, "value")
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    label = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "text")["encoding"]["text"]
    data = pl.from_pandas(at.dataframe[0].value).filter(pl.col("normalized").is_not_null())
    labels = [d3(v, label["format"]) for v in data["normalized"].to_list()]
    assert "16,913" in labels, labels


QUOTED = ("value", "reported", "printed", "baseline value", "candidate value", "first value", "second value",
          "time to train (s)")  # stored, quoted figures: shown with every digit
VIEWS = (("speedups", ""), ("accelerators", "m=llama2-70b,llama2-7b"),
         ("accelerators", "s=head"), ("scaling", ""), ("scaling", "s=sensitivity"), ("audit", ""),
         ("sources", f"src={SOURCE}"), ("mlperf", ""), ("runs", "run=RUN"))


@pytest.mark.parametrize(("slug", "query"), VIEWS, ids=[f"{s}?{q}" for s, q in VIEWS])
def test_every_quoted_figure_a_page_draws_is_the_stored_one_with_every_digit(
        slug: str, query: str, seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    from ingest import pipeline
    from perfledger import views
    from tests.conftest import LOGS

    run = pipeline.ingest_path(seeded_engine, LOGS / "nvidia_eos_n64_h100_gpt3_nemo_v4.0_result_0.txt").run_id
    query = query.replace("RUN", str(run))
    at = open_page(slug, query)
    assert not at.exception, at.exception
    exported = pl.read_csv(io.BytesIO(views.export(slug, query, seeded_engine)), infer_schema_length=None)
    checked = 0
    for index, element in enumerate(at.dataframe):
        config = json.loads(element.proto.columns)
        numeric = {c for c in element.value.columns if element.value[c].dtype.kind in "fiu"}  # a printed label is text
        for column in (c for c in QUOTED if c in numeric):
            assert config[column]["type_config"]["format"] == numbers.GRID_FORMAT, (slug, column)
            assert config[column]["help"] == numbers.STORED_HELP, (slug, column)
            values = element.value[column].dropna().tolist()
            assert shown(at, index, column) == [_grouped(js_number(v)) for v in values]
            if index == 0 and slug != "runs":  # the page's own table: the numbers `perfledger export` prints
                assert values == exported[names.column_label(column)].drop_nulls().to_list()
            checked += len(values)
    assert checked, f"{slug}?{query} draws no quoted figure"
