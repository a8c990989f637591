"""Who may write: PERFLEDGER_READ_ONLY switches every write off; PERFLEDGER_UPLOAD_TOKEN guards the upload."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from ingest.pipeline import ingest_path
from perfledger import store
from perfledger.errors import ReadOnlyStore
from tests.conftest import DATA_DIR, LOGS, ROOT

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"


def cli(module: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=os.environ | env)


def test_read_only_store_refuses_every_write_and_still_reads(seeded_store: Engine,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    before = store.counts(seeded_store)
    monkeypatch.setenv("PERFLEDGER_READ_ONLY", "1")
    writes: dict[str, Callable[[], object]] = {
        "init": lambda: store.init_store(seeded_store, DATA_DIR),
        "ingest": lambda: ingest_path(seeded_store, MEGATRON),
        "add_results": lambda: store.add_results(seeded_store, []),
        "delete": lambda: store.delete_run(seeded_store, 1),
        "rebuild": lambda: store.rebuild_store(seeded_store, DATA_DIR),
    }
    for write in writes.values():
        with pytest.raises(ReadOnlyStore, match=r"is read-only here \(PERFLEDGER_READ_ONLY=1\)"):
            write()
    assert store.counts(seeded_store) == before and store.results(seeded_store).height == before["result"]


def test_read_only_cli_init_and_ingest_exit_1_with_a_sentence(seeded_db_file: Path, tmp_path: Path) -> None:
    shutil.copy(seeded_db_file, tmp_path / "ro.duckdb")
    url = f"duckdb:///{tmp_path / 'ro.duckdb'}"
    before = store.counts(store.engine_from_url(url))
    for module, args in (("perfledger", ("init", "--db", url)), ("ingest", (str(MEGATRON), "--db", url))):
        out = cli(module, *args, PERFLEDGER_READ_ONLY="1")
        assert out.returncode == 1, (module, out.stdout, out.stderr)
        assert out.stderr.startswith("error: the store ") and "is read-only here" in out.stderr
        assert "Traceback" not in out.stderr
    assert store.counts(store.engine_from_url(url)) == before


def _fingerprints(*folders: Path) -> dict[str, bytes]:
    return {str(path): path.read_bytes() for folder in folders for path in sorted(folder.rglob("*")) if path.is_file()}


def test_read_only_means_no_cli_command_writes_the_store_or_a_data_file(seeded_db_file: Path, tmp_path: Path) -> None:
    """Every command that writes, run as a user would with PERFLEDGER_READ_ONLY=1: a sentence, exit 1 or 2, and
    every byte of the store and of the data folder as it was (`keys add` appended to metric_keys.csv)."""
    data, stored = tmp_path / "data", tmp_path / "stored"
    shutil.copytree(DATA_DIR, data, ignore=shutil.ignore_patterns("logs"))
    stored.mkdir()
    shutil.copy(seeded_db_file, stored / "ro.duckdb")
    url = f"duckdb:///{stored / 'ro.duckdb'}"
    rules = tmp_path / "rules.csv"
    rules.write_text("benchmark,problem,runs,dropped_each_end,max_non_converged,source,locator\n"
                     "new_bench,A new benchmark,10,1,1,mlcommons/training_policies training_rules.adoc,Results\n")
    keys = tmp_path / "keys.csv"
    keys.write_text("framework,key,column,unit,requires,identifies,note\n*,my/step_time,step_time_s,s,,,\n")
    writes = [("perfledger", "keys", "add", "my/tokens", "tokens", "count"), ("perfledger", "keys", "add", str(keys)),
              ("perfledger", "catalog", "rules", "add", str(rules)),
              ("perfledger", "catalog", "add", str(data / "models.csv"), "--db", url),
              ("perfledger", "catalog", "link", "A100", "a100-80gb", "--db", url),
              ("perfledger", "init", "--db", url, "--data", str(data)), ("perfledger", "rebuild", "--db", url),
              ("perfledger", "delete", "--source", "my_bench", "--db", url),
              ("perfledger", "copy", "--from", url, "--to", f"duckdb:///{tmp_path / 'copy.duckdb'}"),
              ("ingest", str(MEGATRON), "--db", url), ("ingest", str(LOGS.parent / "campaigns" /
                                                                "bigscience_gpt2_meg_base_sweep"), "--db", url)]
    before = _fingerprints(data, stored)
    for module, *args in writes:
        out = cli(module, *args, PERFLEDGER_READ_ONLY="1", PERFLEDGER_DATA_DIR=str(data))
        assert out.returncode in (1, 2) and "read-only" in out.stderr and "Traceback" not in out.stderr, (args, out)
    assert _fingerprints(data, stored) == before
    assert not (tmp_path / "copy.duckdb").exists()


# ------------------------------------------------------------------------------------- upload token (page)

def _runs_page(monkeypatch: pytest.MonkeyPatch, url: str, token: str | None) -> object:
    from streamlit.testing.v1 import AppTest

    from screens import PAGES

    monkeypatch.setenv("PERFLEDGER_DB_URL", url)
    if token is not None:
        monkeypatch.setenv("PERFLEDGER_UPLOAD_TOKEN", token)
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=30)
    return at.switch_page(next(p.file for p in PAGES if p.slug == "runs")).run()


def _uploaders(at: object) -> list[object]:
    return list(at.get("file_uploader"))  # type: ignore[attr-defined]


@pytest.fixture
def seeded_url(seeded_db_file: Path, tmp_path: Path) -> str:
    shutil.copy(seeded_db_file, tmp_path / "page.duckdb")
    return f"duckdb:///{tmp_path / 'page.duckdb'}"


def test_upload_needs_the_token_when_one_is_set(seeded_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    at = _runs_page(monkeypatch, seeded_url, "s3cret-token")
    assert not at.exception and not _uploaders(at)  # type: ignore[attr-defined]
    box = at.text_input(key="ru_tok")  # type: ignore[attr-defined]
    box.input("wrong").run()
    assert not at.exception and not _uploaders(at)  # type: ignore[attr-defined]
    box.input("s3cret-token").run()
    assert not at.exception and _uploaders(at)  # type: ignore[attr-defined]


def test_upload_is_open_without_a_token_and_hidden_when_read_only(seeded_url: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    assert _uploaders(_runs_page(monkeypatch, seeded_url, None))
    monkeypatch.setenv("PERFLEDGER_READ_ONLY", "1")
    at = _runs_page(monkeypatch, seeded_url, None)
    assert not at.exception and not _uploaders(at)  # type: ignore[attr-defined]


def test_a_non_ascii_token_attempt_is_refused_not_a_crash(seeded_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    at = _runs_page(monkeypatch, seeded_url, "s3cret-token")
    at.text_input(key="ru_tok").input("pässwörd").run()  # type: ignore[attr-defined]
    assert not at.exception and not _uploaders(at)  # type: ignore[attr-defined]


def _run_page(monkeypatch: pytest.MonkeyPatch, url: str, token: str | None, run_id: int) -> object:
    at = _runs_page(monkeypatch, url, token)
    at.query_params["run"] = str(run_id)  # type: ignore[attr-defined]
    return at.run()  # type: ignore[attr-defined]


def test_deleting_a_run_needs_the_token_and_a_confirmation_and_removes_it(seeded_url: str,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    engine = store.engine_from_url(seeded_url)
    run_id = ingest_path(engine, MEGATRON).run_id
    assert run_id is not None
    at = _run_page(monkeypatch, seeded_url, "s3cret-token", run_id)
    assert not at.exception and not at.get("button")  # type: ignore[attr-defined]
    at.text_input(key="ru_del_tok").input("s3cret-token").run()  # type: ignore[attr-defined]
    delete = at.button(key="ru_del")  # type: ignore[attr-defined]
    assert delete.disabled
    at.checkbox(key="ru_del_ok").check().run()  # type: ignore[attr-defined]
    at.button(key="ru_del").click().run()  # type: ignore[attr-defined]
    assert not at.exception  # type: ignore[attr-defined]
    assert store.run(engine, run_id) is None and store.steps(engine, run_id).height == 0


def test_delete_is_hidden_when_read_only(seeded_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    run_id = ingest_path(store.engine_from_url(seeded_url), MEGATRON).run_id
    assert run_id is not None
    monkeypatch.setenv("PERFLEDGER_READ_ONLY", "1")
    at = _run_page(monkeypatch, seeded_url, None, run_id)
    assert not at.exception and not [e for e in at.get("expandable") if "Delete" in str(e.label)]  # type: ignore[attr-defined]


def test_each_wrong_token_doubles_the_wait_before_the_next_check_up_to_30_s() -> None:
    from perfledger.wrong_tokens import backoff_s

    assert [backoff_s(n) for n in range(9)] == [0, 1, 2, 4, 8, 16, 30, 30, 30]
    assert backoff_s(10**6) == 30


def _errors(at: object) -> list[str]:
    return [e.value for e in at.error]  # type: ignore[attr-defined]


def test_wrong_tokens_are_slowed_down_and_a_right_one_resets_the_wait(seeded_url: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from perfledger import wrong_tokens

    server = wrong_tokens.WrongTokens(first_s=0.5)
    monkeypatch.setattr(wrong_tokens, "SERVER", server)
    at: Any = _runs_page(monkeypatch, seeded_url, "s3cret-token")
    box = at.text_input(key="ru_tok")
    not_before = 0.0  # when the wait the last wrong token set ends
    for n, typed in enumerate(["wrong-1", "wrong-2", "wrong-3"], start=1):
        box.input(typed).run()
        assert time.monotonic() >= not_before  # this try was checked only once the wait had passed
        assert not at.exception and not _uploaders(at)
        wait = 0.5 * 2 ** (n - 1)
        assert _errors(at) == [f"Wrong upload token ({n} in a row); the next one is checked after {wait:g} s."]
        not_before = server.until
        assert not_before - time.monotonic() <= wait
    at.run()  # a rerun with the same wrong token in the box is not another try
    assert _errors(at) == ["Wrong upload token (3 in a row)."] and server.wrong == 3
    box.input("s3cret-token").run()
    assert time.monotonic() >= not_before and _uploaders(at) and not _errors(at)
    box.input("wrong-4").run()
    assert _errors(at) == ["Wrong upload token (1 in a row); the next one is checked after 0.5 s."]
