"""A file that holds several runs (launches concatenated into one log, or runs pasted one after another into one
document) is summarised over one of them, the longest, and says which (its lines) and how many there were: the
steps of the runs are never pooled into one figure. Built from real logs of tests/fixtures (PROVENANCE.md) put
one after the other, none of them the held-out document with nine runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ingest.pipeline import ingest_bytes
from perfledger import store
from tests.conftest import ROOT
from tests.ingest.parsers.helpers import stored_step_time

UNSEEN = ROOT / "tests" / "fixtures" / "unseen"
LOGS = ROOT / "tests" / "fixtures" / "logs"
SHORTER = UNSEEN / "llamafactory_qwen2.5_7b_medical_trainer_log.jsonl"  # 675 records, 3.2 s a step
LONGER = UNSEEN / "llamafactory_mistral7b_translator_trainer_log.jsonl"  # 866 records, 2.4 s a step
NANOGPT = LOGS / "chenzihua_nanogpt_shakespeare_char_termux_nan.log"  # iter 0-450, every 5th
MINGPT = UNSEEN / "mingpt_chargpt_english_cpu_console.md"  # iter 0-1270, every 2nd, in a markdown fence


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def _warning(engine: Engine, raw: bytes, name: str) -> str:
    outcome = ingest_bytes(engine, raw, name)
    assert outcome.run_id is not None
    run = store.run(engine, outcome.run_id)
    assert run is not None
    return next(w for w in run.warnings if w.startswith("several runs in one file:"))


def test_concatenated_launches_store_the_longest_launchs_figure_not_the_pooled_one(empty_engine: Engine) -> None:
    both = SHORTER.read_bytes() + LONGER.read_bytes()
    alone = stored_step_time(empty_engine, LONGER.read_bytes(), LONGER.name)
    assert stored_step_time(empty_engine, both, "trainer_log.jsonl") == alone == pytest.approx(2.4)


def test_the_longest_launch_is_chosen_wherever_it_stands_in_the_file(empty_engine: Engine) -> None:
    both = LONGER.read_bytes() + SHORTER.read_bytes()
    assert stored_step_time(empty_engine, both, "trainer_log.jsonl") == pytest.approx(2.4)


def test_the_warning_names_the_launch_chosen_its_lines_and_how_many_there_were(empty_engine: Engine) -> None:
    first = _lines(SHORTER)
    said = _warning(empty_engine, SHORTER.read_bytes() + LONGER.read_bytes(), "trainer_log.jsonl")
    assert "2 launches" in said
    # each file's last line is no training record (its end-of-run line)
    assert f"launch 1, lines 1-{first - 1}, steps 10-6750 (675 rows)" in said
    assert f"the figures are launch 2 (lines {first + 1}-{first + _lines(LONGER) - 1}) alone" in said


def test_every_launchs_steps_are_stored_numbered_by_launch(empty_engine: Engine) -> None:
    outcome = ingest_bytes(empty_engine, SHORTER.read_bytes() + LONGER.read_bytes(), "trainer_log.jsonl")
    assert outcome.run_id is not None
    steps = store.steps(empty_engine, outcome.run_id)
    assert steps.group_by(steps["launch"].fill_null(1)).len().sort("launch").rows() == [(1, 675), (2, 866)]


_MINGPT_LINE = re.compile(r"^iter_dt ([\d.]+)ms; iter (\d+): train loss ([\d.]+)$", re.MULTILINE)


def _document() -> tuple[bytes, int]:
    """A page pasting two runs' consoles, each in its own fence: nanoGPT's as printed, then minGPT's with its lines
    respelled in nanoGPT's words (`iter 2: loss 2.83026, time 2490.17ms`, the same figures), as one framework's
    runs are; and the line of the second fence's first line."""
    head = "# Two runs\n\n## On a phone\n\n```\n"
    middle = "```\n\n## On a CPU\n\n"
    second = _MINGPT_LINE.sub(r"iter \2: loss \3, time \1ms", MINGPT.read_text())
    page = head + NANOGPT.read_text() + middle + second
    return page.encode(), (head + NANOGPT.read_text() + middle).count("\n") + 1


def test_runs_pasted_into_one_document_are_summarised_over_one_of_them(empty_engine: Engine) -> None:
    page, _ = _document()
    alone = stored_step_time(empty_engine, MINGPT.read_bytes(), MINGPT.name)
    assert stored_step_time(empty_engine, page, "two_runs.md") == alone


def test_a_documents_runs_are_named_by_the_documents_own_lines(empty_engine: Engine) -> None:
    page, second = _document()
    said = _warning(empty_engine, page, "two_runs.md")
    first_iter = next(i for i, line in enumerate(page.decode().split("\n"), start=1)
                      if i > second and line.startswith("iter "))
    assert "2 launches" in said and f"the figures are launch 2 (lines {first_iter}-" in said
