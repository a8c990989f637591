"""MLPerf MLLOG: time to train as MLPerf defines it, derived figures labelled, odd files handled."""

from __future__ import annotations

import pytest

from ingest.parsers import mlperf
from ingest.parsers.mlperf import DERIVED_NOTE, PARSER, platform_nodes
from tests.ingest.parsers.helpers import LOGS, parse_text, parse_with

EOS = "nvidia_eos_n64_h100_gpt3_nemo_v4.0_result_0.txt"


def test_time_to_train_is_run_stop_minus_run_start() -> None:
    summary, _ = parse_with(PARSER, LOGS / EOS)
    ttt = summary.results[0]
    assert (ttt.metric, ttt.evidence) == ("time_to_train_s", "measured")
    assert ttt.value == pytest.approx((1715046977115 - 1715043829220) / 1000)  # 3147.895 s
    assert summary.meta["source_kind"] == "mlperf"


def test_eos_config_comes_from_sysjson_and_benchmark_name() -> None:
    summary, _ = parse_with(PARSER, LOGS / EOS)
    c = summary.config
    assert (c.model, c.model_as_printed, c.workload) == ("gpt3-175b", "gpt3", "pretrain")
    assert (c.n_devices, c.accelerator_as_printed) == (512, "NVIDIA H100-SXM5-80GB")
    assert (c.global_batch, c.seq_len) == (2304, 2048)


def test_per_device_figures_are_derived_with_the_mlcommons_caveat() -> None:
    summary, _ = parse_with(PARSER, LOGS / EOS)
    per_device = next(r for r in summary.results if r.metric == "tokens_per_s_per_device")
    assert per_device.evidence == "derived" and DERIVED_NOTE in (per_device.note or "")
    assert per_device.value == pytest.approx(1245708288 / 3147.895 / 512)  # gpt3 counts tokens


def test_truncated_file_warns_and_has_no_time_to_train() -> None:
    summary, _ = parse_with(PARSER, LOGS / "nvidia_eos_dfw_n1344_h100_gpt3_nemo_v4.0_result_0_truncated.txt")
    assert summary.results == ()
    assert any("no run_stop" in w for w in summary.warnings)
    assert summary.config.n_devices == 10752


def test_rank_prefixed_cisco_file_gives_per_step_times() -> None:
    summary, steps = parse_with(PARSER, LOGS / "cisco_hpf_n8_h100_llama31_8b_v5.1_result_0_rankprefix.txt")
    first = steps.row(0, named=True)
    assert first["step"] == 1  # metadata step 64.0 counts samples; global batch 64
    assert first["step_time_s"] == pytest.approx(4.069206237792969)
    assert first["tokens"] == 64 * 8192
    assert summary.config.model == "llama3-8b" and summary.config.model_as_printed == "llama31_8b"
    assert any("placeholder" in w for w in summary.warnings)


def test_lora_benchmark_maps_to_llama2_70b_lora_finetune() -> None:
    summary, _ = parse_with(PARSER, LOGS / "nvidia_h200x8_llama2_70b_lora_nemo_v4.0_result_0.txt")
    assert (summary.config.model, summary.config.workload, summary.config.n_devices) == (
        "llama2-70b", "lora_finetune", 8)


def test_failed_run_stop_is_not_a_result() -> None:
    text = (':::MLLOG {"time_ms": 1000, "key": "run_start", "value": null, "metadata": {}}\n'
            ':::MLLOG {"time_ms": 9000, "key": "run_stop", "value": null, "metadata": {"status": "aborted"}}')
    summary, _ = parse_text(PARSER, text)
    assert summary.results == ()
    assert any("not a valid MLPerf result" in w for w in summary.warnings)


def test_broken_mllog_json_is_a_line_problem() -> None:
    text = ':::MLLOG {"time_ms": 1000, "key": "run_start", "value": null, "metadata": {}}\n:::MLLOG {"time_ms": 12'
    summary, _ = parse_text(PARSER, text, "x.txt")
    assert [p.line for p in summary.problems] == [2]


def test_platform_prefix_counts_nodes() -> None:
    assert platform_nodes("64xNVIDIA DGX H100") == (64, "NVIDIA DGX H100")
    assert platform_nodes("tpu-v5p") == (None, "tpu-v5p")


def test_parse_is_the_same_whatever_the_chunk_size() -> None:
    name = "cisco_hpf_n8_h100_llama31_8b_v5.1_result_0_rankprefix.txt"
    _, small = parse_with(mlperf.PARSER, LOGS / name, chunk_bytes=4096)
    _, large = parse_with(mlperf.PARSER, LOGS / name, chunk_bytes=8 * 1024 * 1024)
    assert small.equals(large)


