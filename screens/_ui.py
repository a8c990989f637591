"""The only Streamlit helpers: cached settings and engine, URL state in and out, errors, formulas, downloads."""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote, urlsplit

import polars as pl
import streamlit as st
from sqlalchemy import Engine

from perfledger import names, store, urlstate, views
from perfledger.chart_colours import Colours
from perfledger.errors import PerfledgerError
from perfledger.settings import Settings, load_settings
from perfledger.views import links
from perfledger.views._shared import WORKLOAD_LABELS, WORKLOADS, parse_count, si
from perfledger.views.output import ImageFormat
from perfledger.views.registry import Page
from screens._table import (  # noqa: F401  (the pages read them as _ui.NAME)
    MAX_SHOWN_ROWS,
    MISSING,
    as_sent,
    show_table,
)

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$=^\"'&/@%;?])")
# Where GitHub-flavoured Markdown makes a link of plain text: after parsing, Streamlit's renderer (remark-gfm) turns
# "https://host", "www.host" and "name@host" in any text into links, escaped or not. A word joiner (U+2060, drawn as
# nothing) inside each of those marks breaks the pattern and leaves the characters as typed.
_AUTOLINK_MARKS = re.compile(r"(?<=:)(?=//)|(?<=[Ww]{3})(?=\.)|(?=@)")
_WORD_JOINER = "\u2060"


def plain(text: object) -> str:
    """`text` made safe for any Markdown-rendering element (st.markdown, caption, subheader, info, labels):
    every Markdown, HTML and directive character is backslash-escaped, so links, images, emphasis, `:icons:`,
    colours, LaTeX and bare-URL autolinks all show as the characters typed; control characters (newlines, NUL,
    ANSI escapes) show as their escape sequence, and bare URLs and e-mail addresses are not made links (see
    _AUTOLINK_MARKS). Use it for every string that comes from a URL, a log or a claim.
    """
    shown = "".join(c if unicodedata.category(c) != "Cc" else repr(c)[1:-1] for c in str(text))
    return _MARKDOWN_SPECIAL.sub(r"\\\1", _AUTOLINK_MARKS.sub(_WORD_JOINER, shown))


def web_url(value: object) -> str | None:
    """`value` as a link target when it is an absolute http(s) URL (percent-encoded where Markdown or the
    browser could misread it), else None: javascript:, data: and every other scheme stay text."""
    text = str(value or "").strip()
    if not text or any(unicodedata.category(c) in ("Cc", "Zs", "Zl", "Zp") for c in text):
        return None
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    return quote(text, safe=":/?#[]@!$&'*+,;=%~-._")


def web_link(where: Any, url: object) -> None:
    """A source's URL in `where`: a plain link when it is http(s), else the text as typed."""
    href = web_url(url)
    if href:
        where.markdown(f"[{plain(url)}]({href})")
    elif url:
        show_text(where, url)


def show_text(where: Any, text: object) -> None:
    """User-derived text in `where` (st, a column): never read as Markdown."""
    where.markdown(plain(text))


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


def colours() -> Colours:
    """The store's accelerator colours, for the charts coloured by accelerator."""
    return views.accelerator_colours(engine())


@contextmanager
def store_boundary() -> Iterator[None]:
    """The one error boundary of a page run (app.py runs every page inside it): an error a person can act on, and
    any driver or OS fault of the store (perfledger.store.store_fault), becomes one sentence; a bug still
    surfaces as one."""
    try:
        yield
    except PerfledgerError as exc:
        render_error(exc)
    except store.FAULT_TYPES as exc:  # a driver's or the OS's fault of the store; any other exception is a bug
        fault = store.store_fault(exc, engine())
        if fault is None:
            raise
        render_error(fault)


def render_error(exc: PerfledgerError) -> NoReturn:
    """The one place a user-facing error becomes output; other exceptions still surface as bugs."""
    st.error(plain(exc), icon=":material/error:")  # the sentence may quote a URL value or a file name
    st.stop()


ROOT = Path(__file__).resolve().parents[1]


def this_page(script: str) -> Page[Any]:
    """The registry entry of the page script at `script` (a page passes its __file__)."""
    here = Path(script).resolve()
    for page in views.registry.PAGES:
        if (ROOT / page.file).resolve() == here:
            return page
    raise LookupError(f"{script} is not a registered page script; add it to perfledger.views.registry.PAGES")


def page_state(page: Page[Any]) -> Any:
    """The page's typed state from the URL; ignored values are explained, never raised.

    When the URL changed from outside (a link, back/forward), the page's widgets are reset so the URL wins.
    """
    current = st.query_params.to_dict()
    if st.session_state.get(f"_url:{page.slug}", current) != current:
        for k in [k for k in st.session_state if str(k).startswith(page.widget_prefix)]:
            del st.session_state[k]
        # New widget keys, so the browser draws new widgets: with the old keys it keeps showing the old values
        # (Streamlit identifies a keyed widget by its key alone) while the script reads the link's.
        st.session_state[f"_gen:{page.slug}"] = st.session_state.get(f"_gen:{page.slug}", 0) + 1
    state = urlstate.from_query(page.state, current)
    for problem in state.problems:
        st.info(plain(problem), icon=":material/link_off:")
    return state


