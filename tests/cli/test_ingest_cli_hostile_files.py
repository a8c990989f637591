"""python -m ingest given what is not a log file: a FIFO, a device or a folder is refused at once, a gzip bomb
past the size limit is refused, and a file name with control characters is printed and stored escaped."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from ingest import __main__ as cli
from ingest.streams import open_regular, printable
from perfledger import store
from perfledger.errors import ParseError
from tests.cli_runner import run
from tests.conftest import LOGS

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"


def ingest(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run("ingest", *args, env=os.environ | env)


def test_a_fifo_is_refused_within_a_second_with_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(ParseError, match=r"log\.fifo: not a regular file$"):
        open_regular(fifo, str(fifo))
    assert time.monotonic() - started < 1.0
    db = f"duckdb:///{tmp_path / 's.duckdb'}"
    codes: list[int] = []
    runner = threading.Thread(target=lambda: codes.append(cli.main([str(fifo), "--db", db])), daemon=True)
    runner.start()
    runner.join(timeout=60)  # the whole command, store set-up included; an open that blocked would never end
    assert codes == [1]
    assert capsys.readouterr().err == f"{fifo}: not a regular file\n"


@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "empty folder"])
def test_what_is_not_a_regular_file_is_refused_and_the_others_still_stored(tmp_path: Path, target: str) -> None:
    if target == "fifo":
        os.mkfifo(path := tmp_path / "log.fifo")
    elif target == "empty folder":  # a folder is a campaign: one with nothing in it is refused
        (path := tmp_path / "logs").mkdir()
    else:
        path = Path(target)
    db = f"duckdb:///{tmp_path / 's.duckdb'}"
    out = ingest(str(path), str(MEGATRON), "--db", db, "--json")
    assert out.returncode == 1
    why = "the folder holds no file to import" if target == "empty folder" else "not a regular file"
    assert out.stderr == f"{path}: {why}\n"
    printed = [json.loads(line) for line in out.stdout.splitlines()]  # one object per file, the refused one too
    assert [o["file"] for o in printed if o["format"]] == [str(MEGATRON)]
    assert [o["run_id"] for o in printed if not o["format"]] == [None] and len(printed) == 2


def _bomb(folder: Path) -> Path:
    """The log's head, then 64 gzip members of 1 MiB of zeros each: 64 MiB once gunzipped, 70 KB on disk."""
    bomb = folder / "bomb.log.gz"
    bomb.write_bytes(gzip.compress(MEGATRON.read_bytes()[:20_000]) + gzip.compress(bytes(2**20), 9) * 64)
    return bomb


def test_a_gzip_bomb_is_refused_past_the_uploads_size_limit(tmp_path: Path) -> None:
    bomb, db = _bomb(tmp_path), f"duckdb:///{tmp_path / 's.duckdb'}"
    by_setting = ingest(str(bomb), "--db", db, PERFLEDGER_MAX_UPLOAD_MB="16")
    by_flag = ingest(str(bomb), "--db", db, "--max-mb", "8")
    assert by_setting.returncode == by_flag.returncode == 1
    assert by_setting.stderr == f"{bomb}: larger than the 16 MiB limit once decompressed; nothing was stored\n"
    assert by_flag.stderr == f"{bomb}: larger than the 8 MiB limit once decompressed; nothing was stored\n"
    assert store.counts(store.engine_from_url(db))["run"] == 0


NASTY = "run\n\x1b[31mred\x1b[0m\r\x07\u202egol.out"
SHOWN = "run\\n\\x1b[31mred\\x1b[0m\\r\\x07\\u202egol.out"


def test_printable_escapes_control_and_invisible_characters() -> None:
    assert printable(NASTY) == SHOWN
    assert printable("plain name (1).log") == "plain name (1).log"
    assert printable("tab\there") == "tab\\there" and printable("bad\udcffbyte") == "bad\\udcffbyte"


def test_file_names_are_printed_and_stored_escaped(tmp_path: Path) -> None:
    good, bad = tmp_path / NASTY, tmp_path / ("bad" + NASTY)
    good.write_bytes(MEGATRON.read_bytes())
    bad.write_bytes(b"\x00\x01 not a log\n" * 100)
    db = f"duckdb:///{tmp_path / 's.duckdb'}"
    as_json = ingest(str(good), str(bad), "--db", db, "--json")
    as_text = ingest(str(good), "--db", db)
    for out in (as_json, as_text):
        printed = out.stdout + out.stderr
        assert "\x1b" not in printed and "\r" not in printed and "\x07" not in printed and "\u202e" not in printed
    stored, refused = (json.loads(line) for line in as_json.stdout.splitlines())
    assert stored["file"] == f"{tmp_path}/{SHOWN}" and refused["file"] == f"{tmp_path}/bad{SHOWN}"
    assert "\x1b" not in refused["error"] and refused["error"].startswith(f"{tmp_path}/bad{SHOWN}: ")
    assert as_json.stderr.startswith(f"{tmp_path}/bad{SHOWN}: ") and as_json.stderr.count("\n") == 1
    assert as_text.stdout.startswith(f"{tmp_path}/{SHOWN}: megatron")
    run_id = stored["run_id"]
    row = store.run(store.engine_from_url(db), run_id)
    assert row is not None and row.file_name == SHOWN
