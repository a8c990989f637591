"""The page registry: the one list of dashboard pages. Every other list (the app's navigation, the CLI's export
choices, the widget prefixes, the tests' parametrisation) is read from `PAGES` when it is needed.

Adding a page is one entry here plus its module in perfledger/views/ (state, table, formulas) and its script in
screens/. Lookups read `PAGES` at call time, so a registry extended in a test is seen everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

import polars as pl
from sqlalchemy import Engine

from perfledger import store, urlstate
from perfledger.errors import InvalidQuery
from perfledger.views import (
    accelerators,
    audit,
    campaigns,
    history,
    mlperf,
    overview,
    runs,
    scaling,
    sources,
    speedups,
    time_to_train,
)
from perfledger.views.columns import sorted_rows
from perfledger.views.remembered import until_written


class ViewState(Protocol):
    """What every page state is: a frozen dataclass of URL fields (perfledger.urlstate) that says what it shows."""

    @property
    def problems(self) -> tuple[str, ...]: ...

    def describe(self) -> str: ...


S = TypeVar("S")


@dataclass(frozen=True)
class Page(Generic[S]):
    """One dashboard page: where it lives, how it is named, its URL state and the table it shows."""

    slug: str  # URL path and CLI export name
    title: str
    icon: str
    file: str  # the page script, relative to the repository root (st.Page), named `<slug>.py` as Streamlit names
    # a page by its file: AppTest finds it so before st.navigation has run (one run opens a page in a test)
    state: type[S]
    table: Callable[[S, Engine], pl.DataFrame]
    formulas: tuple[Callable[..., Any], ...]
    widget_prefix: str  # every widget key of the page starts with it (reset when the URL changes from outside)

    def key(self, name: str) -> str:
        """The session-state key of the page's widget `name`."""
        return self.widget_prefix + name


def _remembered(table: Callable[[S, Engine], pl.DataFrame]) -> Callable[[S, Engine], pl.DataFrame]:
    """A page's table, remembered for its last 16 states until the store is written to (perfledger.views.remembered),
    its rows sorted as the state's `sort` and `desc` say: the remembered table is the unsorted one, so a new sort
    of the same view recomputes nothing."""
    remembered = until_written(keep=16)(table)

    def sorted_table(state: S, engine: Engine) -> pl.DataFrame:
        column, descending = getattr(state, "sort", ""), bool(getattr(state, "desc", False))
        unsorted = replace(state, sort="", desc=False) if column or descending else state  # type: ignore[type-var]
        return sorted_rows(remembered(unsorted, engine), column, descending)

    sorted_table.__doc__ = table.__doc__
    return sorted_table


PAGES: tuple[Page[Any], ...] = (
    Page("overview", "Overview", ":material/dashboard:", "screens/overview.py",
         overview.OverviewView, _remembered(overview.table), overview.FORMULAS, "ov_"),
    Page("speedups", "Speedups", ":material/speed:", "screens/speedups.py",
         speedups.SpeedupView, _remembered(speedups.table), speedups.FORMULAS, "sp_"),
    Page("accelerators", "Accelerators", ":material/memory:", "screens/accelerators.py",
         accelerators.AcceleratorView, _remembered(accelerators.table), accelerators.FORMULAS, "ac_"),
    Page("scaling", "Scaling", ":material/trending_up:", "screens/scaling.py",
         scaling.ScalingView, _remembered(scaling.table), scaling.FORMULAS, "sc_"),
    Page("time-to-train", "Time to train", ":material/schedule:", "screens/time-to-train.py",
         time_to_train.TimeToTrainView, _remembered(time_to_train.table), time_to_train.FORMULAS, "tt_"),
    Page("runs", "Runs", ":material/monitor_heart:", "screens/runs.py",
         runs.RunsView, _remembered(runs.table), runs.FORMULAS, "ru_"),
    Page("campaigns", "Campaigns", ":material/folder_copy:", "screens/campaigns.py",
         campaigns.CampaignsView, _remembered(campaigns.table), campaigns.FORMULAS, "ca_"),
    Page("history", "History", ":material/timeline:", "screens/history.py",
         history.HistoryView, _remembered(history.table), history.FORMULAS, "hi_"),
    Page("audit", "Audit", ":material/fact_check:", "screens/audit.py",
         audit.AuditView, _remembered(audit.table), audit.FORMULAS, "au_"),
    Page("mlperf", "MLPerf results", ":material/trophy:", "screens/mlperf.py",
         mlperf.MlperfView, _remembered(mlperf.table), mlperf.FORMULAS, "ml_"),
    Page("sources", "Sources", ":material/menu_book:", "screens/sources.py",
         sources.SourcesView, _remembered(sources.table), sources.FORMULAS, "so_"),
)
DEFAULT_SLUG = "overview"


def slugs() -> tuple[str, ...]:
    return tuple(p.slug for p in PAGES)


def page(slug: str) -> Page[Any]:
    """The registered page `slug`; InvalidQuery naming the pages when there is none."""
    for p in PAGES:
        if p.slug == slug:
            return p
    raise InvalidQuery(f"unknown page {slug!r}; pages: {', '.join(slugs())}")


def page_of(state: Any) -> Page[Any]:
    """The page whose state type `state` is."""
    for p in PAGES:
        if type(state) is p.state:
            return p
    raise InvalidQuery(f"{type(state).__name__} is the state of no registered page")


def state_from_query(slug: str, query: urlstate.QueryLike) -> Any:
    """The page's typed state from a URL query (st.query_params, parse_qsl pairs or a dict)."""
    return urlstate.from_query(page(slug).state, query)


def table(slug: str, state: Any, engine: Engine) -> pl.DataFrame:
    """The table the page `slug` shows for `state`, its reads through one connection (store.reading)."""
    with store.reading():
        return page(slug).table(state, engine)