def key(page: Page[Any], name: str) -> str:
    """The session-state key of the page's widget `name` in this view: `page.key(name)`, plus a generation
    suffix once a link or back/forward has changed the URL under the page (see page_state)."""
    generation = st.session_state.get(f"_gen:{page.slug}", 0)
    return page.key(name) + (f"~{generation}" if generation else "")


def keep_in_url(state: Any) -> None:
    """Write the state to the URL (defaults left out), so a copied link reopens this view.

    Written on every run, even when st.query_params already holds it: a link to the page being shown passes its
    query to the script but leaves the browser's address bar without it.
    """
    query = links.to(state).query
    st.query_params.from_dict(query)
    st.session_state[f"_url:{views.page_of(state).slug}"] = query
    st.session_state[f"_state:{views.page_of(state).slug}"] = state


def page_link(where: Any, label: str, link: links.Link, icon: str) -> None:
    """A link (in `where`: st, a column) to a page's view; `link` from perfledger.views.links. The label is
    shown as text (it may quote a file name or an id)."""
    where.page_link(link.page.file, label=plain(label), icon=icon, query_params=link.query)


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


def compute(page: Page[Any], state: Any, db: Engine) -> pl.DataFrame:
    """The page's table for `state` (sorted as its URL says): the one query of this render (the download reuses
    it)."""
    try:
        table = page.table(state, db)
    except PerfledgerError as exc:
        render_error(exc)
    if hasattr(state, "sort") and (problem := views.columns.sort_problem(table, state.sort)):
        st.info(plain(problem), icon=":material/link_off:")
    return table


def sort_control(state: Any, table: pl.DataFrame, where: Any = st) -> None:
    """"Sort rows by" under a page's table: the choice goes to the URL (sort=, desc=), as `perfledger export` sorts
    it, and the page runs again with its table sorted. Under the table, so the first screen holds the answer."""
    if not hasattr(state, "sort") or table.height < 2:
        return
    page = views.page_of(state)
    left, right = where.columns([3, 2], vertical_alignment="bottom")
    options = ["", *table.columns]
    column = str(left.selectbox("Sort rows by", options, index=options.index(state.sort) if state.sort in options else 0,
                                key=key(page, "sort"),
                                format_func=lambda c: names.column_label(c) if c else "the table's order"))
    descending = bool(right.toggle("Largest first", state.desc, key=key(page, "desc")))
    if (column, descending) != (state.sort, state.desc):
        keep_in_url(replace(state, sort=column, desc=descending))
        st.rerun()


def show_formula(page: Page[Any], inputs: Callable[[], pl.DataFrame | None] | None = None, note: str = "") -> None:
    """The page's formulas, `note` and input rows, drawn only while the expander is open: the code blocks and
    the input table cost the browser about a second on every page's first paint, for a panel most visits never
    open."""
    box = st.expander("How is this computed?", icon=":material/function:", key=f"formula:{page.slug}",
                      on_change="rerun")
    if not box.open:
        return
    with box:
        for func in page.formulas:
            st.markdown(f"**`perfledger.calc.{func.__module__.rsplit('.', 1)[-1]}.{func.__name__}`**")
            st.code(views.formula_of(func), language=None)
        if note:
            st.caption(note)
        rows = inputs() if inputs is not None else None
        if rows is not None:
            st.caption(f"Input rows ({rows.height}):")
            st.dataframe(rows, hide_index=True, width="stretch", placeholder=MISSING)


def download(state: Any, table: pl.DataFrame, *, sortable: bool = True) -> None:
    """Download CSV under the page's table: the table as `python -m perfledger export SLUG "QUERY"` renders it
    (display names, shares in %, every digit), made when the button is pressed (the Audit's 52,329 claims took 0.3 s
    to render on every visit); the file is named after the page and the view, so two views never download under
    one name. Beside it, a `sortable` table's "Sort rows by" (sort_control)."""
    state = shown_state(state)
    slug, query = views.page_of(state).slug, urlstate.query_string(state)
    button, sorting = st.columns([1, 4], vertical_alignment="bottom")
    button.download_button(
        "Download CSV", functools.partial(views.render, table, "csv"), file_name=views.table_file_name(slug, query),
        mime="text/csv", icon=":material/download:", on_click="ignore",
        help=f'Same bytes as: python -m perfledger export {slug} "{query}"',
    )
    if sortable:
        sort_control(state, table, sorting)


def shown_state(state: Any) -> Any:
    """The state the URL holds now: `state`, with the sort a control below the page's widgets wrote (compute)."""
    latest = st.session_state.get(f"_state:{views.page_of(state).slug}")
    if type(latest) is not type(state) or not hasattr(state, "sort"):
        return state
    unsorted = replace(latest, sort=state.sort, desc=state.desc)
    return latest if unsorted == state else state


