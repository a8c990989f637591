"""`python -m perfledger check` on a nightly series of real logs ingested through `python -m ingest`: the night
slowed by 4% exits 1 naming what moved, by how much and against which runs; every other night, and every night of
the unslowed series, exits 0; bad input exits 2. The same check on PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from perfledger import cli
from tests.cli_runner import run
from tests.history.series import SLOWED_NIGHT, ingest_series, nightly_series, stored_series

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def slowed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[int]]:
    return stored_series(tmp_path_factory, slowed_night=SLOWED_NIGHT)


@pytest.fixture(scope="module")
def steady(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[int]]:
    return stored_series(tmp_path_factory, slowed_night=None)


def check(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run("perfledger", "check", *args, env=os.environ | {"PERFLEDGER_DB_URL": url})


def test_the_slowed_night_exits_1_and_says_which_figures_moved_and_against_which_runs(
        slowed: tuple[str, list[int]]) -> None:
    url, runs = slowed
    done = check(url, str(runs[SLOWED_NIGHT]))
    assert done.returncode == 1, done.stdout + done.stderr
    before = ", ".join(map(str, runs[SLOWED_NIGHT - 5:SLOWED_NIGHT]))
    assert "REGRESSION Tokens/s/device" in done.stdout
    assert "REGRESSION Step time (s)" in done.stdout
    assert f"against runs {before}" in done.stdout


def test_the_report_as_json_gives_each_figure_its_baseline_and_change(slowed: tuple[str, list[int]],
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    url, runs = slowed
    assert cli.main(["check", str(runs[SLOWED_NIGHT]), "--json", "--db", url]) == 1
    report = json.loads(capsys.readouterr().out)
    figures = {f["metric"]: f for f in report["runs"][0]["figures"]}
    assert report["verdict"] == "regression"
    assert 3.5 < figures["tokens_per_s_per_device"]["worse_pct"] < 4.5  # 1 - 1/1.04 = 3.85%, less the noise
    assert 3.5 < figures["step_time_s"]["worse_pct"] < 4.5
    assert figures["mfu"]["regressed"] and figures["step_time_s"]["against"] == runs[SLOWED_NIGHT - 5:SLOWED_NIGHT]


def test_the_other_nights_of_the_slowed_series_pass(slowed: tuple[str, list[int]]) -> None:
    url, runs = slowed
    codes = [cli.main(["check", str(r), "--db", url]) for r in runs]
    assert [i for i, code in enumerate(codes) if code != 0] == [SLOWED_NIGHT]


def test_every_night_of_the_unslowed_series_passes(steady: tuple[str, list[int]]) -> None:
    url, runs = steady
    assert [cli.main(["check", str(r), "--db", url]) for r in runs] == [0] * len(runs)
    last = check(url, str(runs[-1]))
    assert last.returncode == 0 and "pass: within 2% of its configuration's recent history" in last.stdout


def test_against_a_named_run_compares_with_that_run_alone(slowed: tuple[str, list[int]],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    url, runs = slowed
    assert cli.main(["check", str(runs[SLOWED_NIGHT]), "--against", str(runs[0]), "--db", url]) == 1
    assert f"against run {runs[0]}" in capsys.readouterr().out
    assert cli.main(["check", str(runs[SLOWED_NIGHT]), "--against", str(runs[0]), "--threshold", "5",
                     "--db", url]) == 0


@pytest.mark.parametrize(("args", "said"), [
    (["abc"], "'abc' is neither a run id"),
    (["999999"], "there is no run 999999"),
    (["1", "--threshold", "-3"], "the threshold is a percentage"),
    (["1", "--against", "999999"], "there is no run 999999"),
])
def test_bad_input_exits_2_with_one_sentence(slowed: tuple[str, list[int]], args: list[str], said: str) -> None:
    done = check(slowed[0], *[a if a != "1" else str(slowed[1][1]) for a in args])
    assert done.returncode == 2
    assert said in done.stderr and "Traceback" not in done.stderr


def test_a_run_with_no_steady_state_figure_is_bad_input(tmp_path: Path) -> None:
    url = f"duckdb:///{tmp_path / 'claims.duckdb'}"
    claims = ROOT / "tests" / "fixtures" / "logs" / "claims_example.csv"  # a claims file: published rows, no steps
    stored = run("ingest", str(claims), "--json", env=os.environ | {"PERFLEDGER_DB_URL": url})
    assert stored.returncode == 0, stored.stderr
    done = check(url, str(json.loads(stored.stdout.splitlines()[0])["run_id"]))
    assert done.returncode == 2 and "has no steady-state figure to check" in done.stderr


@pytest.mark.postgres
def test_the_check_flags_the_slowed_night_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    assert cli.main(["init", "--db", pg_url]) == 0
    outcomes = ingest_series(pg_url, nightly_series(tmp_path / "logs", slowed_night=SLOWED_NIGHT))
    runs = [int(str(o["run_id"])) for o in outcomes]
    assert check(pg_url, str(runs[SLOWED_NIGHT])).returncode == 1
    assert check(pg_url, str(runs[SLOWED_NIGHT + 1])).returncode == 0
    assert check(pg_url, str(runs[-1]), "--against", str(runs[0])).returncode == 0




def _campaign_store(folder: Path, slowed_night: int | None) -> tuple[str, int]:
    """The nightly series imported as one campaign (`python -m ingest DIR`); the store's URL and the campaign id."""
    from perfledger import store

    url = f"duckdb:///{folder / 'perfledger.duckdb'}"
    store.init_store(store.engine_from_url(url), ROOT / "data")
    nightly_series(folder / "nights", slowed_night=slowed_night)
    done = run("ingest", str(folder / "nights"), "--model", "llama3-8b", "--json",
               env=os.environ | {"PERFLEDGER_DB_URL": url})
    assert done.returncode == 0, done.stderr
    last = json.loads(done.stdout.strip().splitlines()[-1])
    return url, int(last["campaign"]["id"])


@pytest.mark.parametrize("slowed_night", [SLOWED_NIGHT, None])
def test_a_campaign_is_checked_run_by_run_and_fails_only_with_its_slowed_night(
        tmp_path: Path, slowed_night: int | None) -> None:
    url, campaign_id = _campaign_store(tmp_path, slowed_night)
    done = check(url, f"campaign:{campaign_id}", "--json")
    report = json.loads(done.stdout)
    assert len(report["runs"]) == 8
    flagged = [i for i, r in enumerate(report["runs"]) if any(f["regressed"] for f in r["figures"])]
    assert (done.returncode, flagged) == ((1, [SLOWED_NIGHT]) if slowed_night else (0, [])), done.stderr


def test_an_unknown_campaign_is_a_usage_error(slowed: tuple[str, list[int]]) -> None:
    done = check(slowed[0], "campaign:999")
    assert done.returncode == 2 and "there is no campaign 999" in done.stderr
