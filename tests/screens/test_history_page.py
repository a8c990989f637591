"""The History page on a nightly series of real logs ingested through `python -m ingest`: the night slowed by 4%
is flagged at that run, the unslowed series is not, and the reference line is a share of the published figure."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from streamlit.testing.v1 import AppTest

from tests.history.series import SLOWED_NIGHT, stored_series


@pytest.fixture(scope="module")
def slowed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[int]]:
    return stored_series(tmp_path_factory, slowed_night=SLOWED_NIGHT)


@pytest.fixture(scope="module")
def steady(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[int]]:
    return stored_series(tmp_path_factory, slowed_night=None)


def _opened(url: str, query: dict[str, str], monkeypatch: pytest.MonkeyPatch,
            open_page: Callable[..., AppTest]) -> AppTest:
    monkeypatch.setenv("PERFLEDGER_DB_URL", url)
    at = open_page("history", query)
    assert not at.exception, at.exception
    return at


def test_the_slowed_night_is_flagged_at_that_run(slowed: tuple[str, list[int]], monkeypatch: pytest.MonkeyPatch,
                                                 open_page: Callable[..., AppTest]) -> None:
    url, runs = slowed
    at = _opened(url, {"m": "llama3-8b"}, monkeypatch, open_page)
    table = at.dataframe[0].value
    assert table.loc[table["regression"], "run id"].tolist() == [f"/runs?run={runs[SLOWED_NIGHT]}"]  # a link to the run
    assert table["date"].is_monotonic_increasing and set(table["date from"]) == {"log"}
    (error,) = at.error
    assert f"Run {runs[SLOWED_NIGHT]} " in error.value.replace("\\", "")


@pytest.mark.parametrize("figure", ["step_time_s", "mfu"])
def test_the_slowed_night_is_flagged_on_the_other_figures_too(
        figure: str, slowed: tuple[str, list[int]], monkeypatch: pytest.MonkeyPatch,
        open_page: Callable[..., AppTest]) -> None:
    url, runs = slowed
    table = _opened(url, {"m": "llama3-8b", "y": figure}, monkeypatch, open_page).dataframe[0].value
    assert table.loc[table["regression"], "run id"].tolist() == [f"/runs?run={runs[SLOWED_NIGHT]}"]


def test_the_unslowed_series_flags_nothing(steady: tuple[str, list[int]], monkeypatch: pytest.MonkeyPatch,
                                           open_page: Callable[..., AppTest]) -> None:
    url, runs = steady
    at = _opened(url, {"m": "llama3-8b", "x": "version"}, monkeypatch, open_page)
    table = at.dataframe[0].value
    assert table["run id"].tolist() == [f"/runs?run={r}" for r in runs] and not table["regression"].any() and not table["change point"].any()
    assert not at.error


def test_the_reference_line_is_the_asked_share_of_the_newest_published_figure(
        slowed: tuple[str, list[int]], monkeypatch: pytest.MonkeyPatch, open_page: Callable[..., AppTest]) -> None:
    url, _ = slowed
    table = _opened(url, {"m": "llama3-8b", "r": "95"}, monkeypatch, open_page).dataframe[0].value
    # data/results.csv: the newest source, mbridge_perf_archive, lists Llama 3 8B FP8 on 8 DGX-B200 at 30,624
    # tokens/s/GPU (FP8-CS) and 29,521 (FP8-MX): the reference is its best
    assert set(table["reference source"]) == {"mbridge_perf_archive"} and set(table["reference"]) == {30_624.0}
    assert table["reference line"].tolist() == pytest.approx([0.95 * 30_624.0] * len(table))
    assert not table["below reference line"].any()
    below = _opened(url, {"m": "llama3-8b", "r": "99"}, monkeypatch, open_page).dataframe[0].value
    assert below.loc[below["below reference line"], "run id"].tolist() == below.loc[
        below["value"] < 0.99 * 30_624.0, "run id"].tolist() != []


def test_the_page_lists_the_series_configuration_among_its_choices(
        slowed: tuple[str, list[int]], monkeypatch: pytest.MonkeyPatch, open_page: Callable[..., AppTest]) -> None:
    at = _opened(slowed[0], {}, monkeypatch, open_page)
    model = next(s for s in at.selectbox if s.label == "Model")
    assert "llama3-8b" in model.options
