"""_may_configure only spares _config_line lines it would take nothing from: a line it drops changes no state."""

from __future__ import annotations

import copy

import polars as pl
from hypothesis import example, given, settings
from hypothesis import strategies as hs

from ingest.parsers.megatron import config as mconfig
from ingest.parsers.megatron import fields as mfields
from ingest.parsers.megatron import parser as mparser
from ingest.parsers.megatron import scan as mscan
from ingest.text import clean_text
from tests.conftest import LOGS

KEYS = sorted(mconfig._KEYS) + ["train_batch_size", "save-checkpoint", "num_layers_x", "Num_layers"]
PIECES = ["0: [default0]:", "[config.py:123:print] ", "[INFO] [config", " ", "  ", "....", " ... ", "..", ": ",
          ":", " -- ", "--num-layers 24", "--seq-length=2048", "--nproc_per_node 8", "DeepSpeed info: version=0.9.0,",
          "deepspeed info .... 0.9.1,", "using world size: 8, data-parallel size: 4", "(UUID", "GPU 0: H100 (UUID",
          "memory (MB) | allocated: 5.0 | max allocated: 123.0", "dist_world_size=8", "Primus", "MindSpeed",
          "padded vocab (size: 50257) with 175 dummy tokens (new size: 50432)", "24", "bf16", "True", "#", "'x'",
          " --nprocs 4 --nnodes 2", "num_layers: 24", "\t", "-", "=", "[Rank 0] (after 10 iterations) "]
line = hs.lists(hs.one_of(hs.sampled_from(KEYS), hs.sampled_from(PIECES),
                          hs.sampled_from(KEYS).map(lambda k: k.replace("_", " ", 1))), max_size=8).map("".join)


def state_after(lines: list[str]) -> dict[str, object]:
    """The parser's state after reading lines as configuration; of DeepSpeed's config dump, what is read from it."""
    parser = mparser.MegatronParser("x.log")
    for text in lines:
        parser._config_line(text)
    state = copy.deepcopy(vars(parser._s))
    state["ds_config"] = {k: v for k, v in state["ds_config"].items() if k == "train_batch_size"}
    return state


def assert_dropped_lines_change_nothing(lines: list[str]) -> None:
    kept = mscan._may_configure(pl.Series("line", lines, dtype=pl.String)).to_list()
    assert state_after([text for text, keep in zip(lines, kept, strict=True) if keep]) == state_after(lines)


@settings(deadline=None)
@given(hs.lists(line, min_size=1, max_size=5))
@example(["0: [default0]:    save-checkpoint ................................: (2.5, 3.1)"])
@example(["0: [default0]:  num layers ...... 24", "  train_batch_size .... 512", "[config.py:1:print] foo .. 1"])
def test_a_line_the_filter_drops_changes_no_configuration(lines: list[str]) -> None:
    assert_dropped_lines_change_nothing(lines)


def test_no_line_of_any_log_fixture_that_the_filter_drops_configures_the_run() -> None:
    for path in sorted(LOGS.iterdir()):
        if path.name.endswith((".json", ".md", ".gz")):
            continue
        lines = clean_text(path.read_text(encoding="utf-8", errors="replace")).splitlines()
        assert_dropped_lines_change_nothing([text for text in lines if mfields._ITERATION not in text])
