"""Each page's view state survives the URL; malformed values fall back to defaults with a sentence."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, get_type_hints
from urllib.parse import parse_qsl

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from perfledger import urlstate, views
from perfledger.views import registry

_TEXT = hs.text(alphabet=hs.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
_ITEM = hs.text(alphabet=hs.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters=","), min_size=1, max_size=10)


def _strategy(f: Any, typ: Any) -> hs.SearchStrategy[Any]:
    choices, low, high = f.metadata.get("choices"), f.metadata.get("low"), f.metadata.get("high")
    if typ == tuple[str, ...]:
        return hs.lists(hs.sampled_from(choices) if choices else _ITEM, max_size=4).map(tuple)
    if choices:
        return hs.sampled_from(choices)
    if typ is bool:
        return hs.booleans()
    if typ is int:
        return hs.integers(int(low) if low is not None else -10**9, int(high) if high is not None else 10**9)
    if typ is float:
        return hs.floats(low if low is not None else -1e12, high if high is not None else 1e15, allow_nan=False, allow_infinity=False)
    return _TEXT


def states(cls: type) -> hs.SearchStrategy[Any]:
    hints = get_type_hints(cls)
    kwargs = {f.name: _strategy(f, hints[f.name]) for f in fields(cls) if f.metadata.get("key")}
    return hs.builds(cls, **kwargs)


@pytest.mark.parametrize("slug", registry.slugs())
def test_view_state_survives_the_url(slug: str) -> None:
    cls = registry.page(slug).state

    @settings(max_examples=60, deadline=None)
    @given(states(cls))
    def round_trip(state: Any) -> None:
        assert urlstate.from_query(cls, state.to_query() if hasattr(state, "to_query") else urlstate.to_query(state)) == state
        qs = urlstate.query_string(state)
        back = urlstate.from_query(cls, parse_qsl(qs, keep_blank_values=True))
        assert back == state and back.problems == ()

    round_trip()


@pytest.mark.parametrize("slug", registry.slugs())
def test_default_state_has_an_empty_query(slug: str) -> None:
    assert urlstate.to_query(registry.page(slug).state()) == {}


def test_malformed_values_become_defaults_with_a_sentence() -> None:
    state = views.state_from_query("accelerators", {"n": "per-banana", "usd": "cheap", "zz": "1"})
    assert state == views.AcceleratorView()
    assert any("n='per-banana'" in p for p in state.problems)
    assert any("usd='cheap' should be a number" in p for p in state.problems)
    assert any("zz" in p for p in state.problems)
