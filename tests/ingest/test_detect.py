"""Detection: text of no known format is refused naming every format; by weight of evidence, a stray line of
another format, at the top of a real log or inside its head, changes neither the file's format nor its steps: it
is skipped, counted and noted."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.detect import detect_format, detect_head, weigh, weigh_head
from ingest.pipeline import prepare
from perfledger.errors import UnknownFormat
from perfledger.vocabulary import LogFormat
from tests.conftest import LOGS, per_format

STRAY = {
    "mlperf": ':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "submission_benchmark", '
              '"value": "gpt3", "metadata": {}}',
    "nanogpt": "iter 10: loss 2.3456, time 123.45ms, mfu 12.34%",
    "llmc": "s:10 trl:3.2 lr:0.0006 norm:1.2",
    "nemo": "[NeMo I 2024-01-01 00:00:00 nemo_logging:349] hello",
    "megatron": " iteration       10/     100 | consumed samples:          640 | elapsed time per iteration (ms): 1234.5 |"
                " lm loss: 3.2 |",
    "torchtitan": "[titan] 2025-01-01 00:00:00,000 - root - INFO - step:  1  loss: 12.0",
    "hf_trainer_log": "{'loss': 1.23, 'learning_rate': 1e-05, 'epoch': 0.1}",
    "dllogger": 'DLLL {"step": 1, "data": {"reduced_train_loss": 1.0}}',
}
LINE_LOGS = per_format(p.name for p in LOGS.iterdir()
                       if not p.name.endswith((".expected.json", ".md", ".json", ".csv"))
                       and ".tfevents." not in p.name)  # binary: no lines to stray among


def with_line(raw: bytes, line: str, at: int) -> bytes:
    lines = raw.split(b"\n")
    return b"\n".join([*lines[:at], line.encode(), *lines[at:]])


@pytest.mark.parametrize("name", LINE_LOGS)
def test_a_stray_line_of_another_format_does_not_change_a_real_logs_format(name: str) -> None:
    raw = (LOGS / name).read_bytes()
    own = detect_head(raw, file_name=name).format
    for fmt, line in STRAY.items():
        for at in (0, 3, 40):
            found = detect_head(with_line(raw, line, at), file_name=name).format
            assert found is own, f"{fmt} line at {at} made {name} {found.value}"


@pytest.mark.parametrize("name", ["cscs_gh200_gated_attn_te_1gpu_rankprefix.out",
                                  "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log",
                                  "chenzihua_nanogpt_shakespeare_char_termux_nan.log",
                                  "bigscience_meg_gpt2_base_n8_tp4_pp8_v100.out"])
def test_one_mllog_line_atop_a_training_log_is_skipped_counted_and_noted(name: str) -> None:
    raw = (LOGS / name).read_bytes()
    with prepare(raw, name) as clean, prepare(with_line(raw, STRAY["mlperf"], 0), name) as mixed:
        assert mixed.format is clean.format
        assert mixed.steps.rows == clean.steps.rows > 0
        assert mixed.skipped_lines == clean.skipped_lines + 1
        assert any("stray line" in w and "mlperf" in w and "line 1" in w for w in mixed.warnings)
        assert any("1:" in p and "mlperf" in p for p in mixed.problems)
        assert not any("stray" in w for w in clean.warnings)


def test_lines_of_a_layered_format_are_not_stray() -> None:
    """An MLPerf run on NeMo prints NeMo lines: they are the run's own, not stray lines."""
    raw = (LOGS / "cisco_hpf_n8_h100_llama31_8b_v5.1_result_0_rankprefix.txt").read_bytes()
    found = weigh_head(raw, file_name="result_0.txt")
    assert found.parser.format.value == "mlperf" and found.stray == ()


def test_the_format_most_lines_claim_wins_and_ties_go_to_the_registry_order() -> None:
    nanogpt = "\n".join(STRAY["nanogpt"] for _ in range(3))
    assert weigh(f"{STRAY['mlperf']}\n{nanogpt}", file_name="x").parser.format.value == "key_value"
    assert weigh(f"{STRAY['mlperf']}\n{STRAY['nanogpt']}", file_name="x").parser.format.value == "mlperf"


def test_stray_lines_are_named_by_line_number() -> None:
    head = "\n".join([STRAY["nanogpt"]] * 2 + [STRAY["mlperf"]] + [STRAY["nanogpt"]] * 5)
    found = weigh(head, file_name=str(Path("x.log")))
    assert [(s.lineno, s.format.value) for s in found.stray] == [(3, "mlperf")]
    assert found.parser.format.value == "key_value"


def test_random_text_is_unknown_and_the_error_lists_every_format() -> None:
    with pytest.raises(UnknownFormat) as err:
        detect_format("lorem ipsum dolor sit amet\n" * 50, file_name="notes.txt")
    for fmt in LogFormat:
        assert fmt.value in str(err.value)


def test_mllog_events_make_a_file_mlperf_however_many_framework_lines_come_first() -> None:
    """An MLPerf result whose launcher printed 64 KiB of NeMo progress before its first event (it was read as NeMo
    and refused for no training step)."""
    raw = (LOGS / "nvidia_h200x8_llama2_70b_lora_nemo_v4.0_result_0.txt").read_bytes()
    nemo = next(line for line in (LOGS / "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log").read_bytes().splitlines()
                if b"reduced_train_loss" in line)
    preamble = b"\n".join([nemo] * (70_000 // len(nemo) + 1)) + b"\n"
    assert detect_head(preamble + raw, file_name="result_0.txt").format.value == "mlperf"
    assert detect_head(preamble + raw[:400], file_name="result_0.txt").format.value == "nemo"  # a line or two: not


def test_a_generic_reader_yields_to_a_format_that_claims_the_file() -> None:
    """Megatron's iteration lines are name: value pairs too; the key-value reader reads only what no format claims."""
    raw = (LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out").read_bytes()
    assert detect_head(raw, file_name="x.out").format.value == "megatron"
    verl = b"step:1 - actor/pg_loss:0.1 - timing_s/step:10.5\n" * 5
    assert detect_head(verl, file_name="x.log").format.value == "key_value"
