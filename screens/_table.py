"""How a page's table is drawn: readable labels, printf formats, links to sources, results and runs, empty cells
as a dash, columns empty in every row left out, the first rows only (the CSV holds every row)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl
import streamlit as st

from perfledger import names, numbers, views
from perfledger.views import links

_SOURCE_TEXT = r"/sources\?src=(.*)"  # the id back from links.source(id).href (Streamlit decodes the %-escapes)
_RESULT_TEXT = r"/sources\?result=(\d+)"  # the id back from links.result(id).href
_RUN_TEXT = r"/runs\?run=(\d+)"
_RUN_COLUMNS = ("run", "run_id", "run id")  # a campaign's attempts and History's points name their run so


def _is_result_column(name: str, results: Sequence[str]) -> bool:
    return name.endswith("result id") or name == "claim_id" or name in results


def _is_link(column: Mapping[str, Any] | None) -> bool:
    return column is not None and column.get("type_config", {}).get("type") == "link"


def _linked(frame: pl.DataFrame, results: Sequence[str]) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Whole-number result-id and run columns as links to the result's permalink and the run's page."""
    config: dict[str, Any] = {name: st.column_config.Column(names.column_label(name)) for name in frame.columns
                              if names.column_label(name) != name}
    for name, dtype in frame.schema.items():
        if not dtype.is_integer() or not (_is_result_column(name, results) or name in _RUN_COLUMNS):
            continue
        build, pattern = (links.run, _RUN_TEXT) if name in _RUN_COLUMNS else (links.result, _RESULT_TEXT)
        hrefs = {int(i): build(int(i)).href for i in frame[name].drop_nulls().unique().to_list()}
        frame = frame.with_columns(pl.col(name).replace_strict(hrefs, default=None, return_dtype=pl.String))
        config[name] = st.column_config.LinkColumn(names.column_label(name), display_text=pattern)
    return frame, config


# Widths (px) of the columns whose text runs long, so the figures, verdicts and sources beside them stay on a 1440px
# screen; the whole text shows on hover and in the CSV. A page's own `widths` win.
TEXT_WIDTHS = {"caveats": 220, "warning": 220, "explanation": 220, "note": 240, "what is stored": 180, "series": 200,
               "baseline": 160, "basis": 260, "title": 240, "reason": 240, "inputs": 200, "url": 200, "name": 140,
               "locator": 160, "source": 150, "source_id": 150, "input_source": 150}
MAX_SHOWN_ROWS = 2_000  # rows a page's table sends to the browser; the CSV keeps them all
MISSING = "—"  # what an empty cell reads on screen, text or number (the CSV keeps it empty)
_ID_COLUMNS = ("id", "line", "launch", "run", "claim")  # whole numbers that name something: not grouped


def as_sent(frame: pl.DataFrame, config: Mapping[str, Mapping[str, Any]]) -> pl.DataFrame:
    """The frame as the browser gets it: each text column but the links dictionary-encoded, so a text repeated
    down the rows travels once (the Scaling table's 2,000 rows: 923 KB -> 193 KB); the cells read the same."""
    links_ = {name for name, column in config.items() if _is_link(column)}
    return frame.with_columns(pl.col(name).cast(pl.Categorical) for name, dtype in frame.schema.items()
                              if dtype == pl.String and name not in links_)


def show_table(frame: pl.DataFrame, stored: Sequence[str] = (), *, key: str | None = None,
               first: Sequence[str] = (), widths: Mapping[str, str | int] | None = None,
               results: Sequence[str] = (), height: str | int = "auto") -> None:
    """The page's table as a reader reads it (perfledger.numbers): shares in %, every derived figure at the rule's
    precision and the `stored` columns exactly as stored, each number column saying which on hover; sources linked
    to the Sources page, result ids (every '... result id' column, `claim_id` and the `results` columns) to their
    permalink and runs to their page; every column under its display name (perfledger.names); empty cells as
    MISSING, columns empty in every row left out, the `first` columns leftmost and the `widths` (px, or "small",
    "medium", "large") fixed, never narrower than the column's name, so what matters fits the screen (the CSV keeps
    every column, in the view's order); `height` "content" shows every row at once."""
    if frame.height > MAX_SHOWN_ROWS:  # 50,000 audited claims took seconds to send and draw, and no one reads them
        st.caption(f"The first {MAX_SHOWN_ROWS:,} of {frame.height:,} rows, in the table's order: narrow the filters "
                   "above to see others; Download CSV holds every row.")
        frame = frame.head(MAX_SHOWN_ROWS)
    frame = frame.drop(views.columns.empty_columns(frame))  # every cell empty: nothing to read (the CSV keeps it)
    frame = numbers.rounded(numbers.for_reading(frame), stored)
    frame, config = _linked(frame, results)
    config |= {name: _number_column(name, dtype, name in stored) for name, dtype in frame.schema.items()
               if dtype.is_numeric() and not _is_link(config.get(name))}
    for name in ("source", "source_id", "input_source"):
        if name in frame.columns:
            hrefs = {s: links.source(s).href for s in frame[name].drop_nulls().unique().to_list()}
            frame = frame.with_columns(pl.col(name).replace_strict(hrefs, default=None, return_dtype=pl.String))
            config[name] = st.column_config.LinkColumn(names.column_label(name), display_text=_SOURCE_TEXT)
    if "url" in frame.columns:  # a link only for http(s); any other scheme (javascript:, data:) stays text
        from screens._ui import web_url  # _ui re-exports this module's names

        web = pl.Series("url", [web_url(v) for v in frame["url"].to_list()], dtype=pl.String)
        if (frame["url"].is_not_null() & web.is_null()).any():
            frame = frame.with_columns(pl.when(web.is_null()).then(pl.col("url")).alias("url (not a web link)"))
        frame = frame.with_columns(web)
        config["url"] = st.column_config.LinkColumn("url")
    for name, width in (TEXT_WIDTHS | dict(widths or {})).items():
        if name in frame.columns:
            column = config.setdefault(name, st.column_config.Column(names.column_label(name)))
            column["width"] = _at_least_its_name(width, names.column_label(name))
    order = [c for c in first if c in frame.columns] if first else []
    order += [c for c in frame.columns if c not in order] if order else []
    st.dataframe(as_sent(frame, config), hide_index=True, width="stretch", column_config=config, key=key, column_order=order or None,
                 placeholder=MISSING, height=height)


def _number_column(name: str, dtype: pl.DataType, stored: bool) -> Any:
    """A number column: a float at the rule's precision (or as stored), saying which on hover; a count grouped."""
    label = names.column_label(name)
    if dtype.is_float():
        return st.column_config.NumberColumn(label, format=numbers.GRID_FORMAT,
                                             help=numbers.STORED_HELP if stored else numbers.DERIVED_HELP)
    return st.column_config.NumberColumn(label, format="%d" if name in _ID_COLUMNS or name.endswith("id") else "%,d")


_CHAR_PX, _HEADER_PADDING_PX = 7.2, 26  # the grid's header font, and its cell padding and sort arrow


def _at_least_its_name(width: str | int, label: str) -> str | int:
    """A column width in px never narrower than its name ("baseline TFLO" read as a cut-off word)."""
    return max(width, round(len(label) * _CHAR_PX + _HEADER_PADDING_PX)) if isinstance(width, int) else width
