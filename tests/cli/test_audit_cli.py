"""`perfledger audit` prints every claim kind, each figure in its own metric's unit; its CSV is spreadsheet-safe."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ingest import pipeline
from perfledger import cli
from perfledger.records import RunConfig
from tests.cli_runner import run
from tests.conftest import LOGS

CLAIMS = LOGS / "claims_example.csv"


def audit_output(db_file: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert cli.main(["audit", "--format", fmt, "--db", f"duckdb:///{db_file}"]) == 0
    return capsys.readouterr().out


def test_table_rows_show_their_own_metrics_unit(seeded_db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = json.loads(audit_output(seeded_db_file, "json", capsys))
    lines = audit_output(seeded_db_file, "table", capsys).splitlines()
    assert len(lines) == len(rows)
    by_metric: dict[str, str] = {}
    for row, line in zip(rows, lines, strict=True):
        by_metric.setdefault(row["metric"], line)
        if row["metric"] != "model_tflops_per_device":
            assert "TFLOP/s" not in line, line
    assert "TFLOP/s/device" in by_metric["model_tflops_per_device"]
    assert "%" in by_metric["mfu"]
    assert " days" in by_metric["est_days_to_train_10T_tokens_1k_gpus"]
    assert by_metric["relative_throughput"].count("x") >= 2


def test_mfu_line_shows_the_fraction_as_a_percentage(seeded_db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = audit_output(seeded_db_file, "table", capsys).splitlines()
    gtc = next(line for line in lines if "gtic2023_nvidia_talk: mfu of gpt3-175b" in line)
    assert "reported 50.0%" in gtc


def test_json_lists_time_to_train_and_scaling_claims(seeded_db_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = json.loads(audit_output(seeded_db_file, "json", capsys))
    metrics = {r["metric"] for r in rows}
    assert {"time_to_train_s", "est_days_to_train_10T_tokens_1k_gpus", "scaling_efficiency",
            "relative_throughput", "mfu", "model_tflops_per_device"} <= metrics
    assert all(r["reason"] for r in rows if r["verdict"] != "consistent")


def test_figure_formats_each_unit() -> None:
    assert cli.figure(0.758, "fraction") == "75.8%"
    assert cli.figure(14.62, "x") == "14.6x"
    assert cli.figure(64800.0, "s") == "64,800.0 s"
    assert cli.figure(float("nan"), "days") == "-"


HOSTILE_SOURCE = '=HYPERLINK("http://evil.example","details")'


def formula_cells(text: str) -> list[str]:
    """The cells of a CSV a spreadsheet would run as a formula: =, @, a tab or CR first, or + or - not a number."""
    def runs(cell: str) -> bool:
        if cell[:1] in ("=", "@", "\t", "\r"):
            return True
        if cell[:1] in ("+", "-"):
            try:
                float(cell)
            except ValueError:
                return True
        return False
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row if runs(cell)]


def hostile_claims(engine: Engine) -> None:
    """The example claims under a source id that is a formula, as a claims file's author can write it."""
    lines = CLAIMS.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("metric,"))
    quoted = '"' + HOSTILE_SOURCE.replace('"', '""') + '"'
    rows = [line.replace("nv_blog_nemo_h200_2023", quoted) for line in lines[header + 1:]]
    pipeline.commit(engine, "\n".join([lines[header], *rows, ""]).encode(), "claims.csv", RunConfig())


def test_audit_csv_neutralises_a_claims_formula_as_every_csv_perfledger_writes(writable_engine: Engine) -> None:
    hostile_claims(writable_engine)
    url = writable_engine.url.render_as_string(hide_password=False)
    out = run("perfledger", "audit", "--format", "csv", "--db", url, check=True).stdout
    assert formula_cells(out) == []
    assert "'" + HOSTILE_SOURCE.replace('"', '""') in out  # kept, as text
