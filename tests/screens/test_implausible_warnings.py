"""Figures the audit calls implausible carry its warning on every page that shows them, not only Accelerators."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from perfledger import views


def test_the_nemo_h200_figures_are_named_with_the_audit_reason(seeded_engine: Engine) -> None:
    lines = views.implausible_in(views.table("speedups", views.SpeedupView(), seeded_engine), seeded_engine)
    assert any(line.startswith("llama2-70b on 8 × h200 (nv_blog_nemo_h200_2023; result") for line in lines)
    assert all(": precision unstated: plausible only in FP8 (" in line for line in lines), lines
    assert not any("implausible (" in line for line in lines)


def test_a_table_without_result_ids_has_no_warning(seeded_engine: Engine) -> None:
    assert views.implausible_in(views.table("overview", views.OverviewView(), seeded_engine), seeded_engine) == []


@pytest.mark.parametrize(("slug", "query"), [("speedups", ""), ("accelerators", "n=mfu")])
def test_page_shows_the_audit_warning(seeded_url: str, open_page: Callable[..., AppTest], slug: str,
                                      query: str) -> None:
    at = open_page(slug, query)
    assert not at.exception, at.exception
    folds = [box for box in at.expander if box.label.startswith("The audit")]  # folded under the answer, counted
    assert folds and "among these figures" in folds[0].label
    assert any("h200" in line.value for line in folds[0].markdown)


def test_the_warnings_are_the_full_audit_tables_implausible_rows(seeded_engine: Engine) -> None:
    """implausible_warnings audits only what can be implausible; it must say what the whole audit table says."""
    from perfledger.views.audit import WARNING_KEYS, implausible_warnings, warning_sentence

    full = views.table("audit", views.AuditView(), seeded_engine).filter(plausibility="implausible")
    expected = {tuple(r[k] for k in WARNING_KEYS): warning_sentence(r["explanation"], r["precision"])
                for r in full.to_dicts()}
    assert expected
    assert implausible_warnings(seeded_engine) == expected
