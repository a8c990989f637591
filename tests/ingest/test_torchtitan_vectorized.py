"""The vectorized torchtitan parser reads every line as the line-at-a-time oracle does, however it is chunked."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as hs
from polars.testing import assert_frame_equal

from ingest.parsers._common import concat_steps
from ingest.parsers.torchtitan import TorchtitanParser
from ingest.text import clean_text
from tests.conftest import LOGS
from tests.ingest import torchtitan_oracle

FIXTURES = ["qiu023_kimi_436m_attnres_fsdp_rtx5090_ansi.log", "qiu023_vlm_447m_sft_8gpu_fsdp2_pp4_rtx5090_ansi.log",
            "qiu023_vlm_pp4_naive_rtx5070ti_ansi.log"]
# Lines the fixtures lack: a forked step time, a mesh line after steps, a step line with nothing usable,
# a look-alike key ("substep:"), a validation line, numbers with thousands separators, nan and inf.
EXTRA = [
    "[rank0]:[titan] 2025-01-01 - root - INFO - step: 5  loss: 7.1  tps: 12,345  tflops: 101.2  mfu: 10.3%  time: 1.5s",
    "[rank0]:[titan] 2025-01-01 - root - INFO - Building llama3 8B with TransformerModelArgs(dim=4096)",
    "[rank0]:[titan] 2025-01-01 - root - INFO - parallelism: dp_replicate=1 dp_shard=8 cp=1 tp=2 pp=1",
    "[rank0]:[titan] 2025-01-01 - root - INFO - step: 6  memory: 12.3GiB(40.1%)",
    "[rank0]:[titan] 2025-01-01 - root - INFO - substep: 7  loss: 1.0",
    "[rank0]:[titan] 2025-01-01 - root - INFO - validate step: 7  loss: 7.0",
    "[rank0]:[titan] 2025-01-01 - root - INFO - step: 8  loss: nan  grad_norm: inf  tps: 1,2,3  step_time: 2s",
    "[rank0]:[titan] 2025-01-01 - root - INFO - step:9",
    "plain shell output with step: in it",
    # the step is the first `step:` that follows no letter and has a number: fields before it are not read
    "[rank0]:[titan] 2025-01-01 - root - INFO - loss: 9.9 substep: 3 tps: 1 step: 11  loss: 1.5  tps: 2,000",
    "[rank0]:[titan] 2025-01-01 - root - INFO - step: x loss: 9.9 step:12\tloss: 2.5 step: 13 tflops: 3",
    "step: 14  loss: 3.5  lr: 1e-4  grad_norm: 0.5  mfu: 7 %",
]


def lines_of(name: str) -> list[str]:
    return clean_text((LOGS / name).read_text(encoding="utf-8", errors="replace")).split("\n")


Parsed = tuple[Any, ...]  # (steps, problems, config, meta, validation lines, saw step time)


def parse_both(lines: list[str], chunk: int) -> tuple[Parsed, Parsed]:
    ours, oracle = TorchtitanParser("t.log"), torchtitan_oracle.TorchtitanParser("t.log")
    results: list[Parsed] = []
    for parser in (ours, oracle):
        frames = [parser.feed(lines[i:i + chunk], i + 1) for i in range(0, len(lines), chunk)]
        results.append((concat_steps(frames), parser.problems, parser.config, parser.meta, parser.validation_lines,
                        parser.saw_step_time))
    return results[0], results[1]


def assert_same(lines: list[str], chunk: int) -> None:
    (frame, *rest), (oracle_frame, *oracle_rest) = parse_both(lines, chunk)
    assert_frame_equal(frame, oracle_frame)
    assert rest == oracle_rest


def test_every_torchtitan_fixture_reads_as_the_oracle_reads_it() -> None:
    for name in FIXTURES:
        assert_same(lines_of(name), chunk=500)


HEAD = 200  # at most this many lines a case reads: a chunk of one line makes a frame a line (400 lines, 1.3 s a case)


def head_of(name: str) -> list[str]:
    """A fixture's header (its mesh and configuration lines) and its first 40 lines from the first step on."""
    lines = lines_of(name)
    first = next(i for i, line in enumerate(lines) if "step:" in line)
    return lines[:min(first + 40, HEAD)]


@settings(max_examples=40, deadline=None)
@given(hs.sampled_from(FIXTURES), hs.lists(hs.sampled_from(EXTRA), max_size=12), hs.integers(0, HEAD),
       hs.integers(1, HEAD))
def test_extra_lines_anywhere_and_any_chunking_read_as_the_oracle_reads_them(
        name: str, extra: list[str], at: int, chunk: int) -> None:
    lines = head_of(name)
    assert_same(lines[:at] + extra + lines[at:], chunk)



def test_a_step_before_the_mesh_line_has_no_token_count_and_one_after_it_has() -> None:
    timed_step, mesh = EXTRA[0], EXTRA[2]
    lines = [timed_step, mesh, timed_step.replace("step: 5", "step: 6")]
    assert_same(lines, chunk=len(lines))
    tokens = TorchtitanParser("t.log").feed(lines, 1)["tokens"].to_list()
    assert tokens == [None, 12345 * 1.5 * 16]
