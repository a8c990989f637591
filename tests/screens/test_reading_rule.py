"""Every page reads by one rule (perfledger.numbers, perfledger.names), walked page by page through the real app on a
seeded store with runs and MLPerf results ingested: no internal name on any surface (headings, notes, metrics, table
headers and cells, chart titles, axes, legends and tooltips); every derived figure in a table or a headline at the
rule's precision (`%,g` of a value rounded to 6 significant digits, the stored ones as stored, each column saying
which); one unit per metric: a share (MFU, HFU, scaling efficiency, a relative difference) in %, never "fraction"."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from ingest import pipeline
from perfledger import numbers, schema
from perfledger.views.registry import PAGES
from perfledger.vocabulary import Metric

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
RUN_LOGS = ("gcp_a4_b200_qwen2_5_32b_16gpu_nemo2504.log",  # MFU computed, the log's own TFLOP/s printed
            "bigscience_meg_gpt2_perf_n16_v100.out", "nvidia_eos_n64_h100_gpt3_nemo_v4.0_result_0.txt",
            "habana_gaudi2x8_llama2_70b_lora_v4.0_result_0.txt")
VIEWS = {  # each page's default view and the views with shares, stored figures, run charts and overlays
    "overview": ["", "by=metric"],
    "speedups": ["", "p=fsdp", "p=rlhf"],
    "accelerators": ["", "n=mfu", "s=head&acc=h100-sxm,a100-80gb", "s=catalog"],
    "scaling": ["", "c=stored", "s=sensitivity"],
    "time-to-train": ["", "m=llama2-70b&tok=1e9&a=h200&n=8&mode=measured&usd=4"],
    "runs": ["", "run={mfu}", "run={mlperf}", "run={mfu}&vs={other}", "run=999"],
    "campaigns": [""],
    "history": ["", "y=mfu", "y=step_time_s"],
    "audit": [""],
    "mlperf": [""],
    "sources": ["", "src=nv_blog_nemo_h200_2023", "result=34"],
}
# Names that are the store's, not a reader's: every stored column and metric id of more than one word, and the run
# record's blocks (config.*, summary.*).
INTERNAL = sorted({c.name for t in schema.metadata.tables.values() for c in t.columns if "_" in c.name}
                  | {m.value for m in Metric if "_" in m.value} | {"format_meta", "tflops_per_device"}, key=len,
                  reverse=True)
_INTERNAL_IN_TEXT = re.compile(r"(?<![A-Za-z0-9_.])(" + "|".join(map(re.escape, INTERNAL)) + r"|config\.\w+|summary\.\w+)"
                               r"(?![A-Za-z0-9_])")
SHARES = re.compile(r"\b(MFU|HFU|scaling efficiency)\b")
TEXT_KINDS = ("markdown", "caption", "subheader", "title", "header", "info", "warning", "error", "success", "text")


@pytest.fixture()
def runs(seeded_engine: Engine) -> dict[str, int]:
    ids = [pipeline.ingest_path(seeded_engine, LOGS / name).run_id for name in RUN_LOGS]
    return {"mfu": ids[0], "other": ids[1], "mlperf": ids[2]}


def _texts(at: AppTest) -> Iterator[tuple[str, str]]:
    for kind in TEXT_KINDS:
        for element in getattr(at, kind):
            yield kind, str(element.value).replace("\\", "")
    for metric in at.metric:
        yield "metric", f"{metric.label}: {metric.value}"
    for box in [*at.selectbox, *at.multiselect, *at.radio]:
        yield "choice", f"{box.label}: " + " | ".join(map(str, box.options))
    for box in at.expander:
        yield "fold", str(box.label).replace("\\", "")


def _tables(at: AppTest) -> Iterator[tuple[pd.DataFrame, dict[str, Any]]]:
    for frame in at.dataframe:
        yield frame.value, json.loads(frame.proto.columns or "{}")


def _charts(at: AppTest) -> Iterator[dict[str, Any]]:
    for element in at.get("vega_lite_chart"):
        yield json.loads(element.proto.spec)


def _chart_words(spec: dict[str, Any]) -> Iterator[str]:
    """Every title, axis title, legend title and tooltip title a chart shows, and its text marks' words."""
    title = spec.get("title")
    yield json.dumps(title) if title else ""
    for layer in [spec, *spec.get("layer", [])]:
        for channel in layer.get("encoding", {}).values():
            for enc in channel if isinstance(channel, list) else [channel]:
                if isinstance(enc, dict):
                    yield str(enc.get("title") or enc.get("field") or "")
                    legend = enc.get("legend")
                    yield str(legend.get("title", "")) if isinstance(legend, dict) else ""


