"""A number printed as a quoted string is read as the number, in a printed dict (`'loss': '0'`) and after `:` or
`=` in plain pairs (`loss='2.30'`, `step_time: "0.51"`), and the log's steady step time comes out the same as the
same log printed unquoted."""

from __future__ import annotations

import pytest

from ingest.parsers._console import line_pairs
from ingest.pipeline import preview


@pytest.mark.parametrize(("line", "pairs"), [
    ("{'loss': '0', 'examples_per_second': '7.4064', 'epoch': '0.05'}",
     {"loss": "0", "examples_per_second": "7.4064", "epoch": "0.05"}),
    ("step=10 loss='2.30' step_time='0.51'", {"step": "10", "loss": "2.30", "step_time": "0.51"}),
    ('step: 10, loss: "2.30", step_time: "0.51"', {"step": "10", "loss": "2.30", "step_time": "0.51"}),
])
def test_a_number_printed_as_a_quoted_string_is_read(line: str, pairs: dict[str, str]) -> None:
    assert line_pairs(line) == pairs


def log(quote: str) -> bytes:
    times = [3.2, 0.9, 0.52, 0.51, 0.5, 0.51, 0.52, 0.5, 0.51, 0.5, 0.52, 0.51]
    return "".join(f"step={i + 1} loss={quote}{2.3 - i / 50:.3f}{quote} step_time={quote}{t}{quote}\n"
                   for i, t in enumerate(times)).encode()


def test_a_log_of_quoted_numbers_reads_as_the_same_log_unquoted() -> None:
    plain = preview(log(""), "train.log").summary.steady_state_json()
    quoted = preview(log("'"), "train.log").summary.steady_state_json()
    assert plain["step_time_s_median"] == pytest.approx(0.51)
    assert quoted["step_time_s_median"] == plain["step_time_s_median"]
