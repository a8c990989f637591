"""The grammar of a console line: the named values one line of a training log prints, whatever the framework.

One line (or one carriage-return frame of it) gives pairs of a name and a value as printed, from what it holds:

    [2021-05-26 23:22:42] Ep. 1 : Up. 500 : Time 609.91s : 679.50 words/s     pairs (`name: value`, `name=value`,
                                                                              `name value`, `value unit-word`)
    {'loss': 1.23, 'learning_rate': 1e-05, 'epoch': 0.1}                      a printed dict
    1|51|Loss: 1.23:  10%|█   | 51/512 [01:02<05:16,  1.46it/s, lr=2e-5]   a progress bar (tqdm), its
                                                                              description and postfix
    │ timeperf/train_step │ 3.1464e+01 │ rollout/reward │ 5.0e-01 │          a box-drawn table row

A leading timestamp (ISO-8601, `YYYYMMDD-HH:MM:SS`, `[HH:MM:SS]`) is the pair `line_time`; a position printed in
brackets with no name of its own (`Iter(train) [ 10/720]`, `Epoch:[1/1](100/44173)`) is `position/n` and
`position/total`; a count the line is after (`after 128 examples`) is `after/examples`. A progress bar gives
`progress/n` (its position), `progress/elapsed` (its clock), `progress/it_per_s` or `progress/s_per_it` (its rate)
and `progress/total`; the key vocabulary reads those names as it reads any other. Values keep their thousands
commas removed, glued units (`146ms`), `K`/`M` suffixes and clocks (`0:15:19.02`) as printed.

`line_spans` gives each value's place in the line; `Shapes` uses it to read a line whose shape (its text with every
run of digits blanked) it has seen before by filling that shape's values with the new line's digits, which gives
what `line_pairs` gives, at a fraction of its cost: console logs print the same few shapes a million times.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

MAX_LINE_CHARS = 16 * 1024
MAX_SHAPES = 4096
_NUMBER = r"[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|inf)"
_CLOCK = r"\d+:\d\d(?::\d\d)?(?:\.\d+)?"
_VALUE = r"(?:" + _CLOCK + r"|" + _NUMBER + r"(?:/\d+)?(?:[A-Za-z%]+(?:/[A-Za-z]+)?)?)"
_NAME = r"[A-Za-z_][\w./()%-]*(?: [A-Za-z_][\w./()%-]*){0,3}?"
# a value may be quoted after `:` or `=` (`loss='0.5'`, `"step_time": "1.2"`): a number printed as a string
_PAIR = re.compile(r"(?<![\w./-])(" + _NAME + r")(?:\s*[:=]\s*\[?['\"]?|\s+)(" + _VALUE + r")['\"]?(?![\w.])")
_UNIT_AFTER = re.compile(r"(?:^|[;|:]\s*)(" + _NUMBER + r"(?:/\d+)?)\s+([A-Za-z][\w/]*)\s*(?=[;|:]|$)")
# a leading timestamp and the rest of its bracket: "[2021-03-24 05:10:52,624 INFO] ", "2024-11-26T22:09:01Z - ",
# "[INFO|2024-11-26 22:09:01] ", "(AReaL) 20260725-13:51:09.653 ", "[20260511 02:59:23]", "[12:34:56] "
_TIMESTAMP = re.compile(
    r"^\s*(?:\(\w+\)\s*)?(\[(?:[A-Z]+\|)?)?(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"|\d{8}[ -]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?|\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?=\]|\s))(?(1)[^\]]*\])")
_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_DICT_ITEM = re.compile(r"""['"]([^'"\n]{1,80})['"]\s*:\s*(?:['"]([^'"\n]{0,80})['"]|(""" + _NUMBER + r"""))""")
_BAR = re.compile(r"(?<!\d)(\d{1,12})/(\d{1,12}) \[(" + _CLOCK + r")<(?:" + _CLOCK + r"|\?),\s{0,8}"
                  r"(?:([\d.]+)(it/s|s/it)|\?it/s)([^\]]{0,400})\]")
# a position printed in brackets right after a closing bracket or glued to a word, with no name of its own (not
# "Using [24/24] GPUs"): mmengine's
# "Iter(train) [ 10/720]" and "Epoch(train) [1][ 10/720]", MiniMind's "Epoch:[1/1](100/44173)"
_POSITION = re.compile(r"(?:(?<=[)\]])\s?|(?<=[A-Za-z_]))[\[(]\s{0,8}(\d{1,12})\s{0,8}/\s{0,8}(\d{1,12})[\])]")
# a count the line is "after" ("train stats after 128 examples:"): a position in samples, tokens or steps, kept as
# `after/<noun>` for the key vocabulary (perfledger.key_grammar) to read as a counter
_AFTER = re.compile(r"\bafter (\d{1,15}) ([a-z]{2,12})\b")
_CELL = re.compile(r"[^│┃|]+")
_NUMBER_CELL = re.compile(_NUMBER)
_DIGITS = re.compile(r"\d+")
Span = tuple[str, int, int]  # a name and where its value is in the line


def plain(value: str) -> str:
    """A value without its thousands commas ("1,234.5" -> "1234.5")."""
    m = _THOUSANDS.match(value)
    return value if m is None else m.group(0).replace(",", "") + value[m.end():]


def is_table_row(line: str) -> bool:
    return "│" in line or line.lstrip().startswith("|")


def _text_spans(line: str, start: int = 0, end: int | None = None) -> list[Span]:
    """`name: value` and `value unit-word` pairs of plain text between start and end."""
    stop = len(line) if end is None else end
    spans = [(m.group(1).strip(), m.start(2), m.end(2)) for m in _PAIR.finditer(line, start, stop)]
    if "/" in line and (m := _last(_POSITION.finditer(line, start, stop))) is not None:  # the innermost: the step
        spans += [("position/n", *m.span(1)), ("position/total", *m.span(2))]
    spans += [(f"after/{m.group(2)}", *m.span(1)) for m in _AFTER.finditer(line, start, stop)]
    return spans + [(m.group(2), m.start(1), m.end(1)) for m in _UNIT_AFTER.finditer(line, start, stop)]


def _last(found: Iterator[re.Match[str]]) -> re.Match[str] | None:
    last = None
    for last in found:
        pass
    return last


def _dict_spans(line: str, start: int) -> list[Span]:
    return [(m.group(1), *(m.span(2) if m.group(2) is not None else m.span(3)))
            for m in _DICT_ITEM.finditer(line, start)]


def _bar_spans(line: str, start: int, bar: re.Match[str]) -> list[Span]:
    description_end = line.rfind("%|", start, bar.start())
    spans = _text_spans(line, start, description_end if description_end >= 0 else bar.start())
    postfix = [(n, s, e) for n, s, e in _text_spans(line.replace(",", " "), bar.start(6), bar.end(6))]
    spans += [("progress/n", *bar.span(1)), ("progress/total", *bar.span(2)), ("progress/elapsed", *bar.span(3))]
    if bar.group(4):
        spans.append(("progress/it_per_s" if bar.group(5) == "it/s" else "progress/s_per_it", *bar.span(4)))
    return spans + postfix


def _box_spans(line: str, start: int) -> list[Span]:
    """A table row's cells in name, value order: `│ name │ value │ name │ value │`."""
    cells = [(m.group(0).strip(), m.start() + len(m.group(0)) - len(m.group(0).lstrip()),
              m.end() - (len(m.group(0)) - len(m.group(0).rstrip()))) for m in _CELL.finditer(line, start)]
    cells = [c for c in cells if c[0]]
    if len(cells) < 2 or len(cells) % 2:
        return []
    out = []
    for (name, _, _), (value, s, e) in zip(cells[::2], cells[1::2], strict=True):
        if _NUMBER_CELL.fullmatch(value.replace(",", "")) is None or " " in name:
            return []
        out.append((name, s, e))
    return out