def test_a_repeated_key_counts_as_json_loads_reads_it() -> None:
    line = (':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "tracked_stats", '
            '"value": {"train_step_time": 1.0, "train_step_time": 2.0}, "metadata": {"step": 3, "step": 4}}')
    _, steps = parse_text(PARSER, line)
    assert steps.select("step", "step_time_s").row(0) == (4, 2.0)


def _event(key: str, value: object, meta: str = "{}", time_ms: int = 1) -> str:
    import json

    return (f':::MLLOG {{"namespace": "", "time_ms": {time_ms}, "event_type": "POINT_IN_TIME", "key": "{key}", '
            f'"value": {json.dumps(value)}, "metadata": {meta}}}')


def _block_only_log(platform: str, *config: str) -> str:
    lines = [*config, _event("submission_platform", platform), _event("submission_benchmark", "llama2_70b_lora"),
             _event("global_batch_size", 8), _event("run_start", None, time_ms=1000)]
    lines += [_event("tracked_stats", {"throughput": 2.0}, f'{{"samples_count": {8 * 24 * k}}}') for k in (1, 2, 3)]
    lines += [_event("run_stop", None, '{"status": "success", "samples_count": 576}', time_ms=101_000)]
    return "\n".join(lines)


def test_platform_names_nodes_system_and_devices_per_node() -> None:
    from ingest.parsers._mlperf_config import Platform, read_platform

    assert read_platform("1xXE9680x8H100-SXM-80GB") == Platform(1, "XE9680", 8, "H100-SXM-80GB")
    assert read_platform("1xXE9680x8H100-SXM-80GB").devices == 8
    assert read_platform("640xNVIDIA GB200") == Platform(640, "NVIDIA GB200", None, "NVIDIA GB200")
    assert read_platform("1xMI300X").devices is None and read_platform("tpu-v5p").accelerator == "tpu-v5p"


def test_submission_platform_gives_devices_and_the_catalog_accelerator() -> None:
    summary, _ = parse_text(PARSER, _block_only_log("1xXE9680x8H100-SXM-80GB"))
    c = summary.config
    assert (c.n_devices, c.accelerator, c.accelerator_as_printed) == (8, "h100-sxm", "H100-SXM-80GB")
    assert summary.meta["n_nodes"] == 1 and summary.meta["system_name"] == "XE9680"
    assert any("submission_platform" in w for w in summary.warnings)


def test_an_accelerator_the_catalog_lacks_is_kept_as_printed() -> None:
    summary, _ = parse_text(PARSER, _block_only_log("2xSomeBox x4 Zeta-9000"))
    assert (summary.config.n_devices, summary.config.accelerator) == (8, None)
    assert summary.config.accelerator_as_printed == "Zeta-9000"


def test_seq_len_and_shape_come_from_the_config_dump() -> None:
    dump = ("[NeMo I 2024-05-01 model:]", "  encoder_seq_length: 8192", "  num_layers: 80", "  hidden_size: 8192",
            "  ffn_hidden_size: 28672", "  num_attention_heads: 64", "  num_query_groups: 8")
    summary, steps = parse_text(PARSER, _block_only_log("1xXE9680x8H100-SXM-80GB", *dump))
    c = summary.config
    assert (c.seq_len, c.num_layers, c.hidden_size, c.ffn_hidden_size) == (8192, 80, 8192, 28672)
    assert (c.num_attention_heads, c.num_kv_heads) == (64, 8)
    assert steps["tokens"].to_list() == [8 * 8192] * 3


def test_mllog_keys_win_over_the_config_dump() -> None:
    text = _block_only_log("1xMI300X", "  seq_length: 4096", _event("max_sequence_length", 8192))
    summary, _ = parse_text(PARSER, text)
    assert summary.config.seq_len == 8192  # the dump came first in the file, but the MLLOG key is what MLPerf states


def test_logged_throughput_is_kept_per_step_and_tokens_per_device_are_derived() -> None:
    summary, steps = parse_text(PARSER, _block_only_log("1xXE9680x8H100-SXM-80GB", "  seq_length: 4096"))
    assert steps["reported_tokens_per_s_per_device"].to_list() == [2.0 * 4096 / 8] * 3
    per_device = next(r for r in summary.results if r.metric == "tokens_per_s_per_device")
    assert per_device.evidence == "derived" and DERIVED_NOTE in (per_device.note or "")
    assert per_device.value == pytest.approx(576 * 4096 / 100.0 / 8)
    assert summary.meta["headline"] == {"metric": "time_to_train_s", "value": 100.0, "unit": "s"}


def test_block_average_rows_are_not_stored_as_repeated_steps() -> None:
    summary, steps = parse_with(PARSER, LOGS / "nvidia_hsg_ngpu2560_llama31_405b_nemo_v5.1_result_0.txt")
    assert steps["step"].is_unique().all()
    assert steps.height == 340 and summary.meta["block_average_rows"] == 3
    assert any("block-average rows" in w for w in summary.warnings)
