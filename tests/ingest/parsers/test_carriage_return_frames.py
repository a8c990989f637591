"""Progress-bar frames a terminal capture runs together with carriage returns make one line past the parsers'
line limit; a reader that reads each frame on its own keeps every frame within the limit instead of dropping the
line. The real NeMo 2 log with its bar lines run together (each refreshed as tqdm does) reads the same steps."""

from __future__ import annotations

import pytest

from ingest.parsers.base import MAX_PARSED_LINE_CHARS
from ingest.pipeline import preview
from tests.conftest import LOGS

NAME = "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log"


def run_together(text: str, refreshes: int) -> str:
    """Every `Epoch 0:` bar line joined to the one before by a carriage return, its bar refreshed `refreshes` times
    before it (the DLL record glued to a frame's end printed once, as NeMo prints it)."""
    out: list[str] = []
    for line in text.split("\n"):
        frames = "\r".join([line.split("DLL ")[0]] * refreshes + [line])
        if line.startswith("Epoch 0:") and out and out[-1].startswith("Epoch 0:"):
            out[-1] += "\r" + frames
        else:
            out.append(frames if line.startswith("Epoch 0:") else line)
    return "\n".join(out)


def test_bar_frames_run_together_past_the_line_limit_read_as_the_frames_one_per_line() -> None:
    text = (LOGS / NAME).read_text(encoding="utf-8")
    glued = run_together(text, refreshes=250)
    assert max(map(len, glued.split("\n"))) > MAX_PARSED_LINE_CHARS
    plain, together = preview(text.encode(), NAME), preview(glued.encode(), NAME)
    assert together.summary.steady_state_json()["step_time_s_median"] == pytest.approx(
        plain.summary.steady_state_json()["step_time_s_median"], rel=1e-9)
    assert together.steps == plain.steps > 0
    assert not any("characters" in p.reason for p in together.problems)
