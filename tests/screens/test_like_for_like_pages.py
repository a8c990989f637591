"""The comparing pages render their like-for-like controls and sections from the URL."""

from __future__ import annotations

from collections.abc import Callable

from streamlit.testing.v1 import AppTest


def test_accelerators_catalog_and_head_to_head_render(open_page: Callable[..., AppTest], seeded_url: str) -> None:
    catalog = open_page("accelerators", {"s": "catalog"})
    assert not catalog.exception, catalog.exception
    shown = catalog.dataframe[0].value
    assert {"gaudi2", "cs-2", "sn30", "mi250", "bow-ipu", "a800-80gb"} <= set(shown["accelerator"])
    head = open_page("accelerators", {"s": "head"})
    assert not head.exception, head.exception
    assert any("median 4.00x" in m.value.replace("\\", "") for m in head.markdown)  # as shown: escapes dropped


def test_asking_for_every_workload_shows_the_caveat(open_page: Callable[..., AppTest], seeded_url: str) -> None:
    for slug in ("accelerators", "scaling"):
        at = open_page(slug, {"w": "all"})
        assert not at.exception, at.exception
        assert any("workloads mixed on request" in w.value.lower() for w in at.warning), slug


def test_time_to_train_reads_tokens_as_300b(open_page: Callable[..., AppTest], seeded_url: str) -> None:
    at = open_page("time-to-train")
    box = at.text_input(key="tt_tok")
    assert box.value == "300B"
    box.input("1.2T").run()
    assert not at.exception and not at.error
    assert at.query_params.get("tok") in (["1200000000000"], "1200000000000")


def test_accelerators_asks_for_a_price_only_when_normalizing_per_dollar(open_page: Callable[..., AppTest],
                                                                        seeded_url: str) -> None:
    device = open_page("accelerators")
    assert not device.exception, device.exception
    assert not [w for w in device.number_input if w.label == "$ per device-hour"]
    dollar = open_page("accelerators", {"n": "dollar", "usd": "3.5"})
    assert not dollar.exception, dollar.exception
    assert dollar.number_input(key="ac_usd").value == 3.5
    assert any("$3.5 per device-hour" in c.value for c in dollar.caption)
    dollar.selectbox(key="ac_n").set_value("device").run()
    assert not dollar.exception and not [w for w in dollar.number_input if w.label == "$ per device-hour"]
