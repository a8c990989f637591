"""No URL makes a page show a traceback: every page, every URL key from its state, every hostile value.

One AppTest per page is opened and the URL changed between runs, as a pasted link changes it (the page resets its
widgets when the URL changes from outside). Text from the URL is shown escaped: no link or image is drawn from it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from ingest import pipeline
from perfledger import urlstate
from perfledger.views.registry import PAGES
from tests.views.test_hostile_values import HOSTILE

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
LINK, IMAGE = "[x](http://evil/phish)", "![q](http://host/b.png)"
WORD_JOINER = "\u2060"  # screens/_ui.plain puts one inside a bare URL, so that the renderer does not make it a link
BARE = ("https://evil.example/login", "www.evil.example", "ceo@evil.example", "HTTPS://EVIL.EXAMPLE")
# Streamlit's Markdown renderer (remark-gfm) makes a link of these in any text, backslash-escaped or not
AUTOLINKED = re.compile(r"(?i)https?://|www\.|[-.+\w]@[-\w]")


@pytest.fixture()
def with_a_run(seeded_engine: Engine) -> Engine:
    pipeline.ingest_path(seeded_engine, LOGS / "bigscience_meg_gpt2_perf_n16_v100.out")
    return seeded_engine


def _markdown_of(at: AppTest) -> Iterator[str]:
    """Every text a Markdown-rendering element of the page got (bodies, labels), as sent to the browser."""
    for kind in ("markdown", "caption", "subheader", "title", "header", "info", "warning", "error", "success"):
        for element in getattr(at, kind):
            yield str(element.value)
    for element in at.get("page_link"):
        yield str(element.proto.label)


def _hostile_queries(keys: list[str]) -> Iterator[dict[str, str]]:
    """Every hostile value in every key at once, then each key alone with one value, in turn.

    tests/views/test_hostile_values.py reads every key with every value; here the page renders them, and
    rendering all 14 values in every key alone (644 page runs) took minutes on two cores.
    """
    for raw in HOSTILE:
        yield dict.fromkeys(keys, raw)
    for i, key in enumerate(keys):
        for raw in HOSTILE[i % SHARE::SHARE]:
            yield {key: raw, **({"run": "1"} if key in ("vs", "w0", "w1", "wf") else {})}


SHARE = len(HOSTILE)


@pytest.mark.parametrize("slug", [p.slug for p in PAGES])
def test_every_hostile_value_of_every_url_key_renders_without_a_traceback(
        slug: str, with_a_run: Engine, open_page: Callable[..., AppTest]) -> None:
    page = next(p for p in PAGES if p.slug == slug)
    at = open_page(slug)
    failures = []
    for query in _hostile_queries(list(urlstate.url_keys(page.state).values())):
        at.query_params.clear()
        at.query_params.update(query)
        at.run()
        if at.exception:
            failures.append(f"{query!r:.80}: {at.exception[0].value[:200]}")
        if any("](http" in text for text in _markdown_of(at)):
            failures.append(f"{query!r:.80}: a Markdown link reached the page unescaped")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(("slug", "query"), [
    ("sources", {"k": "foo"}),
    ("runs", {"run": "99999999999999999999999"}),
    ("time-to-train", {"tok": "99999999999999999999999"}),
])
def test_the_reported_tracebacks_are_a_notice_naming_key_and_value(
        slug: str, query: dict[str, str], with_a_run: Engine, open_page: Callable[..., AppTest]) -> None:
    at = open_page(slug, query)
    assert not at.exception, at.exception
    ((key, value),) = query.items()
    assert any(f"{key}={value[:urlstate.QUOTE_CHARS]!r}" in i.value.replace("\\", "") for i in at.info)


def test_a_run_with_no_steps_shows_its_page_without_a_traceback(
        with_a_run: Engine, open_page: Callable[..., AppTest]) -> None:
    with with_a_run.begin() as conn:
        conn.execute(sa.text("DELETE FROM step WHERE run_id = 1"))
    at = open_page("runs", {"run": "1"})
    assert not at.exception, at.exception


@pytest.mark.parametrize(("slug", "key"), [("scaling", "m"), ("overview", "by"), ("sources", "src"),
                                           ("time-to-train", "m"), ("speedups", "bf")])
def test_markdown_in_a_url_value_is_shown_as_the_characters_typed(
        slug: str, key: str, seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    for raw in (LINK, IMAGE):
        at = open_page(slug, {key: raw, **({"p": "custom"} if slug == "speedups" else {})})
        assert not at.exception, at.exception
        texts = list(_markdown_of(at))
        assert not any("](http" in t for t in texts), [t for t in texts if "](http" in t]
        assert any(r"\]\(http\:\/\/" in t.replace(WORD_JOINER, "") for t in texts), texts  # on screen, escaped


def test_a_markdown_image_in_a_source_title_is_text_and_only_http_urls_are_links(
        seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    with seeded_engine.begin() as conn:
        source = conn.execute(sa.text("SELECT id FROM source ORDER BY id LIMIT 1")).scalar_one()
        conn.execute(sa.text("UPDATE source SET title = :t, url = :u WHERE id = :s"),
                     {"t": IMAGE, "u": "javascript:alert(1)", "s": source})
    at = open_page("sources", {"src": source})
    assert not at.exception, at.exception
    texts = list(_markdown_of(at))
    assert not any("](http" in t or "](javascript" in t for t in texts), texts
    assert any(r"\!\[q\]" in t for t in texts)


@pytest.mark.parametrize(("slug", "key"), [("speedups", "m"), ("speedups", "bf"), ("scaling", "a"), ("overview", "by"),
                                           ("time-to-train", "a"), ("accelerators", "m"), ("sources", "src"),
                                           ("audit", "m")])
def test_a_bare_url_in_a_url_value_reaches_no_markdown_text_as_a_link(
        slug: str, key: str, seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    for raw in BARE:
        at = open_page(slug, {key: raw, **({"p": "custom"} if slug == "speedups" else {})})
        assert not at.exception, at.exception
        shown = [t.replace("\\", "") for t in _markdown_of(at)]
        assert any(raw in t.replace(WORD_JOINER, "") for t in shown), (raw, shown)  # said, as typed
        assert not any(AUTOLINKED.search(t) for t in shown), [t for t in shown if AUTOLINKED.search(t)]


@pytest.mark.parametrize(("slug", "query", "notice"), [
    ("speedups", {"p": "custom", "m": "llama9-1t"}, "m='llama9-1t' is not a model id in the catalog"),
    ("speedups", {"p": "custom", "ca": "h900"}, "ca='h900' is not an accelerator id in the catalog"),
    ("accelerators", {"m": "llama9-1t"}, "m='llama9-1t' is not a model id in the catalog"),
    ("accelerators", {"s": "head", "acc": "a100-80gb,h900"}, "acc='h900' is not an accelerator id in the catalog"),
    ("scaling", {"a": "h900"}, "a='h900' is not an accelerator id in the catalog"),
    ("time-to-train", {"m": "llama9-1t"}, "m='llama9-1t' is not a model id in the catalog"),
    ("audit", {"m": "llama2-7b,llama9-1t"}, "m='llama9-1t' is not a model id in the catalog"),
])
def test_an_unknown_catalog_id_in_a_url_gets_a_notice(slug: str, query: dict[str, str], notice: str,
                                                      seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page(slug, query)
    assert not at.exception, at.exception
    assert any(notice in w.value.replace("\\", "") for w in at.warning), [w.value for w in at.warning]


def test_a_known_id_gets_no_notice(seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page("speedups", {"p": "custom", "m": "llama2-7b", "ca": "h100-sxm"})
    assert not [w for w in at.warning if "in the catalog" in w.value]


@pytest.mark.parametrize(("slug", "query", "bounds"), [
    ("time-to-train", {"n": "99999999999999999999"},
     "n='99999999999999999999' should be a whole number from 1 to 1,000,000"),
    ("time-to-train", {"n": "2000000"}, "n='2000000' should be at most 1,000,000"),
    ("runs", {"run": "99999999999999999999999"}, "should be a whole number from 0 to 2,147,483,647"),
])
def test_a_value_out_of_range_is_told_with_the_keys_own_bounds(
        slug: str, query: dict[str, str], bounds: str, seeded_url: str, open_page: Callable[..., AppTest]) -> None:
    at = open_page(slug, query)
    assert not at.exception, at.exception
    notices = [i.value.replace("\\", "") for i in at.info]
    assert any(bounds in n for n in notices), notices
    assert not any("9,007,199,254,740,991" in n or "9007199254740991" in n for n in notices)