def line_spans(line: str) -> list[Span]:
    """Every named value of one console line (or one carriage-return frame), with its place in the line."""
    if len(line) > MAX_LINE_CHARS:
        return []
    spans: list[Span] = []
    start = 0
    if (m := _TIMESTAMP.match(line)) is not None:
        spans.append(("line_time", *m.span(2)))
        start = m.end()
    if "[" in line and ("it/s" in line or "s/it" in line) and (bar := _BAR.search(line, start)) is not None:
        return spans + _bar_spans(line, start, bar)
    if ("{'" in line or '{"' in line) and (found := _dict_spans(line, start)):
        before = min(i for i in (line.find("{'", start), line.find('{"', start)) if i >= 0)
        return spans + found + _text_spans(line, start, before)  # "Step 10: {'loss': ...}": the step before it
    if is_table_row(line) and (found := _box_spans(line, start)):
        return spans + found
    return spans + _text_spans(line, start)


def _pairs(line: str, spans: list[Span]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for name, s, e in spans:
        value = line[s:e]
        pairs.setdefault(name, value.replace(",", ".") if name == "line_time" else plain(value))
    return pairs


def line_pairs(line: str) -> dict[str, str]:
    """Every named value of one console line (or one carriage-return frame), values as printed (thousands commas
    removed; a timestamp's decimal comma a point)."""
    return _pairs(line, line_spans(line))


def pairs_of(text: str) -> dict[str, str]:
    """The `name: value` pairs of plain text (and `value unit-word` pairs), first spelling of a name kept."""
    return _pairs(text, _text_spans(text))


# A shape's plan: for each value kept, the name it is read as, the index of the first run of digits it holds, and
# its text with those runs blanked ("\x00"); None: a shape whose names hold digits, read in full each time.
Plan = tuple[tuple[str, int, str], ...] | None


class Shapes:
    """Lines read by their shape (the text with each run of digits blanked, and how long each run is up to four):
    the first line of a shape is read in full (line_spans) and its plan kept; a line of the same shape takes its
    values from its own digits. `named(name)` is the name a printed name is kept as, or None (not kept)."""

    def __init__(self, named: Callable[[str], str | None]) -> None:
        self.named = named
        self.plans: dict[tuple[str, tuple[int, ...]], Plan] = {}

    def pairs(self, line: str) -> dict[str, str]:
        """The line's kept pairs, by the names they are kept as, values as printed (see line_pairs)."""
        if len(line) > MAX_LINE_CHARS:
            return {}
        runs = _DIGITS.findall(line)
        key = (_DIGITS.sub("\x00", line), tuple(min(4, len(r)) for r in runs))
        if key in self.plans:
            plan = self.plans[key]
            return self._kept(line_pairs(line)) if plan is None else _pairs_of_plan(plan, runs)
        spans = line_spans(line)
        plan = self.plan(line, spans)
        if len(self.plans) < MAX_SHAPES:
            self.plans[key] = plan
        return self._kept(_pairs(line, spans)) if plan is None else _pairs_of_plan(plan, runs)

    def _kept(self, pairs: dict[str, str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, value in pairs.items():
            if (kept := self.named(name)) is not None:
                out.setdefault(kept, value)
        return out

    def plan(self, line: str, spans: list[Span]) -> Plan:
        """The plan of a line's shape: what it keeps, and where each value's digits are."""
        runs = [m.span() for m in _DIGITS.finditer(line)]
        out: list[tuple[str, int, str]] = []
        for name, s, e in spans:
            if any(ch.isdigit() for ch in name) or any(a < s < b or a < e < b for a, b in runs):
                return None  # a name that changes with the line, or a value that starts or ends inside a run
            kept = self.named(name)
            if kept is not None and all(kept != k for k, _, _ in out):
                first = next((i for i, (a, _) in enumerate(runs) if a >= s), 0)
                out.append((kept, first, _DIGITS.sub("\x00", line[s:e])))
        return tuple(out)


def _pairs_of_plan(plan: tuple[tuple[str, int, str], ...], runs: list[str]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for name, first, blanked in plan:
        pieces = blanked.split("\x00")
        value = pieces[0] + "".join(runs[first + i] + piece for i, piece in enumerate(pieces[1:]))
        pairs[name] = value.replace(",", ".") if name == "line_time" else plain(value)
    return pairs
