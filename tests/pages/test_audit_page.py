"""The Audit page lists every claim kind with its unit, convention and reason."""

from __future__ import annotations

from collections.abc import Callable

from streamlit.testing.v1 import AppTest

from perfledger import names


def test_audit_page_shows_time_to_train_and_scaling_claims_with_their_units(
        seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page("audit")
    assert not at.exception, at.exception
    frame = at.dataframe[0].value
    units = dict(zip(frame["metric"], frame["unit"], strict=True))  # each metric by its name, a share in %
    name = names.metric_name
    assert units[name("est_days_to_train_10T_tokens_1k_gpus")] == "days"
    assert units[name("time_to_train_s")] == "s"
    assert units[name("relative_throughput")] == "x" and units[name("scaling_efficiency")] == "%"
    assert units["MFU"] == "%" and units["model TFLOP/s/device"] == "TFLOP/s/device"
    unchecked = frame[frame["verdict"] == "unchecked"]
    assert (unchecked["reason"] != "—").all()


def test_audit_page_filters_the_new_kinds_by_verdict(seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page("audit", "v=inconsistent")
    assert not at.exception, at.exception
    frame = at.dataframe[0].value
    assert set(frame["verdict"]) == {"inconsistent"}
    assert names.metric_name("time_to_train_s") in set(frame["metric"])


def test_audit_page_links_each_verdicts_inputs_to_their_sources_rows(
        seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page("audit", "v=consistent")
    assert not at.exception, at.exception
    frame = at.dataframe[0].value
    linked = [v for v in frame["input_source"] if isinstance(v, str) and v.startswith("/sources?src=")]
    assert len(linked) == len(frame) and all(str(i).startswith("result ") for i in frame["inputs"])
