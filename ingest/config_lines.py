"""What a log's configuration lines state, read by the configuration-key rows (perfledger.frameworks), whatever its
format: launcher command lines, argument and config dumps (YAML, dicts, JSON), banners, device-name lines.

Each chunk of text is searched at once (Polars' regex, on the pipeline's reader threads) for the lines that hold a
key the rows know, followed by `:` or `=` (or a value after `--key`); only those lines reach Python, where each
key's value is read by its unit. What one line states is a Statement with the line it came from; the same value
stated again is counted, not kept twice, and a field keeps at most MAX_VALUES distinct values.

A key is matched in every common spelling: `key: value`, `key=value`, `"key": value`, `'key': value`,
`--key value`, `--key=value`, under a dotted or slashed parent (`cfg/key`, `model.key`), `_` and `-` alike.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from ingest.text import TextChunk
from perfledger.frameworks import ConfigKey, Frameworks

MAX_VALUES = 16  # distinct values kept per field and framework
MAX_WHERE_CHARS = 160
_FALSY = frozenset({"false", "none", "null", "0", "no", "off", "", "~"})
_COUNT = re.compile(r"^[+]?(\d{1,3}(?:,\d{3})+|\d+)(?:\.0+)?$")
PARENT_LOOKBACK = 64
_NESTED = re.compile(r"^( +)[A-Za-z_][\w.-]*\s*:")
_PARENT = re.compile(r"^( *)([A-Za-z_][\w.-]*):\s*$")
_VALUE = r"(?P<value>\"[^\"]*\"|'[^']*'|[^\s,;{}\[\]()'\"]+)"


@dataclass(frozen=True, slots=True)
class Statement:
    """One value a log states for a field, where it first says so and how often."""

    field: str
    value: str | int
    where: str  # "line 12: --seq-length 4096"
    framework: str  # the row's framework ("*": any)
    weak: bool = False  # a count of per-rank lines or peers: used when nothing stronger states the field
    times: int = 1
    key: str = ""  # the row's key: a framework's own row of a key shadows the generic row of that key
    unit: str = ""  # the row's unit: a `hint_name` names the model only when the catalog knows it


@dataclass(frozen=True, slots=True)
class _Table:
    """The rows compiled: one Python pattern for the plain keys (group per key spelling), the re: rows, and the
    Rust pattern that finds candidate lines."""

    by_group: dict[str, tuple[ConfigKey, ...]]  # the plain pattern's group name -> the rows of that spelling
    plain: re.Pattern[str] | None
    patterns: tuple[tuple[ConfigKey, re.Pattern[str]], ...]
    search: str


def _spelled(key: str) -> str:
    return r"\s+".join(re.escape(word).replace("_", "[_-]").replace(r"\-", "[_-]").replace(r"\.", "[./]")
                       for word in key.split())


@functools.lru_cache(maxsize=4)
def _table(frameworks: Frameworks) -> _Table:
    by_key: dict[str, list[ConfigKey]] = {}
    patterns = []
    for row in frameworks.config_keys:
        if row.is_pattern:
            patterns.append((row, re.compile(row.key[3:])))
        else:
            by_key.setdefault(row.key, []).append(row)
    keys = sorted(by_key, key=len, reverse=True)
    names = {f"k{i}": key for i, key in enumerate(keys)}
    alternation = "|".join(f"(?P<{g}>{_spelled(k)})" for g, k in names.items())
    # a key followed by "/" or "." is the parent of another (`Train trainer/device_train_microbatch_size: 2`)
    plain = re.compile(r"(?<![\w-])(?P<dash>--)?(?:" + alternation + r")(?![\w/.-])['\"]?(?P<sep>\s*[:=]\s*|\s+)?"
                       + _VALUE + "?") if keys else None
    # a key under a parent (`speed_monitor.window_size`) is found by its last part too: YAML prints it nested
    rust_keys = "|".join(_spelled(k) for k in dict.fromkeys([*keys, *(k.rsplit(".", 1)[-1] for k in keys)]))
    search = "|".join(p for p in (
        rf"(?:^|[^\w-])(?:{rust_keys})['\"]?\s*[:=]" if keys else "",
        rf"--(?:{rust_keys})(?:\s|$)" if keys else "",
        *(row.key[3:] for row, _ in patterns)) if p)
    return _Table({g: tuple(by_key[k]) for g, k in names.items()}, plain, tuple(patterns), search)


@dataclass(slots=True)
class ConfigLines:
    """The statements of one file, fed its chunks in order (prepare() on any thread, feed() in order)."""

    frameworks: Frameworks
    found: dict[tuple[str, str], dict[str | int, Statement]] = field(default_factory=dict)
    lines: dict[ConfigKey, tuple[int, str]] = field(default_factory=dict)  # a `lines` row: count, first where

    def prepare(self, text: str, first_lineno: int) -> list[tuple[int, str, str]]:
        """The lines of a chunk that may state something, with their line numbers (no state read)."""
        table = _table(self.frameworks)
        if not table.search or not text:
            return []
        whole = pl.Series([text], dtype=pl.String)
        if not whole.str.contains(table.search).item():
            return []
        lines = whole.str.split("\n").explode()
        hits = lines.str.contains(table.search).arg_true()
        return [(first_lineno + i, _under_parent(lines, i), str(lines[i])) for i in hits.to_list()]

    def beside(self, prepare: Callable[[TextChunk], Any], feed: Callable[[Any], pl.DataFrame]) -> \
            tuple[Callable[[TextChunk], Any], Callable[[Any], pl.DataFrame]]:
        """A parser's (prepare, feed) for read_ahead with this scan's own preparing and feeding beside them: the
        configuration lines are searched for on the reader threads, in the same pass."""

        def prepare_both(chunk: TextChunk) -> tuple[Any, list[tuple[int, str, str]]]:
            return prepare(chunk), self.prepare(chunk.text, chunk.first_lineno)

        def feed_both(prepared: tuple[Any, list[tuple[int, str, str]]]) -> pl.DataFrame:
            self.feed(prepared[1])
            return feed(prepared[0])

        return prepare_both, feed_both

    def feed(self, candidates: Sequence[tuple[int, str, str]]) -> None:
        """Each candidate line (its number, its text read under its YAML parent, its text as printed: the one a
        statement quotes)."""
        table = _table(self.frameworks)
        for lineno, line, printed in candidates:
            if len(line) > 64 * 1024:
                continue
            if table.plain is not None:
                for m in table.plain.finditer(line):
                    for row in table.by_group[_group(m)]:
                        self._plain(row, m, lineno, line, printed)
            for row, pattern in table.patterns:
                if (found := pattern.search(line)) is not None:
                    self._pattern(row, found, lineno, line, printed)

    def _plain(self, row: ConfigKey, m: re.Match[str], lineno: int, line: str, printed: str) -> None:
        value, sep, dash = m.group("value"), m.group("sep"), m.group("dash")
        where = _where(lineno, printed, m.span() if printed == line else None)
        if row.unit == "flag":
            bare = dash and (sep is None or not sep.strip() and (value is None or value.startswith("-")))
            if bare or (sep and sep.strip() and value is not None and value.strip("'\"").lower() not in _FALSY):
                self._state(row, row.value, where)
            return
        if value is None or sep is None or (not sep.strip() and not dash):
            return
        self._read(row, value, where)

    def _pattern(self, row: ConfigKey, m: re.Match[str], lineno: int, line: str, printed: str) -> None:
        where = _where(lineno, printed, m.span() if printed == line else None)
        if row.unit == "lines":
            count, first = self.lines.get(row, (0, where))
            self.lines[row] = (count + 1, first)
        elif row.unit == "flag":
            self._state(row, row.value, where)
        elif m.groups() and m.group(1) is not None:  # a row's alternative without the group: a look-alike
            self._read(row, m.group(1), where)

    def _read(self, row: ConfigKey, text: str, where: str) -> None:
        text = text.strip().strip("'\"").strip()
        if row.unit in ("count", "count+1"):
            if (m := _COUNT.match(text)) is None or (number := int(m.group(1).replace(",", ""))) <= 0:
                return
            self._state(row, number + (row.unit == "count+1"), where, weak=row.unit == "count+1")
        elif text.lower() not in _FALSY and not text.startswith("$") and len(text) <= 200:
            self._state(row, text, where)

    def _state(self, row: ConfigKey, value: str | int, where: str, *, weak: bool = False) -> None:
        values = self.found.setdefault((row.field, row.framework), {})
        if (seen := values.get(value)) is not None:
            values[value] = replace(seen, times=seen.times + 1)
        elif len(values) < MAX_VALUES:
            values[value] = Statement(row.field, value, where, row.framework, weak, key=row.key, unit=row.unit)

    def value(self, field: str) -> str | int | None:
        """The value of `field` the log states most often so far (any framework's row), or None: what a reader may
        use while it reads (HF Trainer's logging_steps numbers its records)."""
        stated = [s for (f, _), values in self.found.items() if f == field for s in values.values() if not s.weak]
        return max(stated, key=lambda s: s.times).value if stated else None

    def statements(self) -> list[Statement]:
        """Every statement, in the order first stated (per field), the counted lines last."""
        out = [s for values in self.found.values() for s in values.values()]
        for row, (count, where) in self.lines.items():
            out.append(Statement(row.field, count, f"{count:,} lines like {where}", row.framework, weak=True,
                                 times=count, key=row.key))
        return out


def _under_parent(lines: pl.Series, i: int) -> str:
    """An indented YAML `key: value` line as `parent.key: value` (the nearest less indented `parent:` line above
    it, within PARENT_LOOKBACK lines): `tokenizer:` / `  name: EleutherAI/gpt-neox-20b` is the tokenizer's name,
    read by the `tokenizer.name` row, not a run's `name`."""
    line = str(lines[i])
    if (m := _NESTED.match(line)) is None:
        return line
    indent = len(m.group(1))
    for above in reversed(lines.slice(max(i - PARENT_LOOKBACK, 0), min(i, PARENT_LOOKBACK)).to_list()):
        if above is None or not above.strip():
            continue
        if len(above) - len(above.lstrip(" ")) < indent:
            parent = _PARENT.match(above)
            return f"{m.group(1)}{parent.group(2)}.{line[indent:]}" if parent is not None else line
    return line


def _group(m: re.Match[str]) -> str:
    """The key group that matched (lastgroup names the last group closed, which may be `sep` or `value`)."""
    return next(name for name, text in m.groupdict().items() if text is not None and name[0] == "k")


def _where(lineno: int, line: str, span: tuple[int, int] | None = None) -> str:
    """"line 12: <the line>", a long line cut around what was read in it ("line 121: ... --seq-length 4096 ...")."""
    if len(line.strip()) <= MAX_WHERE_CHARS or span is None:
        text = line.strip()
        return f"line {lineno}: {text if len(text) <= MAX_WHERE_CHARS else text[:MAX_WHERE_CHARS] + '...'}"
    start, end = max(span[0] - 40, 0), min(span[1] + 40, len(line))
    return f"line {lineno}: {'...' if start else ''}{line[start:end].strip()}{'...' if end < len(line) else ''}"
