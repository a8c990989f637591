"""python -m perfledger.microbench: its FLOP counts, its result file's parser, and a --tiny run end to end."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.parsers import registry
from ingest.parsers.microbench import PARSER, MicrobenchParser
from perfledger.calc import block_flops
from perfledger.calc.block_flops import matmul_flops, transformer_block_flops
from perfledger.errors import InvalidInput, ParseError
from perfledger.microbench import TORCH_MISSING
from perfledger.microbench.device import cpu_model_from_cpuinfo, resolve_accelerator_id
from perfledger.microbench.records import summarize
from perfledger.microbench.run import main
from perfledger.records import ParseSummary
from perfledger.vocabulary import LogFormat

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "fixtures" / "microbench_sample.jsonl"

# GPT-2 XL layer, batch 8, by hand: tokens = 8 * 1024 = 8192.
#   weight matmuls per token, forward: 2 * (4 * 1600^2 + 2 * 1600 * 6400) = 2 * 30,720,000 = 61,440,000 FLOP
#   x 8192 tokens                                                          = 503,316,480,000 FLOP
#   attention scores + values: 4 * 8 * 1024^2 * 1600                       =  53,687,091,200 FLOP
#   forward                                                                = 557,003,571,200 FLOP (0.557 TFLOP)
#   forward + backward = 3 x forward                                       = 1,671,010,713,600 FLOP (1.671 TFLOP)
GPT2_XL_B8_FWD = 503_316_480_000 + 53_687_091_200
GPT2_XL_B8_FWD_BWD = 3 * GPT2_XL_B8_FWD


def parse_text(text: str, file_name: str = "bench.jsonl") -> ParseSummary:
    parser = MicrobenchParser(file_name)
    frame = parser.feed(text.splitlines(), 1)
    assert frame.height == 0
    return parser.finish()


def sample_lines() -> list[str]:
    return SAMPLE.read_text().splitlines()


def gpt2_xl_file(*rows: dict[str, object]) -> str:
    header = {"perfledger_microbench": 1, "device_name": "NVIDIA H100 80GB HBM3", "accelerator_id": "h100-sxm",
              "backend": "cuda", "torch_version": "2.13.0", "hostname": "gpu1", "started_at": "2026-11-23T00:00:00",
              "config": {}}
    return "\n".join(json.dumps(obj) for obj in (header, *rows)) + "\n"


def block_row(**changes: object) -> dict[str, object]:
    row: dict[str, object] = {"kind": "block", "precision": "bf16", "batch": 8, "seq_len": 1024, "hidden": 1600,
                              "heads": 25, "pass": "fwd+bwd", "median_s": 0.01, "min_s": 0.0099, "max_s": 0.0102,
                              "repeats": 10, "flops": GPT2_XL_B8_FWD_BWD, "tflops": GPT2_XL_B8_FWD_BWD / 0.01 / 1e12}
    return {**row, **changes}


# --- FLOPs -------------------------------------------------------------------------------------------------

def test_block_flops_docstring_examples_hold() -> None:
    assert doctest.testmod(block_flops).failed == 0


def test_gpt2_xl_block_at_batch_8_is_0_557_tflop_forward_and_1_671_forward_backward() -> None:
    assert transformer_block_flops(8, 1024, 1600, 6400, backward=False) == GPT2_XL_B8_FWD == 557_003_571_200
    assert transformer_block_flops(8, 1024, 1600, backward=True) == GPT2_XL_B8_FWD_BWD == 1_671_010_713_600


def test_block_forward_backward_per_token_is_one_layer_of_f_req() -> None:
    h, f, s = 1600, 6400, 1024
    per_token = transformer_block_flops(4, s, h, f, backward=True) / (4 * s)
    assert per_token == 6 * (2 * h * h + 2 * h * h + 2 * h * f) + 12 * s * h


def test_matmul_flops_count_a_multiply_add_as_two() -> None:
    assert matmul_flops(2, 3, 4) == 48
    assert matmul_flops(4096, 4096, 4096) == 2 * 4096**3


@pytest.mark.parametrize("shape", [(0, 1024, 1600), (8, -1, 1600), (8, 1024, 0)])
def test_block_flops_reject_non_positive_sizes(shape: tuple[int, int, int]) -> None:
    with pytest.raises(InvalidInput):
        transformer_block_flops(*shape, backward=False)


# --- the parser --------------------------------------------------------------------------------------------

def test_registry_finds_the_microbench_parser() -> None:
    assert PARSER in registry()
    assert PARSER.format is LogFormat.MICROBENCH


def test_sniff_accepts_a_result_file_and_rejects_other_json_lines() -> None:
    assert PARSER.sniff(SAMPLE.read_text()[:65536], "anything.txt")
    assert not PARSER.sniff('{"kind": "block", "perfledger": 1}\n', "x.jsonl")
    assert not PARSER.sniff(" iteration 10/ 100 | elapsed time per iteration (ms): 812.3\n", "x.log")


def test_committed_cpu_sample_yields_one_measured_result_per_line() -> None:
    lines = sample_lines()
    header = json.loads(lines[0])
    summary = parse_text(SAMPLE.read_text(), SAMPLE.name)

    assert header["backend"] == "cpu" and "CPU sample" in header["note"]
    assert summary.problems == () and summary.skipped_lines == 0
    config = summary.config
    assert (config.accelerator, config.accelerator_as_printed) == (None, header["device_name"])
    assert (config.framework, config.framework_version, config.workload) == ("PyTorch", "2.13.0+cpu", "microbench")
    assert (config.hidden_size, config.num_attention_heads, config.seq_len) == (64, 4, 32)
    assert len(summary.results) == len(lines) - 1 == 5
    assert {r.evidence for r in summary.results} == {"measured"}
    assert {r.unit for r in summary.results} == {"TFLOP/s/device"}
    for line_no, (line, result) in enumerate(zip(lines[1:], summary.results, strict=True), start=2):
        row = json.loads(line)
        assert result.locator == f"line {line_no}"
        assert result.value == pytest.approx(row["flops"] / row["median_s"] / 1e12, rel=1e-12)
        assert result.precision == row["precision"]
        if row["kind"] == "block":
            assert result.metric == "model_tflops_per_device"
            assert (result.seq_len, result.micro_batch) == (32, 2)
            assert result.note is not None and result.note.startswith(f"{row['pass']}, batch 2")
            assert result.model_id is None  # a 64-wide toy block is not a GPT-2 XL layer
        else:
            assert result.metric == "matmul_tflops"
            assert result.micro_batch is None


def test_fastest_matmul_of_each_precision_is_marked_best_of_its_sweep() -> None:
    summary = parse_text(SAMPLE.read_text())
    best = [r for r in summary.results if r.note and "best of the" in r.note]
    matmuls = [r for r in summary.results if r.metric == "matmul_tflops"]
    assert {r.precision for r in best} == {r.precision for r in matmuls}
    for r in best:
        assert r.value == max(m.value for m in matmuls if m.precision == r.precision)


def test_gpt2_xl_shaped_block_is_stored_against_gpt2_xl() -> None:
    summary = parse_text(gpt2_xl_file(block_row(), block_row(batch=16, median_s=0.02, flops=None, tflops=None)))
    first, second = summary.results
    assert (first.model_id, first.accelerator_id, first.micro_batch, first.seq_len) == ("gpt2-xl", "h100-sxm", 8, 1024)
    assert first.value == pytest.approx(167.1010713600)
    assert second.value == pytest.approx(167.1010713600)  # twice the work in twice the time
    assert summary.config.model == "gpt2-xl" and summary.config.precision == "bf16"
    assert summary.warnings == ()


def test_a_stated_tflops_that_disagrees_with_the_recomputed_one_is_warned() -> None:
    summary = parse_text(gpt2_xl_file(block_row(tflops=200.0)))
    assert summary.results[0].value == pytest.approx(167.1010713600)
    expected = "line 2: the file says 200 TFLOP/s, recomputed 167.101; the recomputed figure is stored"
    assert summary.warnings == (expected,)


def test_malformed_lines_are_reported_with_their_line_numbers_and_skipped() -> None:
    lines = sample_lines()
    lines[3:3] = ['{"kind": "matmul", "precision": "fp32", "m": 256', '{"kind": "conv", "precision": "fp32"}',
                  json.dumps(block_row(**{"pass": "bwd"}))]
    summary = parse_text("\n".join(lines))
    assert [(p.line, p.reason.split(" ")[0]) for p in summary.problems] == [(4, "not"), (5, "kind"), (6, "pass")]
    assert str(summary.problems[0]).startswith("bench.jsonl:4: not a JSON object")
    assert summary.skipped_lines == 3
    assert len(summary.results) == 5


def test_a_header_without_measurements_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="no measurement found"):
        parse_text(sample_lines()[0] + "\n")


def test_a_file_without_the_header_is_a_parse_error_at_line_1() -> None:
    with pytest.raises(ParseError) as caught:
        parse_text("\n".join(sample_lines()[1:]))
    assert caught.value.line == 1


# --- the benchmark's edges ---------------------------------------------------------------------------------

def test_cpu_model_comes_from_the_first_model_name_line() -> None:
    text = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7763 64-Core Processor\n"
    assert cpu_model_from_cpuinfo(text) == "AMD EPYC 7763 64-Core Processor"
    assert cpu_model_from_cpuinfo("processor\t: 0\nBogoMIPS\t: 50.00\n") is None


def test_cpus_resolve_to_no_accelerator_and_unknown_gpus_to_none_with_a_warning() -> None:
    assert resolve_accelerator_id("AMD EPYC 7763", "cpu") == (None, None)
    accelerator, warning = resolve_accelerator_id("Imaginary Accelerator 9000", "cuda")
    assert accelerator is None
    assert warning is not None and "Imaginary Accelerator 9000" in warning


def test_timing_summary_is_median_min_max_of_the_repeats() -> None:
    timing = summarize([0.3, 0.1, 0.2, 0.5])
    assert (timing.median_s, timing.min_s, timing.max_s, timing.repeats) == (0.25, 0.1, 0.5, 4)


def test_without_torch_the_cli_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail as if it were not installed
    assert main(["--tiny", "--out", str(tmp_path / "r.jsonl")]) == 1
    assert capsys.readouterr().err == f"error: {TORCH_MISSING}\n"
    assert not (tmp_path / "r.jsonl").exists()


def test_perfledger_and_the_parser_import_without_torch() -> None:
    code = ("import sys; sys.modules['torch'] = None\n"
            "import perfledger.microbench.run, perfledger.calc.block_flops, ingest.parsers.microbench\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_an_unknown_precision_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--tiny", "--precisions", "fp32,fp64"])
    assert caught.value.code == 2
    assert "unknown precision fp64" in capsys.readouterr().err


def test_tiny_run_writes_a_file_the_parser_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch", reason="torch not installed: pip install -r requirements-torch.txt")
    out = tmp_path / "tiny.jsonl"
    assert main(["--tiny", "--device", "cpu", "--out", str(out)]) == 0

    header = json.loads(out.read_text().splitlines()[0])
    summary = parse_text(out.read_text(), out.name)
    per_precision = len(header["config"]["matmul_sizes"]) + 2 * len(header["config"]["batches"])
    assert header["backend"] == "cpu" and header["accelerator_id"] is None
    assert "fp32" in header["config"]["precisions"]
    assert len(summary.results) == per_precision * len(header["config"]["precisions"])
    assert summary.problems == ()
    assert all(r.value > 0 for r in summary.results)
    assert f"wrote {out}" in capsys.readouterr().out
