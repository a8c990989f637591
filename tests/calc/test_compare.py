"""The verdict's arithmetic (perfledger.calc.compare): which published row a run is compared with and why, the
fields that differ, the gap split whose parts add up to the ratio, and TFLOP/s set side by side only under the one
FLOPs count that reproduces the published figure."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as hs

from perfledger.calc import compare
from perfledger.calc import compare_rows as cr
from perfledger.calc.flops import ModelShape

RUN = {"id": 0, "model_id": "llama3-8b", "accelerator_id": "b200", "precision": "fp8", "workload": "pretrain",
       "n_devices": 8, "global_batch": 128, "micro_batch": 2, "seq_len": 8192, "tp": 1, "pp": 1, "cp": 1,
       "framework": "nemo"}
# Llama 3 8B (data/models.csv): 32 layers, hidden 4096, 32 heads, 8 kv heads, ffn 14336, vocab 128256, SwiGLU
LLAMA3_8B = ModelShape(layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, vocab=128256, swiglu=True)


def row(rid: int, value: float, **over: Any) -> dict[str, Any]:
    base = {k: v for k, v in RUN.items() if k not in ("id", "framework")}
    return base | {"id": rid, "source_id": "mbridge", "publisher": "NVIDIA", "metric": "tokens_per_s_per_device",
                   "value": value, "framework": "NeMo (Megatron-Bridge)", "locator": "table"} | over


def test_with_no_version_stated_the_newest_release_is_chosen_and_held_to_its_best_variant() -> None:
    rows = [row(1, 26006, framework_version="NeMo 25.02 container", source_id="nemo_docs"),
            row(2, 30624, framework_version="NeMo container 25.11", note="precision as printed: FP8-CS"),
            row(3, 29521, framework_version="NeMo container 25.11", note="precision as printed: FP8-MX")]
    chosen, why = compare.choose(RUN, rows)
    assert chosen["id"] == 2
    assert "newest framework version" in why and "the run states none" in why and "highest" in why


def test_a_stated_version_picks_the_closest_release() -> None:
    rows = [row(1, 26006, framework_version="NeMo 25.02 container"),
            row(2, 30624, framework_version="NeMo container 25.11")]
    chosen, why = compare.choose(RUN | {"framework_version": "25.04"}, rows)
    assert chosen["id"] == 1 and "closest framework version" in why


def test_the_run_s_framework_family_comes_before_another_framework() -> None:
    rows = [row(1, 40000, framework="MaxText", framework_version="2025.12"),
            row(2, 30000, framework_version="NeMo container 25.11")]
    assert compare.choose(RUN, rows)[0]["id"] == 2


def test_rows_at_another_device_count_are_comparable_only_when_none_match_and_then_say_so() -> None:
    rows = [row(1, 1.0, n_devices=8), row(2, 1.0, n_devices=64), row(3, 1.0, n_devices=8, precision="bf16")]
    same, said = compare.comparable_rows(RUN, rows)
    assert [r["id"] for r in same] == [1] and said.endswith("and devices")
    nearest, said = compare.comparable_rows(RUN | {"n_devices": 16}, rows)
    assert [r["id"] for r in nearest] == [1]
    assert said == "no published row at 16 devices: the nearest stated, 8 devices"


def test_another_precision_model_or_workload_is_never_comparable() -> None:
    rows = [row(1, 1.0, precision="bf16"), row(2, 1.0, model_id="llama3-70b"), row(3, 1.0, workload="sft"),
            row(4, 1.0, precision="unstated")]
    assert compare.comparable_rows(RUN, rows)[0] == []


def test_differences_read_what_a_row_s_note_states_and_name_each_side() -> None:
    published = row(1, 30624, framework_version="NeMo container 25.11", grad_accum=8,
                    note="parallelism as printed: TP=1;PP=1;CP=1;VP=1;EP=1;GA=8 | precision as printed: FP8-CS")
    found = {d.field: (d.run, d.published) for d in cr.differences(RUN, published)}
    assert found["precision_recipe"] == (None, "FP8-CS")
    assert found["vp"] == (None, "1")
    assert found["framework_version"] == (None, "NeMo container 25.11")
    assert found["framework"] == ("nemo", "NeMo (Megatron-Bridge)")
    assert "n_devices" not in found and "tp" not in found  # the same on both sides


def test_a_gradient_accumulation_the_run_s_batches_and_dp_give_is_no_difference() -> None:
    """The NeMo log states GBS 128, MBS 2 and DP 8 but no accumulation; NVIDIA's row states GA=8: the same."""
    published = row(1, 30624, grad_accum=8)
    assert "grad_accum" not in {d.field for d in cr.differences(RUN | {"dp": 8}, published)}
    assert {d.field: d.run for d in cr.differences(RUN | {"dp": 8}, published | {"grad_accum": 4})}["grad_accum"] == 8
    assert {d.field: d.run for d in cr.differences(RUN, published)}["grad_accum"] is None  # no DP: not derived


