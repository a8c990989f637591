"""Every internal link is built from a page's typed state, so it opens exactly that state with nothing ignored."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from perfledger import views
from perfledger.views import links, registry


def _opens(href: str) -> Any:
    parts = urlsplit(href)
    return views.state_from_query(parts.path.lstrip("/"), parse_qsl(parts.query, keep_blank_values=True))


@pytest.mark.parametrize("headline", [*links.HEADLINES, *links.TIME_TO_TRAIN_PRESETS], ids=lambda h: h.title)
def test_headline_and_preset_links_open_their_state_with_nothing_ignored(headline: links.Headline) -> None:
    opened = _opens(headline.link.href)
    assert opened == headline.state and opened.problems == ()


def test_headline_links_keep_the_urls_people_have_bookmarked() -> None:
    assert [h.link.href for h in links.HEADLINES] == [
        "/speedups", "/speedups?p=fsdp", "/speedups?p=rlhf", "/accelerators?n=mfu", "/scaling?m=gpt2-xl&c=stored",
        "/time-to-train", "/time-to-train?m=llama2-70b&tok=1000000000&a=h200&n=8&mode=measured&usd=4", "/audit",
    ]


@pytest.mark.parametrize("source_id", ["nv_blog_nemo_h200_2023", "a; b", "50% & more?", "<img src=x>"])
def test_a_source_link_opens_that_source_whatever_its_id_holds(source_id: str) -> None:
    link = links.source(source_id)
    assert link.page.slug == "sources" and link.query == {"src": source_id}
    assert _opens(link.href) == views.SourcesView(source=source_id)


def test_a_run_link_opens_the_run_and_a_default_view_has_no_query() -> None:
    assert links.run(42).href == "/runs?run=42" and _opens(links.run(42).href) == views.RunsView(run=42)
    assert [links.to(p.state()).href for p in registry.PAGES] == [f"/{p.slug}" for p in registry.PAGES]
    assert views.link("speedups", preset="fsdp") == "/speedups?p=fsdp"
