"""Every page in the registry renders without an exception, on an empty store and on the seeded store."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from streamlit.testing.v1 import AppTest

from perfledger.views.registry import PAGES


@pytest.mark.parametrize("slug", [p.slug for p in PAGES])
def test_page_renders_on_empty_store_with_next_step(slug: str, empty_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page(slug)
    assert not at.exception, at.exception
    assert any("perfledger init" in i.value for i in at.info) or slug == "runs"


@pytest.mark.parametrize("slug", [p.slug for p in PAGES])
def test_page_renders_on_seeded_store(slug: str, seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page(slug)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("slug", [p.slug for p in PAGES])
def test_malformed_link_gives_friendly_message_and_default_view(slug: str, seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page(slug, {"n": "lots", "zzz": "1", "m": "", "p": "nope", "run": "x", "tok": "-"})
    assert not at.exception, at.exception
    assert any("Ignored unknown" in i.value or "instead" in i.value for i in at.info)
