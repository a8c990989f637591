"""NeMo stdout: the end-of-run TFLOPs result, DLL values over tqdm's rounded ones, tqdm frames split by \\r."""

from __future__ import annotations

import pytest

from ingest.detect import parse_file
from ingest.parsers.nemo import NemoParser
from tests.ingest.parsers.helpers import LOGS, run_lines


def test_nemo_reports_its_end_of_run_tflops_as_a_result() -> None:
    summary, steps = parse_file(LOGS / "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log")
    assert [r.value for r in summary.results] == [1753.06]
    assert steps["step_time_s"][-1] == pytest.approx(4.32860221862793)  # the DLL value, not tqdm's 4.330


def test_nemo_reads_tqdm_frames_split_by_carriage_returns_without_dll() -> None:
    frame = ("Epoch 0: :  10%| | 2/20 [00:25<03:50, v_num=None, reduced_train_loss=11.00, global_step={}.000, "
             "consumed_samples=256.0, train_step_timing in s=12.80]")
    line = "\r".join(frame.format(s) for s in (0, 0, 1, 2))
    _, steps = run_lines(NemoParser, ["[NeMo I 2025-06-12 nemo_logging:393] start", line])
    assert steps["step"].to_list() == [0, 1, 2]