_IMAGE_TYPES: tuple[tuple[ImageFormat, str], ...] = (("png", "image/png"), ("svg", "image/svg+xml"))


def chart(spec: Mapping[str, Any], state: Any, name: str, *, where: Any = st) -> None:
    """A chart's Vega-Lite spec (perfledger.charts.spec) in `where` (st, a column) with PNG and SVG downloads under
    it, named after the page, `name` and the view (perfledger.views.chart_file_name). The file is drawn only when
    asked for: vl-convert takes 0.1-0.5 s."""
    where.vega_lite_chart(spec, width="stretch")
    slug, query = views.page_of(state).slug, urlstate.query_string(state)
    row = where.container(horizontal=True, gap="small")
    for fmt, mime in _IMAGE_TYPES:
        row.download_button(
            fmt.upper(), functools.partial(_chart_file, spec, fmt), file_name=views.chart_file_name(slug, name, query, fmt),
            mime=mime, icon=":material/image:", type="tertiary", on_click="ignore", key=f"chart:{name}:{fmt}",
            help=f"Download this chart as {fmt.upper()}")


def _chart_file(spec: Mapping[str, Any], fmt: ImageFormat) -> bytes:
    return views.chart_image(json.dumps(spec), fmt)


def header(title: str, state: Any) -> None:
    st.title(title)
    st.caption(plain(state.describe()))


def describe(state: Any) -> None:
    """The page's state in words, as a subheader; the words quote URL values, so never read as Markdown. Before it,
    a notice for each model or accelerator id of the view that the catalog does not hold."""
    try:
        unknown = views.unknown_in(state, engine())
    except PerfledgerError as exc:
        render_error(exc)
    for sentence in unknown:
        st.warning(plain(sentence), icon=":material/link_off:")
    st.subheader(plain(state.describe()), anchor=False)  # an anchor would put the URL's words in a link


def choose(label: str, options: Sequence[str], current: str, *, key: str, fmt: Callable[[str], str] = str,
           where: Any = st) -> str:
    """A selectbox (in `where`: st, a column) starting at `current` (added to the options when it is not among them)."""
    opts = list(options) if current in options else [current, *options]
    return str(where.selectbox(label, opts, index=opts.index(current), key=key, format_func=fmt))


def choose_many(label: str, options: Sequence[str], current: Sequence[str], *, key: str) -> tuple[str, ...]:
    opts = list(dict.fromkeys([*current, *options]))
    return tuple(st.multiselect(label, opts, default=list(current), key=key))


def choose_workload(current: str, *, key: str, where: Any = st) -> str:
    """The workload filter of a comparing page (perfledger.views._shared.WORKLOADS; "all" mixes them)."""
    return choose("Workload", WORKLOADS, current, key=key, fmt=lambda w: WORKLOAD_LABELS.get(w, w), where=where)


def mixed_caveat(state: Any) -> None:
    """The warning a view carries when the user asked it to mix workloads."""
    caveat = state.caveat() if hasattr(state, "caveat") else ""
    if caveat:
        st.warning(plain(caveat[:1].upper() + caveat[1:] + "."), icon=":material/warning:")


def count_input(label: str, current: float, *, key: str, where: Any = st) -> float:
    """A text input for a count that reads 300B / 1.2T (perfledger.views._shared.parse_count); a value it cannot
    read is said under the input and the current count is kept."""
    text = str(where.text_input(label, si(current), key=key))
    try:
        return parse_count(text)
    except ValueError as exc:
        where.error(plain(exc), icon=":material/error:")
        return current


def implausible(table: pl.DataFrame, db: Engine) -> None:
    """The audit's warnings on a page showing figures it calls implausible (perfledger.views.output.implausible_in),
    folded under one line that counts them: below the answer, not in place of it."""
    lines = views.implausible_in(table, db)
    if lines:
        with st.expander(views.warnings_title(lines), icon=":material/warning:"):
            st.markdown("\n".join(f"- {plain(line)}" for line in lines) + "\n\nSee the Audit page, and the sources' "
                        "notes below.")


def answer() -> Any:
    """The container of a page's answer (its chart, table or headline figures): a page draws it within the first
    screen of a 1440 x 1000 window, its controls above in one row and the rest folded or below."""
    return st.container(key="answer")


def notes(table: pl.DataFrame, db: Engine) -> None:
    """What the sources noted on the stored rows a comparison was computed from, each note once with its rows."""
    carried = views.row_notes(table, db)
    if not carried:
        return
    with st.expander(f"The sources' notes on these rows ({len(carried)})", icon=":material/sticky_note_2:"):
        for ids, note in carried:
            st.markdown(f"**result {plain(', '.join(map(str, ids)))}**: {plain(names.in_words(note))}")
