"""No cap without saying so: problems past the listed ones are counted by kind, and every output says so."""

from __future__ import annotations

from ingest.parsers.base import MAX_PROBLEMS_KEPT
from ingest.parsers.torchtitan import TorchtitanParser
from ingest.pipeline import prepare, preview
from perfledger.records import more_problems, problem_kind
from screens._preview import problems_caption
from tests.conftest import LOGS

KILLED = LOGS / "gaudi_hpu_megatron_llama1b_8card_settrace_killed.log"
COPIES = 7  # cut copies after each iteration line: 38 lines -> 266 cut lines, more than are listed


def with_cut_lines(path: object = KILLED) -> tuple[bytes, int]:
    """The real log with COPIES copies of each iteration line cut right after 'elapsed time per iteration (ms):'
    (a log cut off mid-line, as a killed job leaves it); how many cut lines."""
    out, cut = [], 0
    for line in KILLED.read_text().splitlines(keepends=True):
        out.append(line)
        if "elapsed time per iteration (ms):" in line:
            out.extend([line[: line.index("(ms):") + 5] + "\n"] * COPIES)
            cut += COPIES
    return "".join(out).encode(), cut


def test_megatron_cut_lines_past_the_listed_ones_are_counted_and_said() -> None:
    raw, cut = with_cut_lines()
    assert cut > MAX_PROBLEMS_KEPT
    base = preview(KILLED.read_bytes(), KILLED.name)
    outcome = preview(raw, KILLED.name)
    assert outcome.skipped_lines == base.skipped_lines + cut
    assert len(outcome.problems) == MAX_PROBLEMS_KEPT
    left = outcome.skipped_lines - MAX_PROBLEMS_KEPT
    assert dict(outcome.problems_left_out) == {"cut line": left}
    assert outcome.as_json()["problems_left_out"] == {"cut line": left}
    assert outcome.as_json()["problems_more"] == f"... and {left:,} more: {left:,} cut line"


def test_every_problem_listed_says_nothing_more() -> None:
    outcome = preview(KILLED.read_bytes(), KILLED.name)
    assert outcome.problems_left_out == {} and outcome.as_json()["problems_more"] is None


def test_problems_left_out_are_counted_by_kind_most_first() -> None:
    parser = TorchtitanParser("t.log")
    for i in range(MAX_PROBLEMS_KEPT + 30):
        parser.problem(i, f"step {10**30 + i} is beyond 64 bits; skipped")
    for i in range(1234):
        parser.problem(i, f"value {i} is not a number", kind="not a number")
    assert len(parser.problems) == MAX_PROBLEMS_KEPT and parser.skipped_lines == MAX_PROBLEMS_KEPT + 1264
    assert parser.left_out == {"not a number": 1234, "step N is beyond N bits": 30}
    assert more_problems(parser.left_out) == "... and 1,264 more: 1,234 not a number, 30 step N is beyond N bits"
    assert more_problems({}) is None
    assert problem_kind("line of 70,000 characters (over 65,536) skipped") == "line of N characters (over N) skipped"


def test_the_upload_preview_says_how_many_problems_it_does_not_list() -> None:
    raw, _ = with_cut_lines()
    with prepare(raw, KILLED.name) as run:
        left = sum(run.problems_left_out.values())
        assert left > 0
        assert problems_caption(run) == f"200 line problems listed ... and {left:,} more: {left:,} cut line"
