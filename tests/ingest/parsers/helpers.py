"""Feeding parsers in tests: a fixture the way the pipeline does (clean line chunks, then finish()), a text, or
lines in small chunks; and a Megatron iteration line to build logs from."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from sqlalchemy import Engine

from ingest.parsers.base import LogParser
from ingest.pipeline import ingest_bytes
from ingest.text import iter_line_chunks
from perfledger import store
from perfledger.records import ParseSummary

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "logs"


def parse_with(parser_cls: type[LogParser], path: Path, *,
               chunk_bytes: int = 64 * 1024) -> tuple[ParseSummary, pl.DataFrame]:
    parser = parser_cls(path.name)
    frames = []
    with path.open("rb") as stream:
        for first_lineno, lines in iter_line_chunks(stream, chunk_bytes=chunk_bytes):
            frames.append(parser.feed(lines, first_lineno))
    summary = parser.finish()
    steps = pl.concat(frames) if frames else pl.DataFrame()
    return summary, steps


def parse_text(parser_cls: type[LogParser], text: str,
               file_name: str = "input.txt") -> tuple[ParseSummary, pl.DataFrame]:
    parser = parser_cls(file_name)
    lines = text.split("\n")
    frame = parser.feed(lines, 1)
    return parser.finish(), frame


def megatron_line(step: int, loss: str = "2.5E+00", prefix: str = "") -> str:
    return (f"{prefix} [2026-04-15 11:19:02] iteration {step:8d}/     500 | consumed samples: {step * 8:12d} | "
            f"elapsed time per iteration (ms): 1500.0 | throughput per GPU (TFLOP/s/GPU): 100.0 | learning rate: "
            f"1.000000E-04 | global batch size:     8 | lm loss: {loss} | loss scale: 1.0 | grad norm: 1.000 | "
            f"number of skipped iterations:   0 | number of nan iterations:   0 |")


def run_lines(parser_cls: type[LogParser], lines: list[str], chunk: int = 3) -> tuple[ParseSummary, pl.DataFrame]:
    """lines fed `chunk` at a time, numbered from 1; then finish()."""
    parser = parser_cls("t.log")
    frames = [parser.feed(lines[i:i + chunk], i + 1) for i in range(0, len(lines), chunk)]
    return parser.finish(), pl.concat(frames)


def stored_step_time(engine: Engine, raw: bytes, name: str) -> float:
    """The median step time `raw` is stored with, read back from the store."""
    outcome = ingest_bytes(engine, raw, name)
    assert outcome.run_id is not None
    run = store.run(engine, outcome.run_id)
    assert run is not None and run.summary is not None
    return float(run.summary["step_time_s_median"])
