"""Measured mode estimates only from a stored row of the chosen model and accelerator: result 15 (Llama 2 70B on
H200) gave GPT-3 175B on A800 "1.8 days ... measured 1880 tokens/s/device (result 15)"."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from perfledger import views
from perfledger.errors import InvalidQuery
from perfledger.views.time_to_train import TimeToTrainView

FOREIGN = "m=gpt3-175b&a=a800-80gb&n=1024&mode=measured&r=15"


def _texts(at: AppTest) -> str:
    return "\n".join(e.value for e in [*at.caption, *at.markdown, *at.warning, *at.error, *at.info]).replace("\\", "")


def test_a_row_of_another_model_in_the_url_is_refused_with_a_notice(
        seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page("time-to-train", FOREIGN)
    assert not at.exception
    assert any("result 15 is tokens_per_s_per_device of llama2-70b on h200" in w.value.replace("\\", "").lower()
               for w in at.warning), [w.value for w in at.warning]
    assert "1,880" not in _texts(at) and "1880" not in _texts(at)
    assert not [m for m in at.metric if m.label == "Time to train"]


def test_the_export_of_a_foreign_row_refuses_it(seeded_engine: Engine) -> None:
    state = TimeToTrainView(model="gpt3-175b", accelerator="a800-80gb", mode="measured", row=15)
    with pytest.raises(InvalidQuery, match="result 15 is .* of llama2-70b on h200"):
        views.table("time-to-train", state, seeded_engine)


def test_measured_mode_offers_the_pairs_rows_and_shows_the_one_used(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    state = TimeToTrainView(model="gpt3-175b", accelerator="h100-sxm", mode="measured")
    stored = views.time_to_train.measured_rows(state, seeded_engine)
    assert stored.height > 1
    last = stored.row(stored.height - 1, named=True)
    at = open_page("time-to-train", f"m=gpt3-175b&a=h100-sxm&mode=measured&r={last['id']}")
    assert not at.exception and not at.warning
    box = next(s for s in at.selectbox if s.label.startswith("Measured row"))
    assert box.options == [views.time_to_train.measured_label(r) for r in stored.iter_rows(named=True)]
    assert box.value == last["id"]
    basis = _texts(at)
    assert f"result {last['id']}:" in basis and f"{last['source_id']}" in basis
    assert next(m for m in at.metric if m.label.startswith("Throughput")).value == f"{last['value']:,.0f}"


def test_measured_mode_offers_only_the_chosen_workloads_rows_and_refuses_another_workloads_row(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    pair = {"model": "llama2-70b", "accelerator": "h100-sxm", "mode": "measured"}
    pretrain = views.time_to_train.measured_rows(TimeToTrainView(**pair), seeded_engine)
    lora = views.time_to_train.measured_rows(TimeToTrainView(**pair, workload="lora_finetune"), seeded_engine)
    assert pretrain.height and lora.height
    assert set(pretrain["workload"]) == {"pretrain"} and set(lora["workload"]) == {"lora_finetune"}
    at = open_page("time-to-train", f"m=llama2-70b&a=h100-sxm&mode=measured&w=lora_finetune&r={pretrain['id'][0]}")
    assert not at.exception
    assert any(f"result {pretrain['id'][0]} is tokens_per_s_per_device of llama2-70b on h100-sxm (pretrain)"
               in w.value.replace("\\", "").lower() for w in at.warning), [w.value for w in at.warning]
    box = next(s for s in at.selectbox if s.label.startswith("Measured row"))
    assert box.options == [views.time_to_train.measured_label(r) for r in lora.iter_rows(named=True)]
    assert all("lora_finetune" in option for option in box.options)


def test_an_estimate_from_a_row_the_audit_warns_about_carries_the_warning(
        seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page("time-to-train", "m=llama2-70b&a=h200&n=8&mode=measured&r=15")
    assert not at.exception
    warnings = [m.value.replace("\\", "") for box in at.expander if box.label.startswith("The audit") for m in box.markdown]
    assert any("llama2-70b on 8 × h200 (nv_blog_nemo_h200_2023; result 15): precision unstated: plausible only in FP8"
               in w for w in warnings), warnings
    assert "measured: result 15:" in _texts(at)
    table = next(df.value for df in at.dataframe if "measured result id" in df.value.columns)
    assert set(table["measured result id"]) == {"/sources?result=15"}  # a permalink to the row used


def test_measured_mode_without_a_row_names_the_choice_on_screen(seeded_url: str,
                                                               open_page: Callable[..., AppTest]) -> None:
    """The error had said "use mode=peak": the page names its own choice."""
    at = open_page("time-to-train", "m=gpt3-175b&a=gaudi3&mode=measured")
    assert [e.value.replace("\\", "") for e in at.error] and "“efficiency × peak” under Throughput from" in \
        at.error[0].value.replace("\\", "")


def test_the_estimate_says_where_it_assumes_linear_scaling(seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page("time-to-train", "m=llama2-70b&a=h200&n=8&mode=measured&r=15")
    assert "At 2, 4, 16 and 32 devices the time assumes linear scaling from the 8 devices measured." in _texts(at)
    table = next(df.value for df in at.dataframe if "scaling" in df.value.columns)
    assert table.set_index("devices")["scaling"].to_dict()[8] == "as measured (8 devices)"


def test_a_row_a_run_measured_is_named_by_its_run_not_as_a_row_with_no_source() -> None:
    row = {"id": 953, "value": 1880.0, "n_devices": 8, "precision": "bf16", "workload": "pretrain", "source_id": None,
           "run_id": 12}
    label = views.time_to_train.measured_label(row)
    assert label.endswith("measured by run 12") and "no source" not in label