def test_the_gap_walks_through_the_same_publisher_s_rows_one_field_at_a_time() -> None:
    chosen = row(1, 30000, global_batch=256)
    pool = [chosen, row(2, 27000, global_batch=128),  # the same publisher at the run's batch: a part
            row(3, 99999, global_batch=128, tp=2),  # two fields away: not a step
            row(4, 12345, global_batch=128, source_id="other", publisher="someone else")]
    gap = compare.gap(RUN, 26000, chosen, pool)
    assert [p.inputs for p in gap.parts] == [(1, 2)]
    assert abs(gap.parts[0].share - (27000 - 30000) / 30000) < 1e-12
    assert abs(gap.unexplained - (26000 - 27000) / 30000) < 1e-12
    assert abs(1 + sum(p.share for p in gap.parts) + gap.unexplained - gap.ratio) < 1e-12


@given(run=hs.floats(1, 1e6), base=hs.floats(1, 1e6), step=hs.floats(1, 1e6))
def test_the_gap_parts_and_the_unexplained_rest_always_add_up_to_the_ratio(run: float, base: float,
                                                                           step: float) -> None:
    gap = compare.gap(RUN, run, row(1, base, global_batch=256), [row(1, base, global_batch=256), row(2, step)])
    assert abs(1 + sum(p.share for p in gap.parts) + gap.unexplained - gap.ratio) <= 1e-9 * max(1.0, gap.ratio)


def test_nvidia_s_published_tflops_are_set_beside_the_run_s_under_their_own_count() -> None:
    """The run's 1,754.7 TFLOP/s count 57.9 GFLOP per token; NVIDIA's 1,576 count 51.5 (causal-halved attention):
    side by side under one count the run is at 99.0%, not 11% ahead."""
    side = compare.tflops_side_by_side(30298.7, 30624, 1576, LLAMA3_8B, 8192, "fp8")
    assert side is not None and side.convention == "causal"
    assert round(side.gflop_per_token, 1) == 51.5 and round(side.default_gflop_per_token or 0, 1) == 57.9
    assert round(side.run, 1) == 1559.5 and round(side.ratio, 3) == 0.990


def test_a_published_tflops_no_count_reproduces_is_not_set_side_by_side() -> None:
    assert compare.tflops_side_by_side(30298.7, 30624, 900, LLAMA3_8B, 8192, "fp8") is None


def test_the_tflops_partner_is_the_same_printed_row_recipe_included() -> None:
    cs = row(2, 30624, note="precision as printed: FP8-CS")
    rows = [cs, row(3, 1576, metric="model_tflops_per_device", note="precision as printed: FP8-CS"),
            row(5, 1519, metric="model_tflops_per_device", note="precision as printed: FP8-MX")]
    partner = compare.tflops_partner(cs, rows)
    assert partner is not None and partner["id"] == 3
