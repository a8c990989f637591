"""Console logs that print one line of `key: value` pairs per step, in any framework's spelling, read through the key
vocabulary (data/metric_keys.csv) by ingest/parsers/_records.py: the reader of last resort for a text log no
format of its own claims.

    step:101 - actor/pg_loss:0.019 - timing_s/step:10.62 - perf/throughput:1204.3        (verl)
    step:2/1680 train_time:166ms step_avg:82.79ms                                        (modded-nanogpt)
    iter_dt 2490.17ms; iter 2: train loss 2.83026                                        (minGPT)
    [2021-05-26 23:22:42] Ep. 1 : Up. 500 : Sen. 15,203 : Time 609.91s : 679.50 words/s  (Marian)

A pair is a name (up to four words of letters, digits, `/`, `.`, `_`, `-`, parentheses) then `:`, `=` or a space,
then a number as printed (thousands commas, a glued unit such as `ms` or `s`, `K`/`M`, `n/total`); a number
followed by a unit word (`679.50 words/s`, `267922 sec`) is read with the word as its name. A leading timestamp (`[2021-03-24 05:10:52,624 INFO]`) is the
record's `line_time`. A line is a record when the vocabulary reads a step and a training figure or a clock in it;
every other line (banners, warnings, generated text) is passed over without a word, as console noise.

Detection: a file is this format only when no format of its own claims it (`fallback`), and at least
MIN_RECORD_LINES lines of its head are records.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import ClassVar

import polars as pl

from ingest.parsers._records import StepRecords
from ingest.parsers.base import LogParser
from perfledger.errors import NoKnownNames
from perfledger.metric_keys import Vocabulary, load_vocabulary
from perfledger.records import ParseSummary, RunConfig, empty_steps
from perfledger.vocabulary import LogFormat

MIN_RECORD_LINES = 3
_NUMBER = r"[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|inf)"
_VALUE = _NUMBER + r"(?:/\d+)?(?:[A-Za-z%]+(?:/[A-Za-z]+)?)?"
_NAME = r"[A-Za-z_][\w./()%-]*(?: [A-Za-z_][\w./()%-]*){0,3}?"
_PAIR = re.compile(r"(?<![\w./-])(" + _NAME + r")(?:\s*[:=]\s*|\s+)(" + _VALUE + r")(?![\w.])")
_UNIT_AFTER = re.compile(r"(?:^|[;|:]\s*)(" + _NUMBER + r"(?:/\d+)?)\s+([A-Za-z][\w/]*)\s*(?=[;|:]|$)")
# a leading timestamp and the rest of its bracket: "[2021-03-24 05:10:52,624 INFO] ", "2024-11-26 22:09:01 - "
_TIMESTAMP = re.compile(r"^\s*(\[)?(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)(?(1)[^\]]*\])")
_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
MAX_LINE_CHARS = 16 * 1024


def line_pairs(line: str) -> dict[str, str]:
    """The `name: value` pairs of one console line, values as printed (thousands commas removed)."""
    if len(line) > MAX_LINE_CHARS:
        return {}
    pairs: dict[str, str] = {}
    if (m := _TIMESTAMP.match(line)) is not None:
        pairs["line_time"] = m.group(2).replace(",", ".")
        line = line[m.end():]
    for name, value in _PAIR.findall(line):
        pairs.setdefault(name.strip(), _plain(value))
    for value, name in _UNIT_AFTER.findall(line):
        pairs.setdefault(name, _plain(value))
    return pairs


def _plain(value: str) -> str:
    m = _THOUSANDS.match(value)
    return value if m is None else m.group(0).replace(",", "") + value[m.end():]


_RECORD_COLUMNS = frozenset({"loss", "lr", "grad_norm", "step_time_s", "interval_s", "elapsed_s", "tokens_per_s",
                             "reported_tflops_per_device", "reported_mfu", "reported_tokens_per_s_per_device"})


def is_record(pairs: dict[str, str], vocabulary: Vocabulary | None = None) -> bool:
    """Whether a line's pairs are a step as the vocabulary reads it: a step and a training figure or a clock."""
    return len(pairs) >= 2 and _names_are_record(vocabulary or load_vocabulary(), frozenset(pairs))


@functools.lru_cache(maxsize=1024)
def _names_are_record(vocabulary: Vocabulary, names: frozenset[str]) -> bool:
    columns = set(vocabulary.mapping(names).by_column)
    return "step" in columns and bool(columns & _RECORD_COLUMNS)


class KeyValueLogParser(LogParser):
    format: ClassVar[LogFormat] = LogFormat.KEY_VALUE
    fallback: ClassVar[bool] = True

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        found = 0
        for line in head.split("\n"):
            if cls.claims(line):
                found += 1
                if found >= MIN_RECORD_LINES:
                    return True
        return False

    @classmethod
    def claims(cls, line: str) -> bool:
        return is_record(line_pairs(line))

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.records = StepRecords(clock_only_steps=True)
        self.lines_read = 0

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        known, vocabulary = self.records.known, self.records.vocabulary
        rows: list[dict[str, str]] = []
        for line in lines:
            pairs = line_pairs(line)
            if is_record(pairs, vocabulary):
                rows.append({k: v for k, v in pairs.items() if known(k)})
        if not rows:
            return empty_steps()
        self.lines_read += len(rows)
        names = list(dict.fromkeys(k for row in rows for k in row))
        frame = pl.DataFrame({n: [row.get(n) for row in rows] for n in names}, schema=dict.fromkeys(names, pl.String))
        return self.records.steps(frame)

    def finish(self) -> ParseSummary:
        records = self.records
        if records.rows == 0:
            raise NoKnownNames(self.file_name, None, "no lines of `name: value` pairs with a step and a training figure "
                                                   "the key vocabulary knows; add its names with "
                                                   "`python -m perfledger keys add`")
        warnings = [n for n in (records.step_time_note(), records.set_aside_note()) if n]
        return ParseSummary(format=self.format, config=RunConfig(framework=records.framework),
                            problems=tuple(self.problems), warnings=tuple(warnings), skipped_lines=self.skipped_lines,
                            meta={"record_lines": self.lines_read} | records.meta())


PARSER = KeyValueLogParser
