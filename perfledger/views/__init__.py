"""One typed view state per dashboard page, and the table each page shows; pure (no Streamlit).

Every state round-trips through the URL (perfledger.urlstate: short keys, defaults left out) and says what it
shows (`describe()`). Each page's module here holds its state, its `table(state, engine)` (perfledger.calc
functions composed over store frames) and its formulas; `registry.PAGES` is the one list of pages and `links.to`
the one link builder. `render(table(...))` gives the bytes of both the page's Download button and
`python -m perfledger export PAGE "QUERY"` (`export`).
"""

from __future__ import annotations

from sqlalchemy import Engine

from perfledger import store
from perfledger.calc import formula_of
from perfledger.calc.normalise import NORMALIZATIONS
from perfledger.chart_colours import Colours
from perfledger.views import (
    accelerators,
    audit,
    campaigns,
    columns,
    hardware,
    links,
    mlperf,
    overview,
    registry,
    runs,
    scaling,
    sources,
    speedups,
    time_to_train,
    verdict,
    verdict_text,
)
from perfledger.views._shared import FORMULA_NAMES, METRIC_LABELS, TFLOPS_METRIC, TOKEN_METRIC, unknown_ids
from perfledger.views.accelerators import NORM_LABELS, AcceleratorView
from perfledger.views.audit import VERDICTS, AuditView, audit_rule, verdict_counts, with_input_rows
from perfledger.views.audit import table as audit_table
from perfledger.views.campaigns import CampaignsView
from perfledger.views.links import HEADLINES, link
from perfledger.views.output import (
    chart_file_name,
    chart_image,
    export,
    implausible_in,
    input_rows,
    render,
    row_notes,
    rows_as_inputs,
    table_file_name,
    warnings_title,
)
from perfledger.views.overview import OverviewView
from perfledger.views.registry import PAGES, Page, page, page_of, state_from_query, table
from perfledger.views.remembered import until_written
from perfledger.views.run_diff import config_diff
from perfledger.views.run_figures import nearest_claims, printed_vs_recomputed
from perfledger.views.runs import RunsView, launches, not_steady, run_steps, run_summary
from perfledger.views.scaling import ScalingView, rows_of_kind
from perfledger.views.sources import SourcesView, source_row
from perfledger.views.speedups import PRESET_LABELS, SPEEDUP_PRESETS, SpeedupView, caveat_list
from perfledger.views.time_to_train import TimeToTrainView, chosen_row, measured_row

# Read from the registry once, for callers that want them as constants (benchmarks, scripts).
SLUGS = registry.slugs()
PAGE_STATES = {p.slug: p.state for p in PAGES}
FORMULAS_BY_PAGE = {p.slug: p.formulas for p in PAGES}


@until_written(keep=4)
def accelerator_colours(engine: Engine) -> Colours:
    """The store's accelerator colours (perfledger.store.accelerator_colours), read again only after a write."""
    return store.accelerator_colours(engine)


def unknown_in(state: object, engine: Engine) -> list[str]:
    """A sentence per model or accelerator id the view names (its `catalog_ids()`) that the catalog lacks."""
    refs = state.catalog_ids() if hasattr(state, "catalog_ids") else ()
    if not refs:
        return []
    models, accelerators = store.catalog(engine)
    return unknown_ids(refs, {"model": set(models["id"].to_list()), "accelerator": set(accelerators["id"].to_list())})


def is_empty(engine: Engine) -> bool:
    """True when the store has no tables or no result rows and no runs: the pages say to run init."""
    return not store.has_data(engine)


__all__ = [
    "FORMULAS_BY_PAGE",
    "FORMULA_NAMES",
    "HEADLINES",
    "METRIC_LABELS",
    "NORMALIZATIONS",
    "NORM_LABELS",
    "PAGES",
    "PAGE_STATES",
    "PRESET_LABELS",
    "SLUGS",
    "SPEEDUP_PRESETS",
    "TFLOPS_METRIC",
    "TOKEN_METRIC",
    "VERDICTS",
    "AcceleratorView",
    "AuditView",
    "CampaignsView",
    "OverviewView",
    "Page",
    "RunsView",
    "ScalingView",
    "SourcesView",
    "SpeedupView",
    "TimeToTrainView",
    "accelerators",
    "audit",
    "audit_rule",
    "audit_table",
    "campaigns",
    "caveat_list",
    "chart_file_name",
    "chart_image",
    "chosen_row",
    "columns",
    "config_diff",
    "export",
    "formula_of",
    "hardware",
    "implausible_in",
    "input_rows",
    "is_empty",
    "launches",
    "link",
    "links",
    "measured_row",
    "mlperf",
    "nearest_claims",
    "not_steady",
    "overview",
    "page",
    "page_of",
    "printed_vs_recomputed",
    "registry",
    "render",
    "row_notes",
    "rows_as_inputs",
    "rows_of_kind",
    "run_steps",
    "run_summary",
    "runs",
    "scaling",
    "source_row",
    "sources",
    "speedups",
    "state_from_query",
    "table",
    "table_file_name",
    "time_to_train",
    "unknown_in",
    "verdict",
    "verdict_counts",
    "verdict_text",
    "warnings_title",
    "with_input_rows",
]
