"""A nightly series built from one real log: copies of a NeMo 25.04 Llama 3 8B FP8 run on 8 B200 (Google Cloud's
A4 recipe; tests/fixtures/logs/PROVENANCE.md), each dated one day later than the one before by shifting every date
the log printed, with its per-step times scaled by a small factor (the run-to-run noise of a real night) and, for
one copy, slowed by a few percent."""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "gcp_a4_b200_llama3_8b_8gpu_fp8_nemo2504.log"
NOISE = (1.0, 1.003, 0.998, 1.002, 0.999, 1.001, 0.997, 1.002)  # step-time factors of the unslowed nights
SLOWDOWN = 1.04  # the slowed night's step times, 4% longer
_DATE = re.compile(r"(?<!\d)(20\d\d-[01]\d-[0-3]\d[ T][0-2]\d:[0-5]\d:[0-5]\d)")
_STEP_TIME = re.compile(r"(train_step_timing in s\s*[=:]\s*)([0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)")


def shifted(text: str, days: int) -> str:
    """`text` with every printed date `days` later."""
    def later(m: re.Match[str]) -> str:
        sep = m.group(1)[10]
        when = datetime.strptime(m.group(1).replace("T", " "), "%Y-%m-%d %H:%M:%S") + timedelta(days=days)
        return when.strftime(f"%Y-%m-%d{sep}%H:%M:%S")
    return _DATE.sub(later, text)


def scaled(text: str, factor: float) -> str:
    """`text` with every logged step time multiplied by `factor`."""
    return _STEP_TIME.sub(lambda m: f"{m.group(1)}{float(m.group(2)) * factor:.6f}", text)


def nightly_series(folder: Path, *, nights: int = 8, slowed_night: int | None = None) -> list[Path]:
    """`nights` copies of the real log, night i dated i days after the original; `slowed_night` (if any) with its
    step times SLOWDOWN times longer. The files are named so that their names sort in night order."""
    text = LOG.read_text(encoding="utf-8")
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for night in range(nights):
        factor = NOISE[night % len(NOISE)] * (SLOWDOWN if night == slowed_night else 1.0)
        path = folder / f"night{night:02d}_{LOG.name}"
        path.write_text(scaled(shifted(text, night), factor), encoding="utf-8")
        paths.append(path)
    return paths


def ingest_series(url: str, paths: list[Path]) -> list[dict[str, object]]:
    """The logs ingested through `python -m ingest --json` into the store at `url` (the log names no model: the
    nightly job passes it); one JSON outcome per file, in order."""
    import os

    from tests.cli_runner import run

    done = run("ingest", *map(str, paths), "--model", "llama3-8b", "--json",
               env=os.environ | {"PERFLEDGER_DB_URL": url})
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


SLOWED_NIGHT = 5


def series_store(folder: Path, *, slowed_night: int | None) -> tuple[str, list[int]]:
    """A DuckDB store in `folder` loaded from data/ (the published figures a reference line reads) with the nightly
    series ingested; its URL and the run ids in night order."""
    from perfledger import store

    url = f"duckdb:///{folder / 'perfledger.duckdb'}"
    engine = store.engine_from_url(url)
    store.init_store(engine, Path(__file__).resolve().parents[2] / "data")
    engine.dispose()
    outcomes = ingest_series(url, nightly_series(folder / "logs", slowed_night=slowed_night))
    return url, [int(str(o["run_id"])) for o in outcomes]


def stored_series(factory: pytest.TempPathFactory, *, slowed_night: int | None) -> tuple[str, list[int]]:
    """series_store's store, built once per test run (every worker of it) and copied into a folder of the caller's
    own: its URL and the run ids in night order."""
    from tests.conftest import built_once

    def build(folder: Path) -> None:
        folder.mkdir()
        _, runs = series_store(folder, slowed_night=slowed_night)
        (folder / "runs.json").write_text(json.dumps(runs))

    built = built_once(factory, f"series-slowed-{slowed_night}", build)
    own = factory.mktemp("series") / "perfledger.duckdb"
    shutil.copy(built / "perfledger.duckdb", own)
    return f"duckdb:///{own}", [int(run) for run in json.loads((built / "runs.json").read_text())]
