"""No page prints Python's None: every text a page renders (headings, notes, warnings, metrics, labels, options,
table cells) is scanned for it, on views that show unstated fields (a claim with no device count, a run with no
model)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from ingest import pipeline
from perfledger.views.registry import PAGES

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
# "None" right after "as printed: " is a source's own word, kept as printed (torchtitan's float8 column says None
# for its bfloat16 runs), not Python's None
NONE = re.compile(r"(?<!as printed: )\bNone\b")
VIEWS = {  # each page's default view, and views whose rows leave fields unstated
    "overview": ["", "by=framework"],
    "speedups": ["", "p=rlhf", "p=fsdp"],
    "accelerators": ["", "m=gpt3-175b&mt=model_tflops_per_device&n=mfu", "s=head&acc=h100-sxm,a100-80gb", "s=catalog"],
    "scaling": ["", "s=sensitivity"],
    "time-to-train": ["", "m=llama2-70b&a=h200&n=8&mode=measured"],
    "runs": ["", "run=1"],
    "campaigns": [""],
    "history": ["", "y=mfu"],
    "mlperf": [""],
    "audit": [""],
    "sources": ["", "src=nv_blog_nemo_h200_2023"],
}


def _texts(at: AppTest) -> Iterator[str]:
    for kind in ("markdown", "caption", "subheader", "title", "header", "info", "warning", "error", "success", "text"):
        for element in getattr(at, kind):
            yield str(element.value)
    for metric in at.metric:
        yield f"{metric.label} {metric.value} {metric.proto.body}"
    for box in [*at.selectbox, *at.multiselect, *at.radio]:
        yield f"{box.label} " + " ".join(map(str, box.options))
    for frame in at.dataframe:
        cells = frame.value.astype(object)
        yield cells.where(cells.notna(), "").astype(str).to_csv(index=False)  # an empty cell is drawn as "—"


@pytest.fixture()
def with_a_run(seeded_engine: Engine) -> Engine:
    pipeline.ingest_path(seeded_engine, LOGS / "bigscience_meg_gpt2_perf_n16_v100.out")
    return seeded_engine


def test_every_page_is_scanned() -> None:
    assert set(VIEWS) == {p.slug for p in PAGES}


@pytest.mark.parametrize("slug", list(VIEWS))
def test_no_page_prints_python_none(slug: str, with_a_run: Engine, open_page: Callable[..., AppTest]) -> None:
    found = []
    for query in VIEWS[slug]:
        at = open_page(slug, query)
        assert not at.exception, at.exception
        found += [f"{query!r}: …{text[max(0, m.start() - 60):m.end() + 20]}…" for text in _texts(at)
                  for m in NONE.finditer(text)]
    assert not found, "\n".join(found)