def _label(column: str, config: dict[str, Any]) -> str:
    return str(config.get(column, {}).get("label") or column)


def _problems(at: AppTest) -> Iterator[str]:
    for kind, text in _texts(at):
        yield from (f"{kind}: internal name {m.group(0)!r} in {text[:120]!r}" for m in _INTERNAL_IN_TEXT.finditer(text))
        yield from (f"{kind}: {n} has more digits than the rule allows in {text[:120]!r}" for n in numbers.numbers_in(text)
                    if kind == "metric" and not numbers.within_rule(float(n.replace(",", ""))))
        if "fraction)" in text or (kind == "metric" and SHARES.search(text.split(":")[0]) and not text.endswith(("%", "—"))):
            yield f"{kind}: a share not in % in {text[:120]!r}"
    for frame, config in _tables(at):
        for column in frame.columns:
            label = _label(column, config)
            if "_" in label or _INTERNAL_IN_TEXT.search(label):
                yield f"table header {label!r} is an internal name"
            if SHARES.search(label) and "(%)" not in label:
                yield f"table header {label!r} names a share without its unit, %"
            cells = frame[column].dropna()
            if column in ("metric", "figure", "key", "field", "series"):
                yield from (f"cell {v!r} of {label!r} is an internal name" for v in cells.astype(str)
                            if _INTERNAL_IN_TEXT.search(v))
            if column in ("unit", "normalized unit"):
                yield from (f"a share in {v!r} under {label!r}" for v in cells.astype(str) if "fraction" in v)
            if pd.api.types.is_float_dtype(frame[column]):
                yield from _float_problems(label, cells, config.get(column, {}))

    for spec in _charts(at):
        for words in _chart_words(spec):
            yield from (f"chart: internal name {m.group(0)!r} in {words[:120]!r}" for m in _INTERNAL_IN_TEXT.finditer(words))
            if "fraction" in words:
                yield f"chart: a share not in % in {words[:120]!r}"


def _is_count(config: dict[str, Any], cells: pd.Series) -> bool:
    """A column of whole numbers printed as counts (pandas reads a whole-number column with empty cells as floats)."""
    return config.get("type_config", {}).get("format") in ("%d", "%,d") and bool((cells % 1 == 0).all())


def _float_problems(label: str, cells: pd.Series, config: dict[str, Any]) -> Iterator[str]:
    """A float column prints the shortest text of its values (`%,g`) and says whether they are stored or derived;
    a derived one's values are at the rule's precision."""
    if _is_count(config, cells):
        return
    if config.get("type_config", {}).get("format") != numbers.GRID_FORMAT:
        yield f"column {label!r} prints its floats as {config.get('type_config', {}).get('format')!r}"
    if config.get("help") == numbers.STORED_HELP:
        return
    if config.get("help") != numbers.DERIVED_HELP:
        yield f"column {label!r} does not say whether it holds stored or derived figures"
    yield from (f"{v!r} in {label!r} has more digits than the rule allows" for v in cells.tolist()
                if not numbers.within_rule(float(v)))


def test_every_page_is_walked() -> None:
    assert set(VIEWS) == {p.slug for p in PAGES}


@pytest.mark.parametrize("slug", list(VIEWS))
def test_every_page_reads_by_one_rule(slug: str, runs: dict[str, int], open_page: Callable[..., AppTest]) -> None:
    found = []
    for query in VIEWS[slug]:
        at = open_page(slug, query.format(**runs))
        assert not at.exception, (query, at.exception)
        found += [f"{slug}?{query.format(**runs)}: {problem}" for problem in dict.fromkeys(_problems(at))]
    assert not found, "\n".join(found)
