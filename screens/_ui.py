"""The only Streamlit helpers: cached settings and engine, URL state in and out, errors, formulas, downloads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import polars as pl
import streamlit as st
from sqlalchemy import Engine

from perfledger import store, urlstate, views
from perfledger.errors import PerfledgerError
from perfledger.settings import Settings, load_settings


def settings() -> Settings:
    try:
        return load_settings()
    except PerfledgerError as exc:
        render_error(exc)


@st.cache_resource(show_spinner=False)
def _engine(url: str) -> Engine:
    return store.engine_from_url(url)  # NullPool: no connection is held between queries


def engine() -> Engine:
    try:
        return _engine(settings().db_url)
    except PerfledgerError as exc:
        render_error(exc)


def render_error(exc: PerfledgerError) -> NoReturn:
    """The one place a user-facing error becomes output; other exceptions still surface as bugs."""
    st.error(str(exc), icon=":material/error:")
    st.stop()


WIDGET_PREFIX = {"overview": "ov_", "speedups": "sp_", "accelerators": "ac_", "scaling": "sc_",
                 "time-to-train": "tt_", "runs": "ru_", "audit": "au_", "sources": "so_"}


def page_state(slug: str) -> Any:
    """The page's typed state from the URL; ignored values are explained, never raised.

    When the URL changed from outside (a link, back/forward), the page's widgets are reset so the URL wins.
    """
    current = st.query_params.to_dict()
    if st.session_state.get(f"_url:{slug}", current) != current:
        for k in [k for k in st.session_state if str(k).startswith(WIDGET_PREFIX[slug])]:
            del st.session_state[k]
    state = views.state_from_query(slug, current)
    for problem in state.problems:
        st.info(problem, icon=":material/link_off:")
    return state


def keep_in_url(state: Any) -> None:
    """Write the state to the URL (defaults left out), so a copied link reopens this view."""
    query = urlstate.to_query(state)
    if query != st.query_params.to_dict():
        st.query_params.from_dict(query)
    slug = next(s for s, cls in views.PAGE_STATES.items() if isinstance(state, cls))
    st.session_state[f"_url:{slug}"] = query


def stop_if_empty(db: Engine) -> None:
    try:
        empty = views.is_empty(db)
    except PerfledgerError as exc:
        render_error(exc)
    if empty:
        st.info(
            "The store is empty. Run `python -m perfledger init` to load the curated figures from data/, "
            "or upload a training log on the Runs page.",
            icon=":material/database:",
        )
        st.stop()


def compute(slug: str, state: Any, db: Engine) -> pl.DataFrame:
    try:
        return views.table(slug, state, db)
    except PerfledgerError as exc:
        render_error(exc)


def show_formula(funcs: Sequence[Callable[..., Any]], inputs: pl.DataFrame | None = None, note: str = "") -> None:
    with st.expander("How is this computed?", icon=":material/function:"):
        for func in funcs:
            st.markdown(f"**`perfledger.calc.{func.__module__.rsplit('.', 1)[-1]}.{func.__name__}`**")
            st.code(views.formula_of(func), language=None)
        if note:
            st.caption(note)
        if inputs is not None:
            st.caption(f"Input rows ({inputs.height}):")
            st.dataframe(inputs, hide_index=True, width="stretch")


def download(slug: str, state: Any, db: Engine) -> None:
    """Download CSV: exactly the bytes of `python -m perfledger export SLUG "QUERY"`."""
    query = urlstate.query_string(state)
    try:
        data = views.export(slug, query, db, "csv")
    except PerfledgerError as exc:
        render_error(exc)
    st.download_button(
        "Download CSV", data, file_name=f"perfledger-{slug}.csv", mime="text/csv", icon=":material/download:",
        help=f'Same bytes as: python -m perfledger export {slug} "{query}"',
    )


def source_link(source_id: str) -> str:
    return f"/sources?src={source_id}"


def header(title: str, state: Any) -> None:
    st.title(title)
    st.caption(state.describe())


# Display names for stored column names (the CSV keeps the stored names; only the screen reads these).
LABELS = {
    "source_id": "source", "model_id": "model", "accelerator_id": "accelerator", "n_devices": "devices",
    "seq_len": "seq len", "global_batch": "global batch", "framework_version": "framework version",
    "file_name": "file", "ingested_at": "ingested (UTC)", "n_steps": "steps", "skipped_lines": "skipped lines",
    "claim_id": "claim", "rel_diff": "relative diff", "n_results": "result rows", "mfu": "MFU",
    "tokens_per_s_per_device": "tokens/s/device", "model_tflops_per_device": "model TFLOP/s/device",
    "step_time_s_median": "median step time (s)", "jitter_cv": "jitter (CV)", "mfu_at_stated_precision": "MFU at stated precision",
}


def show_table(frame: pl.DataFrame, formats: dict[str, str] | None = None, *, key: str | None = None) -> None:
    """The page's table: numbers formatted per column (printf style), sources linked to the Sources page,
    stored column names shown under readable labels."""
    config: dict[str, Any] = {name: st.column_config.Column(LABELS[name]) for name in frame.columns if name in LABELS}
    config |= {name: st.column_config.NumberColumn(LABELS.get(name, name), format=fmt)
               for name, fmt in (formats or {}).items() if name in frame.columns}
    for name in ("source", "source_id"):
        if name in frame.columns:
            frame = frame.with_columns(("/sources?src=" + pl.col(name)).alias(name))
            config[name] = st.column_config.LinkColumn(LABELS.get(name, name), display_text=r"/sources\?src=(.*)")
    if "url" in frame.columns:
        config["url"] = st.column_config.LinkColumn("url")
    st.dataframe(frame, hide_index=True, width="stretch", column_config=config, key=key)


def choose(label: str, options: Sequence[str], current: str, *, key: str, fmt: Callable[[str], str] = str,
           where: Any = st) -> str:
    """A selectbox (in `where`: st, a column) starting at `current` (added to the options when it is not among them)."""
    opts = list(options) if current in options else [current, *options]
    return str(where.selectbox(label, opts, index=opts.index(current), key=key, format_func=fmt))


def choose_many(label: str, options: Sequence[str], current: Sequence[str], *, key: str) -> tuple[str, ...]:
    opts = list(dict.fromkeys([*current, *options]))
    return tuple(st.multiselect(label, opts, default=list(current), key=key))
