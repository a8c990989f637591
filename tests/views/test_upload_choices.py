"""The upload form's choices: started from what a run states, only the changed ones travel as hints, changes
said once, and the command line's flag advice read as the form's selectors."""

from __future__ import annotations

from sqlalchemy import Engine

from ingest import pipeline
from perfledger.views import upload as up
from perfledger.views.run_diff import config_diff
from tests.conftest import LOGS

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"


def test_the_form_starts_from_the_catalog_ids_else_the_names_as_printed() -> None:
    config = {"model": None, "model_as_printed": "My 3B", "accelerator": "h100-sxm", "n_devices": 8,
              "precision": "unstated", "seq_len": 4096}
    assert up.stated(config) == up.Choices(model="My 3B", accelerator="h100-sxm", devices=8, seq_len=4096)


def test_blank_names_and_zero_counts_are_not_stated() -> None:
    assert up.chosen("  ", "", 0, "", 0) == up.Choices()
    assert up.chosen(" llama2-7b ", None, 8, "bf16", 2048) == up.Choices("llama2-7b", None, 8, "bf16", 2048)


def test_only_the_choices_that_differ_from_what_is_stated_are_hints() -> None:
    before = up.Choices(model="llama2-7b", devices=8, precision="bf16")
    after = up.Choices(model="llama2-7b", accelerator="h200", devices=16, precision=None)
    assert up.overrides(before, after).as_json() == {"accelerator": "h200", "devices": 16}


def test_a_change_is_said_once_per_field_and_no_change_is_said_too() -> None:
    assert up.changes_text({"accelerator": (None, "gh200"), "accelerator_as_printed": (None, "gh200"),
                            "n_devices": (1, 1024)}) == "accelerator: — → gh200; devices: 1 → 1,024"
    assert up.changes_text({"accelerator": (None, "h200"), "accelerator_as_printed": (None, "H200 SXM")}) == \
        "accelerator: — → h200; accelerator as printed: — → H200 SXM"
    assert up.changes_text({}).startswith("nothing changed")


def test_command_line_flags_read_as_the_forms_selectors() -> None:
    assert up.for_the_form("the model is unknown (pass --model)") == \
        "the model is unknown (choose the model in the upload form)"
    assert up.for_the_form("no configuration; pass --model/--devices") == \
        "no configuration; choose the model and devices in the upload form"
    assert up.for_the_form("per-device figures need --devices") == \
        "per-device figures need the devices chosen in the upload form"
    assert up.for_the_form("mfu not computed: the precision is unknown (pass --precision)").endswith(
        "(choose the precision in the upload form)")
    assert "--" not in up.for_the_form("ingest with --accelerator ID to set it")


def test_the_config_diff_of_stored_runs_reads_no_command_line_flags(store_engine: Engine) -> None:
    one = pipeline.ingest_bytes(store_engine, MEGATRON.read_bytes(), MEGATRON.name)  # states no accelerator
    two = pipeline.ingest_bytes(store_engine, MEGATRON.read_bytes() + b"\n", MEGATRON.name)
    assert one.run_id is not None and two.run_id is not None
    diff = config_diff(store_engine, one.run_id, two.run_id)
    shown = " ".join(v for column in diff.columns[1:-1] for v in diff[column].drop_nulls().to_list())
    assert "choose the accelerator in the upload form" in shown and "pass --" not in shown
