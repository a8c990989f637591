"""The Runs page lists a file's launches, shows its summarised launch, and puts the log's own figures beside ours."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

from ingest.pipeline import ingest_bytes
from perfledger import views
from perfledger.views.runs import RunsView

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


def _ingest(engine: Engine, name: str) -> int:
    log = LOGS / name
    run_id = ingest_bytes(engine, log.read_bytes(), log.name).run_id
    assert run_id is not None
    return run_id


def test_the_runs_page_lists_the_launches_and_shows_the_longest(writable_engine: Engine) -> None:
    run_id = _ingest(writable_engine, "cscs_gh200_smoke2_then_main_10n4g_rankprefix.out")
    assert views.launches(writable_engine, run_id).select("launch", "steps", "summarised").rows() == [
        (1, 2, False), (2, 344, True)]
    assert views.run_steps(RunsView(run=run_id), writable_engine, run_id).height == 344
    assert views.run_steps(RunsView(run=run_id, launch=1), writable_engine, run_id).height == 2


def test_printed_figures_sit_beside_the_recomputed_ones_with_the_difference(writable_engine: Engine) -> None:
    run_id = _ingest(writable_engine, "gaudi_hpu_megatron_llama1b_8card_settrace_killed.log")
    table = views.printed_vs_recomputed(writable_engine, run_id)
    rows = {r["figure"]: r for r in table.iter_rows(named=True)}
    tflops = rows["model_tflops_per_device"]
    assert tflops["printed"] == 71.6
    assert abs(tflops["relative_difference"]) < 0.01
    assert abs(tflops["recomputed"] / tflops["printed"] - 1 - tflops["relative_difference"]) < 1e-9
    assert views.launches(writable_engine, run_id).height == 3


def test_a_figure_printed_once_for_the_run_says_so_beside_the_recomputed_one(writable_engine: Engine) -> None:
    run_id = _ingest(writable_engine, "gcp_a4_b200_qwen2_5_32b_16gpu_nemo2504.log")
    rows = {r["figure"]: r for r in views.printed_vs_recomputed(writable_engine, run_id).iter_rows(named=True)}
    tflops = rows["model_tflops_per_device"]
    assert tflops["printed"] == 1116.07 and tflops["recomputed"] is not None
    assert "whole run" in tflops["printed_over"]


def test_an_rlhf_run_stores_its_steps_generation_and_training_parts(writable_engine: Engine) -> None:
    run_id = _ingest(writable_engine, "dschat_step3_rlhf_actor_opt1.3b_critic_opt350m_gbs64.log")
    steps = views.run_steps(RunsView(run=run_id), writable_engine, run_id)
    assert steps.height == 476
    assert steps.select("step_time_s", "generation_s", "training_s").row(0) == (7.99, 5.26, 2.52)


def test_an_rlhf_run_says_what_share_of_its_step_is_generation(writable_engine: Engine) -> None:
    run_id = _ingest(writable_engine, "dschat_step3_rlhf_actor_opt1.3b_critic_opt350m_gbs64.log")
    text = views.runs.rlhf_parts(views.runs.stored_run(writable_engine, run_id))
    assert text is not None and text.startswith("RLHF step, steps 48-475: generation 67% of the step time")
    assert "16.83 samples/s" in text
    other = _ingest(writable_engine, "gcp_a4_b200_qwen2_5_32b_16gpu_nemo2504.log")
    assert views.runs.rlhf_parts(views.runs.stored_run(writable_engine, other)) is None
