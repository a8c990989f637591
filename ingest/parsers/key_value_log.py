"""Console logs of any framework, read line by line through the key vocabulary (data/metric_keys.csv) and the
framework rows (data/frameworks.csv): nanoGPT's `iter 10: loss 2.3, time 123ms`, llm.c's `s:10 trl:3.2`,
MaxText's `completed step: 9, seconds: 5.667, ...`, Composer's `[batch=20/20]:` blocks, Hugging Face Trainer's
printed dicts and progress bars, verl's `step:101 - actor/pg_loss:0.019 - timing_s/step:10.62`, and whatever else
prints named values. What a line holds is read by ingest/parsers/_console.py; this reader makes records of them:

- a line with a step and a training figure (or a clock) is a record;
- a line with a step and nothing else opens a block (`[batch=20/20]:`, `Train step 3/100 done.`): the lines that
  follow it in the block's own form (a box-drawn table's rows, lines that carry the framework's line prefix, as
  Composer's `Train <name>: <value>`, lines indented under it, as OLMo's `    train/Perplexity=45,773`) add their
  values to it; any other line closes it;
- a progress bar's frame is a record when its description or postfix holds a training figure (torchtune's
  `1|51|Loss: 1.23`); otherwise it says where the training bar is (the one with the largest total) and how long
  it has run, and a record without a step of its own (a printed `{'loss': ...}` dict) takes them;
- a line of run totals without a step (`train_runtime = 0:15:19.02`, `{'train_runtime': ..., 'train_samples_per_
  second': ...}`) adds to the run's end-of-run summary, whose rates are the log's own results; a line with a loss
  and no step otherwise (a printed dict) is a record at the training bar's position;
- a record with no step anywhere is numbered in order, times the `logging_steps` the log states.

A framework's `line_prefix` (Composer's `Train `) is removed first; carriage-return frames inside a line are read
one by one. Every other line (banners, warnings, generated text) is passed over without a word, as console noise.
The lines worth reading are found by one Polars search per chunk, on the pipeline's reader threads.

Detection: a file is this format only when no format of its own claims it (`fallback`), and its head holds a line
a framework row recognises, or at least MIN_RECORD_LINES records.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import ClassVar

import polars as pl

from ingest.parsers import _console_frames as columnar
from ingest.parsers._console import Plan, Shapes, is_table_row, line_pairs, line_spans, pairs_of
from ingest.parsers._records import LINE, TRAINING, StepRecords
from ingest.parsers.base import LogParser
from perfledger.errors import NoKnownNames
from perfledger.frameworks import Frameworks, load_frameworks
from perfledger.metric_keys import Vocabulary, load_vocabulary
from perfledger.records import ParseSummary, ResultRecord, RunConfig, empty_steps
from perfledger.vocabulary import LogFormat

__all__ = ["KeyValueLogParser", "is_record", "line_pairs", "pairs_of"]
MIN_RECORD_LINES = 3
_CLOCKS = ("interval_s", "elapsed_s")
_RECORD_COLUMNS = frozenset({*TRAINING, *_CLOCKS, "tokens_per_s"})
_EVIDENCE = _RECORD_COLUMNS - {"lr", "grad_norm"}  # what makes a line evidence of a console log of records
_SUMMARY = frozenset({"summary", "samples_per_s", "tokens_per_s"})  # a stepless line of these: the run's totals
_PROGRESS = ("progress/n", "progress/elapsed", "progress/it_per_s", "progress/s_per_it")
_GRAMMAR = LogFormat.KEY_VALUE.value
_POSITIONS = frozenset({"step", "samples_total", "tokens_total"})  # where in training a record is
Prepared = tuple[list[str], columnar.Chunk | None, list[int]]  # lines worth reading, in columns, their numbers


def is_record(pairs: dict[str, str], vocabulary: Vocabulary | None = None) -> bool:
    """Whether a line's pairs are a step as the vocabulary reads it: a position (a step, or the samples or tokens
    so far: "train stats after 128 examples: {...}") and a training figure or a clock."""
    columns = _columns(vocabulary or load_vocabulary(), frozenset(pairs), ())
    return len(pairs) >= 2 and bool(columns & _POSITIONS) and bool(columns & _RECORD_COLUMNS)


@functools.lru_cache(maxsize=4096)
def _columns(vocabulary: Vocabulary, names: frozenset[str], frameworks: tuple[str, ...]) -> frozenset[str]:
    return frozenset(vocabulary.mapping(names, frameworks).by_column)


@functools.lru_cache(maxsize=4)
def _search(vocabulary: Vocabulary, frameworks: Frameworks) -> str:
    """One Rust regex finding every line worth reading: a known name before a separator or after a number, a
    progress bar, a printed dict, a table row, or a line a framework row recognises."""
    keys = sorted({re.escape(row.key).replace(r"\*", r"[^\s:=]*") for row in vocabulary.rows}, key=len, reverse=True)
    alternation = "|".join(keys)
    parts = [rf"(?:^|[^\w./-])(?:{alternation})['\"]?\s*(?:[:=│|]|\s[-+.\d])", rf"\d\s+(?:{alternation})",
             r"\d+/\d+ \[[\d:]+<", r"\{['\"]", "│", *(row.recognise.pattern for row in frameworks.grammar_rows(_GRAMMAR))]
    return "|".join(f"(?:{p})" for p in parts)


class KeyValueLogParser(LogParser):
    format: ClassVar[LogFormat] = LogFormat.KEY_VALUE
    fallback: ClassVar[bool] = True

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        lines = head.split("\n")
        if load_frameworks().recognised(lines, _GRAMMAR):
            return True
        vocabulary = load_vocabulary()  # once: it looks at the data folder for a user's rows each time
        return sum(1 for line in _with_indented(lines) if is_record(line_pairs(line), vocabulary)) >= MIN_RECORD_LINES

    @classmethod
    def claims(cls, line: str) -> bool:
        """A line a framework row recognises, or a record with a loss, a clock or a speed (a step and a learning rate
        alone is another format's line as often: DeepSpeed's `[Rank 0] step=10, skipped=0, lr=[...]`); not a JSON
        line (the record reader's)."""
        return cls.claimer()(line)

    @classmethod
    def claimer(cls) -> Callable[[str], bool]:
        frameworks, vocabulary = load_frameworks(), load_vocabulary()

        def claims(line: str) -> bool:
            if line.lstrip().startswith('{"'):
                return False
            if frameworks.recognises(line, _GRAMMAR):
                return True
            pairs = line_pairs(line)
            return is_record(pairs, vocabulary) and bool(_columns(vocabulary, frozenset(pairs), ()) & _EVIDENCE)
        return claims

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.frameworks = load_frameworks()
        self.records = StepRecords(clock_only_steps=True)
        self.prefixes: tuple[re.Pattern[str], ...] | None = None  # the recognised frameworks' line prefixes
        self.block: dict[str, str] | None = None  # the record a step-only line opened, still taking values
        self.block_indent = 0  # how far its first line is indented
        self.bars: dict[int, dict[str, str]] = {}  # each progress bar's last frame, by its total
        self.summary: dict[str, str] = {}  # the run's totals, first printing of each kept
        self.summary_lines = 0
        self.lines_read = 0
        self.numbered = 0  # records with no step anywhere, numbered in order
        self.lineno = 0  # the line being read (line by line), which a record it starts is given
        self._tail = empty_steps()
        self.shapes = Shapes(self._named)
        self.plans: dict[str, tuple[Plan, str]] = {}  # each shape's plan and what its lines are (_console_frames)

    def look(self, head: str) -> None:
        """The frameworks the head's lines worth reading are recognised as, and their line prefixes (before any
        chunk is prepared: a chunk is prepared ahead of the one being read, with the prefixes known)."""
        if self.prefixes is None:
            self._recognise(self.prepare(head.split("\n"), 1)[0])

    def prepare(self, lines: Sequence[str], first_lineno: int) -> Prepared:
        """The chunk's lines worth reading (found by Polars, no parser state read), the same in columns, and their
        line numbers."""
        series = pl.Series(lines, dtype=pl.String)
        found = series.str.contains(_search(self.records.vocabulary, self.frameworks))
        kept = series.filter(found).to_list()
        numbers = (pl.int_range(first_lineno, first_lineno + len(lines), eager=True).filter(found).to_list()
                   if lines else [])
        return kept, columnar.shaped(kept, self.prefixes, numbers) if self.prefixes is not None else None, numbers

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        if first_lineno == 1:
            self.look("\n".join(lines))
        return self.feed_prepared(self.prepare(lines, first_lineno))

    def feed_prepared(self, prepared: Prepared) -> pl.DataFrame:
        lines, chunk, numbers = prepared
        if self.prefixes is None:
            self._recognise(lines)
        if chunk is not None and (found := self._columnar(chunk)) is not None:
            return self._steps(found)
        rows: list[dict[str, str]] = []
        for line, self.lineno in zip(lines, numbers, strict=True):
            for frame in line.split("\r") if "\r" in line else (line,):
                text = self._unprefixed(frame)
                self._frame(text, rows, continues=text is not frame or is_table_row(text) or self._under_block(text))
        return self._steps(rows)

    def _columnar(self, chunk: columnar.Chunk) -> list[dict[str, str]] | None:
        """The chunk's records read in columns (see _console_frames), or None: read it line by line."""
        firsts = chunk.frame.unique("shape", keep="first", maintain_order=True)
        for shape, text in zip(firsts["shape"].to_list(), firsts["text"].to_list(), strict=True):
            if shape not in self.plans:
                self.plans[shape] = self._plan(text)
        lines = columnar.values(chunk, self.plans)
        found = columnar.blocks(lines, self.block, _merge) if lines is not None else None
        if found is None:
            return None
        rows, self.block = found
        self.block_indent = 0
        return rows

    def _plan(self, text: str) -> tuple[Plan, str]:
        """A shape's plan, from one of its lines, and what its lines are: a record, a block's first line, plain
        pairs, or nothing kept."""
        plan = self.shapes.plan(text, line_spans(text))
        names = {name for name, _, _ in plan or ()}
        if plan is not None and names <= {"line_time"}:
            return plan, columnar.NOTHING
        columns = self._columns(dict.fromkeys(names, ""))
        own = self._columns(dict.fromkeys((n for n in names if not n.startswith("progress/")), ""))
        if plan is None or "progress/n" in names:
            return plan, "other"
        if "step" in columns:
            return plan, columnar.RECORD if own & _RECORD_COLUMNS else columnar.HEADER
        return plan, columnar.PAIRS

    def _recognise(self, head: list[str]) -> None:
        found = tuple(self.frameworks.recognised(head, _GRAMMAR))
        self.records.frameworks = found
        self.prefixes = tuple(row.line_prefix for f in found for row in self.frameworks.of(f)
                              if row.grammar == _GRAMMAR and row.line_prefix is not None)

    def _unprefixed(self, frame: str) -> str:
        for prefix in self.prefixes or ():
            if (m := prefix.match(frame)) is not None:
                return frame[m.end():]
        return frame

    def _under_block(self, text: str) -> bool:
        """A line indented deeper than the open block's first line (OLMo's `[step=2/739328]` then
        `    train/Perplexity=45,773`): the block's own."""
        return self.block is not None and text.strip() != "" and _indent(text) > self.block_indent

    def _named(self, name: str) -> str | None:
        """The name a printed name is kept as: itself when the vocabulary knows it; an unknown name of several words
        without its leading words ("Train loss/train/total" as "loss/train/total"); None when not kept."""
        words = name.split(" ")
        return next((n for n in (" ".join(words[i:]) for i in range(len(words))) if self.records.known(n)), None)

    def _frame(self, text: str, rows: list[dict[str, str]], *, continues: bool) -> None:
        pairs = self.shapes.pairs(text)
        if not pairs or set(pairs) <= {"line_time"}:
            return
        if not continues:
            self._close(rows)
        columns = self._columns(pairs)
        own = self._columns({k: v for k, v in pairs.items() if not k.startswith("progress/")})
        has_figure = bool(own & _RECORD_COLUMNS)
        if "progress/n" in pairs:
            self._bar(pairs, has_figure, rows)
        elif "step" in columns:
            self._close(rows)
            if has_figure:
                rows.append(pairs | self._line())
            else:
                self.block, self.block_indent = pairs | self._line(), _indent(text)
        elif self.block is not None:
            for name, value in pairs.items():
                self.block.setdefault(name, value)
        elif "summary" in columns or self.summary or (columns <= _SUMMARY | {"wall_time", "-"} and columns & _SUMMARY):
            self.summary_lines += 1
            for name, value in pairs.items():
                self.summary.setdefault(name, value)
        elif "loss" in own:
            rows.append(pairs | self._bar_position() | self._line())

    def _columns(self, pairs: dict[str, str]) -> frozenset[str]:
        return _columns(self.records.vocabulary, frozenset(pairs), self.records.frameworks)

    def _bar(self, pairs: dict[str, str], has_figure: bool, rows: list[dict[str, str]]) -> None:
        total = int(pairs.get("progress/total") or 0)
        # a bar that ran to its end before this one drew (loading weights, a dataset map, an evaluation) is over:
        # it is not the training bar, however large its total (transformers 5 counts tensors: "427/427")
        self.bars = {t: bar for t, bar in self.bars.items() if t == total or not _finished(bar)}
        self.bars[total] = pairs
        if has_figure:
            self._close(rows)
            rows.append(pairs | self._line())

    def _line(self) -> dict[str, str]:
        return {LINE: str(self.lineno)}

    def _bar_position(self) -> dict[str, str]:
        """Where the training bar (the largest total) is, for a record that prints no step of its own."""
        if not self.bars:
            return {}
        last = self.bars[max(self.bars)]
        return {k: last[k] for k in _PROGRESS if k in last}

    def _close(self, rows: list[dict[str, str]]) -> None:
        if self.block is not None:
            rows.append(self.block)
            self.block = None

    def _steps(self, rows: list[dict[str, str]]) -> pl.DataFrame:
        if not rows:
            return empty_steps()
        self.lines_read += len(rows)
        self._number(rows)
        names = list(dict.fromkeys(k for row in rows for k in row))
        frame = pl.DataFrame({n: [row.get(n) for row in rows] for n in names}, schema=dict.fromkeys(names, pl.String))
        return self.records.steps(frame)

    def _number(self, rows: list[dict[str, str]]) -> None:
        """A record with no step anywhere is numbered in order, times the logging interval the log states."""
        every = self.stated("logging_steps")
        for row in rows:
            if "step" not in _columns(self.records.vocabulary, frozenset(row), self.records.frameworks):
                self.numbered += 1
                row["progress/n"] = str(self.numbered * (every if isinstance(every, int) else 1))

    def final_steps(self) -> pl.DataFrame:
        """The block still open at the end of the file (closed in finish())."""
        return self._tail

    def finish(self) -> ParseSummary:
        rows: list[dict[str, str]] = []
        self._close(rows)
        self._tail = self._steps(rows)
        records = self.records
        results = self._summary_results()
        if records.rows == 0 and not results:
            raise NoKnownNames(self.file_name, None, "no lines of `name: value` pairs with a step and a training "
                                                   "figure the key vocabulary knows; add its names with "
                                                   "`python -m perfledger keys add`")
        warnings = [n for n in (records.step_time_note(), records.set_aside_note(), records.nan_note()) if n]
        if self.numbered:
            warnings.append(f"{self.numbered:,} records print no step: numbered in the order printed"
                            + (f", {self.stated('logging_steps')} steps apart (the log's logging_steps)"
                               if self.stated("logging_steps") else ""))
        return ParseSummary(format=self.format, config=RunConfig(framework=records.framework,
                                                                 micro_batch=records.micro_batch),
                            problems=tuple(self.problems), warnings=tuple(warnings), skipped_lines=self.skipped_lines,
                            results=results, meta={"record_lines": self.lines_read} | records.meta())

    def _summary_results(self) -> tuple[ResultRecord, ...]:
        return self.records.summary_results(self.summary, locator="the log's end-of-run summary") \
            if self.summary else ()


def _with_indented(lines: list[str]) -> list[str]:
    """The lines with the lines indented under a line joined to it (a block read as one record)."""
    out: list[str] = []
    outer = 0
    for line in lines:
        if out and line.strip() and _indent(line) > outer:
            out[-1] += "  " + line.strip()
        else:
            out.append(line)
            outer = _indent(line)
    return out


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


def _finished(bar: dict[str, str]) -> bool:
    done, total = bar.get("progress/n", ""), bar.get("progress/total", "")
    return done.isdigit() and total.isdigit() and int(done) >= int(total) > 0


def _merge(block: dict[str, str], more: dict[str, str]) -> None:
    for name, value in more.items():
        block.setdefault(name, value)


PARSER = KeyValueLogParser
