"""python -m ingest as a user runs it on several files: good ones stored, bad ones reported, exit code 1.

The first test runs `python -m ingest` as a process, as typed (ingest/__main__.py's own start and exit); the others
call its main() in this process (tests/cli_runner.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli_runner import run
from tests.conftest import LOGS, ROOT


def ingest(*args: str) -> subprocess.CompletedProcess[str]:
    return run("ingest", *args)


def test_good_files_are_stored_and_bad_ones_reported_with_exit_1(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 4)
    db = f"duckdb:///{tmp_path / 's.duckdb'}"
    out = subprocess.run([sys.executable, "-m", "ingest", str(LOGS / "qiu023_vlm_pp4_naive_rtx5070ti_ansi.log"),
                          str(garbage), "--db", db, "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=False)
    assert out.returncode == 1
    stored, refused = (json.loads(line) for line in out.stdout.splitlines())  # one object per file, refused too
    assert stored["format"] == "torchtitan" and stored["created"] is True
    assert refused["file"] == str(garbage) and refused["format"] is None and refused["run_id"] is None
    assert refused["error"].startswith(f"{garbage}: not a log format perfledger reads")
    stored = [stored]
    assert {"file", "format", "run_id", "created", "steps", "skipped_lines", "warnings", "steady_state"} <= set(stored[0])
    assert set(stored[0]["steady_state"]) >= {"first_step", "last_step", "step_time_s_median",
                                              "tokens_per_s_per_device", "model_tflops_per_device", "mfu",
                                              "jitter_cv"}
    assert f"{garbage}: not a log format perfledger reads" in out.stderr
    again = ingest(str(LOGS / "qiu023_vlm_pp4_naive_rtx5070ti_ansi.log"), "--db", db, "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["created"] is False


def test_overrides_fill_what_the_log_does_not_state(tmp_path: Path) -> None:
    db = f"duckdb:///{tmp_path / 's.duckdb'}"
    run("perfledger", "init", "--db", db, check=True)
    out = ingest(str(LOGS / "gaudi_hpu_megatron_llama1b_8card_settrace_killed.log"), "--accelerator", "Gaudi 2",
                 "--db", db, "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["config"]["accelerator"] == "gaudi2"
    assert 0 < summary["steady_state"]["mfu"] < 1


def test_an_accelerator_not_in_the_catalog_is_kept_as_printed_with_a_warning(tmp_path: Path) -> None:
    log = str(LOGS / "qiu023_vlm_pp4_naive_rtx5070ti_ansi.log")
    for name in ("NVIDIA GeForce RTX 5090", "Tesla T4", "h9000"):  # the catalog knows the first two
        out = ingest(log, "--accelerator", name, "--db", f"duckdb:///{tmp_path / (name + '.duckdb')}", "--json")
        assert out.returncode == 0, out.stderr
        stored = json.loads(out.stdout)
        assert stored["config"]["accelerator_as_printed"] == name
    assert "accelerator" not in stored["config"]
    assert any("accelerator 'h9000' is not in the catalog: kept as printed" in w for w in stored["warnings"])


def test_hints_for_a_stored_file_update_its_run_and_say_what_changed(tmp_path: Path) -> None:
    db = f"duckdb:///{tmp_path / 's.duckdb'}"
    log = str(LOGS / "cscs_gh200_smoke2_then_main_10n4g_rankprefix.out")
    first = json.loads(ingest(log, "--db", db, "--json").stdout)
    out = ingest(log, "--db", db, "--devices", "80", "--seq-len", "4096")
    assert out.returncode == 0, out.stderr
    assert "updated n_devices: 40 -> 80" in out.stdout and "updated seq_len: 8192 -> 4096" in out.stdout
    again = json.loads(ingest(log, "--db", db, "--json").stdout)
    assert again["run_id"] == first["run_id"] and again["created"] is False
    assert again["config"]["n_devices"] == 80


def test_a_store_never_initialised_uses_the_bundled_catalog_and_says_so(tmp_path: Path) -> None:
    out = ingest(str(LOGS / "cscs_gh200_llama3_1b_fineweb_10n4g_rankprefix.out"), "--model", "llama3-8b",
                 "--accelerator", "h100-sxm", "--precision", "bf16", "--db", f"duckdb:///{tmp_path / 'n.duckdb'}",
                 "--json")
    assert out.returncode == 0, out.stderr
    stored = json.loads(out.stdout)
    assert not any("has no architecture" in w for w in stored["warnings"])
    assert any("run `python -m perfledger init`" in w for w in stored["warnings"])
    assert stored["steady_state"]["model_tflops_per_device"] is not None and stored["steady_state"]["mfu"] is not None


def test_a_claims_table_with_unknown_names_prints_one_warning_per_name_and_lists_them_in_json(tmp_path: Path) -> None:
    from tests.claims.test_published_table import claims_csv

    data, rows = claims_csv(model=str)  # the README's Model cells as printed ("70b"): none is a catalog name
    table = tmp_path / "mpt_as_printed.csv"
    table.write_bytes(data)
    db = f"duckdb:///{tmp_path / 's.duckdb'}"
    run("perfledger", "init", "--db", db, check=True)
    out = ingest(str(table), "--db", db)
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stdout.splitlines() if "is not in the catalog" in line]
    assert len(warnings) == 9 and len({w.split("'")[1] for w in warnings}) == 9
    assert any(w.startswith("  warning: model '70b' (36 rows) is not in the catalog (nearest: mpt-70b,")
               for w in warnings)
    again = json.loads(ingest(str(table), "--db", db, "--json").stdout)
    assert again["imported"] == f"0 added, 0 updated, {rows * 4} unchanged"
    assert {u["name"]: u["rows"] for u in again["unlinked"]}["70b"] == 36
    assert again["unlinked"][0]["nearest"][0].startswith("mpt-")


def test_problems_past_the_listed_ones_are_counted_by_kind_in_text_and_json(tmp_path: Path) -> None:
    from tests.ingest.parsers.test_problems_left_out import KILLED, with_cut_lines

    raw, _ = with_cut_lines()
    log = tmp_path / KILLED.name
    log.write_bytes(raw)
    out = ingest(str(log), "--db", f"duckdb:///{tmp_path / 's.duckdb'}", "--json")
    assert out.returncode == 0, out.stderr
    stored = json.loads(out.stdout)
    left = stored["problems_left_out"]["cut line"]
    assert len(stored["problems"]) == 200 and stored["skipped_lines"] >= 200 + left
    assert stored["problems_more"] == f"... and {left:,} more: {left:,} cut line"
    text = ingest(str(log), "--db", f"duckdb:///{tmp_path / 't.duckdb'}")
    assert f"  200 problems listed (--json lists them) ... and {left:,} more: {left:,} cut line" in text.stdout
