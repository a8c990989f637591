"""The Audit page lists every claim kind with its unit, convention, relation and reason, and what imports could not
read yet."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from ingest.pipeline import ingest_bytes
from perfledger import names

TPU_TABLE = Path(__file__).parents[1] / "fixtures" / "claims" / "tpu_recipes_ironwood.csv"


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


def test_the_audit_page_lists_what_imports_could_not_read_with_the_command_that_answers_it(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    ingest_bytes(seeded_engine, TPU_TABLE.read_bytes(), TPU_TABLE.name)  # Ironwood TPU, gemma4-*, an "N/A" cell
    at = open_page("audit")
    assert not at.exception, at.exception
    assert any(h.value.startswith("To resolve (") for h in at.subheader)
    queue = at.dataframe[1].value
    ironwood = queue[queue["printed"] == "Ironwood TPU"].iloc[0]
    assert (ironwood["field"], ironwood["rows"], ironwood["suggestion"]) == ("accelerator", 66, "tpu-v7")
    assert ironwood["command"] == "python -m perfledger resolve set accelerator 'Ironwood TPU' tpu-v7"
    assert set(queue[queue["field"] == "value"]["printed"]) == {"N/A"}
    audit = at.dataframe[0].value
    relations = audit[audit["source_id"].str.contains("tpu_recipes_ironwood_training")]["relation"]
    assert relations.str.startswith("tokens_per_s_per_device = global_batch x seq_len").sum() == 21
