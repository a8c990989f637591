"""How a page's table reads: every page's URL carries its sort (sort=COLUMN, desc=1), applied alike to the page's
table and its export; each view puts what it compares, its value, verdict and source first; a column empty in every
row is left off the screen and kept in the CSV."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as hs
from sqlalchemy import Engine

from perfledger import urlstate, views
from perfledger.views import columns, registry


@pytest.mark.parametrize("slug", [p.slug for p in registry.PAGES])
def test_every_page_state_carries_its_sort_in_the_url(slug: str) -> None:
    keys = urlstate.url_keys(registry.page(slug).state)
    assert keys["sort"] == "sort" and keys["desc"] == "desc"
    state = views.state_from_query(slug, {"sort": "devices", "desc": "1"})
    assert (state.sort, state.desc) == ("devices", True) and not state.problems
    assert urlstate.to_query(state)["sort"] == "devices"


SORTED = (("speedups", "p=fsdp", "speedup (x)"), ("audit", "", "rel_diff"), ("sources", "", "n_results"),
          ("accelerators", "s=catalog", "memory (GB)"), ("scaling", "m=gpt2-xl", "value"))


@pytest.mark.parametrize(("slug", "query", "column"), SORTED)
@pytest.mark.parametrize("desc", [False, True])
def test_a_sorted_view_is_its_table_sorted_and_its_export_prints_it(slug: str, query: str, column: str, desc: bool,
                                                                    seeded_engine: Engine) -> None:
    sort = f"sort={column}" + ("&desc=1" if desc else "")
    full = f"{query}&{sort}" if query else sort
    unsorted = views.table(slug, views.state_from_query(slug, dict(kv.split("=") for kv in query.split("&") if kv)),
                           seeded_engine)
    shown = views.table(slug, views.state_from_query(slug, dict(kv.split("=") for kv in full.split("&"))),
                        seeded_engine)
    assert shown.height == unsorted.height >= 2
    assert shown[column].drop_nulls().to_list() == sorted(unsorted[column].drop_nulls().to_list(), reverse=desc)
    assert shown[column].is_null().sum() == 0 or shown[column].tail(1).is_null().all()  # empty cells last
    assert views.export(slug, full, seeded_engine) == views.render(shown)


def test_a_sort_by_a_column_the_table_lacks_keeps_its_order_and_says_so(seeded_engine: Engine) -> None:
    plain = views.table("speedups", views.SpeedupView(), seeded_engine)
    assert views.table("speedups", views.SpeedupView(sort="no such column"), seeded_engine).equals(plain)
    assert "names no column" in columns.sort_problem(plain, "no such column")
    assert columns.sort_problem(plain, "model") == ""


@given(hs.lists(hs.one_of(hs.none(), hs.integers(-5, 5)), max_size=12), hs.booleans())
def test_sorted_rows_orders_the_values_with_empty_cells_last(values: list[int | None], desc: bool) -> None:
    frame = pl.DataFrame({"v": values, "i": range(len(values))}, schema={"v": pl.Int64, "i": pl.Int64})
    out = columns.sorted_rows(frame, "v", desc)
    kept = [v for v in values if v is not None]
    assert out["v"].to_list() == sorted(kept, reverse=desc) + [None] * (len(values) - len(kept))
    for v in set(kept):  # ties keep the table's own order
        ids = out.filter(pl.col("v") == v)["i"].to_list()
        assert ids == sorted(ids)


def test_reading_order_puts_the_named_columns_first_and_keeps_the_rest() -> None:
    frame = pl.DataFrame({"a": [1], "b": [2], "c": [3], "d": [4]})
    assert columns.reading_order(frame, ("c", "missing", "a")).columns == ["c", "a", "b", "d"]


def test_a_column_empty_in_every_row_is_found_whatever_its_type() -> None:
    frame = pl.DataFrame({"n": [None, None], "nan": [float("nan"), None], "blank": ["", " "], "x": [None, 1.0]},
                         schema={"n": pl.Int64, "nan": pl.Float64, "blank": pl.String, "x": pl.Float64})
    assert columns.empty_columns(frame) == ["n", "nan", "blank"]
    assert columns.empty_columns(frame.head(0)) == []


VIEWS_FIRST = (
    ("speedups", "", ("model", "baseline", "candidate", "speedup (x)", "caveats", "source",
                      "baseline TFLOPS/device published", "candidate TFLOPS/device published")),
    ("runs", "", ("id", "file_name", "model", "accelerator", "n_devices", "tokens_per_s_per_device")),
    ("accelerators", "s=catalog", ("accelerator", "name", "bf16 TFLOPS", "fp16 TFLOPS", "fp8 TFLOPS", "memory (GB)")),
    ("scaling", "s=sensitivity", ("model", "accelerator", "devices", "scaling efficiency", "value", "unit", "source")),
    ("mlperf", "", ("benchmark", "time to train (min)", "submitter", "accelerator × count", "run")),
)


@pytest.mark.parametrize(("slug", "query", "first"), VIEWS_FIRST)
def test_each_view_orders_its_table_for_reading(slug: str, query: str, first: tuple[str, ...],
                                                seeded_engine: Engine) -> None:
    frame = views.table(slug, views.state_from_query(slug, dict(kv.split("=") for kv in query.split("&") if kv)),
                        seeded_engine)
    assert frame.columns[:len(first)] == list(first)
