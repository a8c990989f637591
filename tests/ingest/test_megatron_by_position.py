"""Megatron fields read by position (label, then the text up to the next "|") equal what their regexes read.

The regexes (megatron._STEP and megatron._FIELDS) are the definition; the by-position reading is only faster.
"""

from __future__ import annotations

import re

import polars as pl
from hypothesis import example, given, settings
from hypothesis import strategies as hs
from polars.testing import assert_series_equal

from ingest.parsers._common import NUM
from ingest.parsers.megatron import fields as mfields
from ingest.parsers.megatron import scan as mscan
from ingest.text import clean_text
from tests.conftest import LOGS

FIXTURES = ["cscs_gh200_llama3_1b_fineweb_10n4g_rankprefix.out", "bigscience_meg_gpt2_perf_n16_v100.out",
            "msft_megatron_ds_gpt3_125m_tokendropping_8gpu.log", "pai_megatron_patch_rocm_mi300_mixtral8x22b_2n8g_notimestamp.log",
            "primus_dsv2_lite_fp8_mi355x_8gpu_ansi.log", "megatron_bridge_llama3_8b_8gpu_cp2_interleaved.txt",
            "gaudi_hpu_megatron_llama1b_8card_settrace_killed.log"]
# What a first occurrence, a window or an offset could get wrong: a label twice (the first one not a field),
# a value wider than the window, non-ASCII text before a label, another spelling, a tab, a ratio, a cut line.
TRICKY = [
    (" iteration        3/     500 | consumed samples:          240 | elapsed time per iteration (ms): 7331.4 |"
     " learning rate: 1.2E-05 | global batch size:    80 | lm loss: 1.2E+01 | grad norm: 11.969 |"
     " number of skipped iterations:   0 | number of nan iterations:   0 |"),
    " iteration 4/ 500 | note: learning rate: warmup | learning rate: 3.0E-05 | lm loss: 2.5 |",
    " iteration 5/ 500 | elapsed time per iteration (ms): " + "1" * 80 + ".5 | lm loss: 2.5 |",
    " émoji ✓ iteration 6/ 500 | elapsed time per iteration (ms): 1234.5 | lm loss: 2.25 | grad norm: 1.0 |",
    " iteration 7/ 500 | elapsed time per iteration (ms): 1000.0/990.5 | lm-loss: 3.5 | global batch size:\t64 |",
    " iteration 8/ 500 | elapsed time per iteration (ms): 1000.0 | lm loss: nan | grad norm: inf |",
    " iteration 9/ 500 | elapsed time per iteration (ms): 1000.0 | throughput per GPU (TFLOP/s/GPU): 412.5/400.1 |",
    " iteration 10/ 500 | elapsed time per iteration (ms): 99",
    "Overwriting rerun_state_machine.current_iteration from -1 to 0 | iteration 11/ 12 |",
    " iteration\t12 / 500 | iteration 13/ 500 | elapsed time per iteration (ms): 1.0 |",
    (" iteration 14/ 500 | consumed tokens: 1048576 | actual seqlen:  4096 | tokens per GPU (tokens/s/GPU): 9000.5 |"
     " tokens per gpu per second (tgs): 8999 | number of skipped iterations:   2 | number of nan iterations: x |"),
    " iteration 15/ 500 | global batch size: 1e3 | learning rate: .5 | lm loss: +7. | grad norm: 1.0e-3  |",
    # a 64-byte window after "lm loss:" ends inside a 3-byte character on one of these three
    *(f" iteration {16 + k}/ 500 | lm loss: 2.5 |{' ' * k}{'✓' * 40} | elapsed time per iteration (ms): 5.0 |"
      for k in range(3)),
]


def iteration_lines(name: str) -> list[str]:
    text = clean_text((LOGS / name).read_text(encoding="utf-8", errors="replace"))
    return [line for line in text.split("\n") if "iteration " in line]


def by_regex(lines: list[str]) -> dict[str, pl.Series]:
    """Every field by its regex, with _extract's documented shortcuts (a count no line states as non-zero is 0
    where its label is; consumed samples only when a step line lacks the batch size)."""
    frame = pl.DataFrame({"line": lines}, schema={"line": pl.String})
    cols = frame.select(mscan._by_regex("_step"), *(mscan._by_regex(name) for name in mfields._FIELDS)).to_dict()
    line = pl.col("line")
    for name in mfields._COUNTS:
        if not frame.select(line.str.contains(mfields._ANCHORS[name] + r"\s*[1-9]").any()).item():
            cols[name] = frame.select(pl.when(line.str.contains(mfields._ANCHORS[name], literal=True)).then(0.0)
                                      .otherwise(None)).to_series().alias(name)
    if not cols["gbs"].filter(cols["_step"].is_not_null()).null_count():
        cols["consumed_samples"] = pl.Series("consumed_samples", [None] * len(lines), dtype=pl.Float64)
    return cols


def assert_reads_as_regex(lines: list[str]) -> None:
    ours = mscan._extract(pl.Series("line", lines, dtype=pl.String), all(map(str.isascii, lines)))
    oracle = by_regex(lines)
    assert sorted(ours) == sorted(oracle)
    for name, column in oracle.items():
        assert_series_equal(ours[name], column, check_names=False)


def test_every_megatron_fixture_reads_by_position_as_by_regex() -> None:
    for name in FIXTURES:
        assert_reads_as_regex(iteration_lines(name))


def test_tricky_lines_read_by_position_as_by_regex() -> None:
    assert_reads_as_regex(TRICKY)
    for line in TRICKY:
        assert_reads_as_regex([line])


@settings(max_examples=60, deadline=None)
@given(hs.sampled_from(FIXTURES), hs.lists(hs.sampled_from(TRICKY), max_size=8), hs.integers(0, 60),
       hs.integers(1, 80))
@example("cscs_gh200_llama3_1b_fineweb_10n4g_rankprefix.out", [TRICKY[3]], 0, 40)
def test_any_mix_reads_by_position_as_by_regex(fixture: str, extra: list[str], at: int, size: int) -> None:
    lines = iteration_lines(fixture)[:size]
    lines[at:at] = extra
    assert_reads_as_regex(lines)


def test_a_label_pattern_is_the_regex_it_replaced() -> None:
    assert mfields._STEP == r"iteration\s+(\d+)\s*/\s*\d+\s*\|"
    assert mfields._FIELDS["tflops"] == r"throughput per GPU \(TFLOP/s/GPU\):\s*(" + NUM + r")(?:/" + NUM + r")?\s*\|"


@settings(max_examples=40, deadline=None)
@given(hs.lists(hs.sampled_from(TRICKY), max_size=4))
def test_one_pass_anchor_probe_answers_as_a_pass_per_anchor(lines: list[str]) -> None:
    frame = pl.DataFrame({"line": lines}, schema={"line": pl.String})
    patterns = {name: mfields._escape(anchor) for name, anchor in mfields._ANCHORS.items()} | mfields._SPELLINGS
    assert mscan._any_of(frame, patterns) == {key: any(re.search(rx, line) for line in lines)
                                          for key, rx in patterns.items()}
