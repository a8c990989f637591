"""The grammar of a console line: the named values one line of a training log prints, whatever the framework.

One line (or one carriage-return frame of it) gives pairs of a name and a value as printed, from what it holds:

    [2021-05-26 23:22:42] Ep. 1 : Up. 500 : Time 609.91s : 679.50 words/s     pairs (`name: value`, `name=value`,
                                                                              `name value`, `value unit-word`)
    {'loss': 1.23, 'learning_rate': 1e-05, 'epoch': 0.1}                      a printed dict
    1|51|Loss: 1.23:  10%|█   | 51/512 [01:02<05:16,  1.46it/s, lr=2e-5]   a progress bar (tqdm), its
                                                                              description and postfix
    │ timeperf/train_step │ 3.1464e+01 │ rollout/reward │ 5.0e-01 │          a box-drawn table row

A leading timestamp (ISO-8601, `YYYYMMDD-HH:MM:SS`, `[HH:MM:SS]`) is the pair `line_time`. A progress bar gives
`progress/n` (its position), `progress/elapsed` (its clock), `progress/it_per_s` or `progress/s_per_it` (its rate)
and `progress/total`; the key vocabulary reads those names as it reads any other. Values keep their thousands
commas removed, glued units (`146ms`), `K`/`M` suffixes and clocks (`0:15:19.02`) as printed.
"""

from __future__ import annotations

import re

MAX_LINE_CHARS = 16 * 1024
_NUMBER = r"[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|inf)"
_CLOCK = r"\d+:\d\d(?::\d\d)?(?:\.\d+)?"
_VALUE = r"(?:" + _CLOCK + r"|" + _NUMBER + r"(?:/\d+)?(?:[A-Za-z%]+(?:/[A-Za-z]+)?)?)"
_NAME = r"[A-Za-z_][\w./()%-]*(?: [A-Za-z_][\w./()%-]*){0,3}?"
_PAIR = re.compile(r"(?<![\w./-])(" + _NAME + r")(?:\s*[:=]\s*\[?|\s+)(" + _VALUE + r")(?![\w.])")
_UNIT_AFTER = re.compile(r"(?:^|[;|:]\s*)(" + _NUMBER + r"(?:/\d+)?)\s+([A-Za-z][\w/]*)\s*(?=[;|:]|$)")
# a leading timestamp and the rest of its bracket: "[2021-03-24 05:10:52,624 INFO] ", "2024-11-26T22:09:01Z - ",
# "[INFO|2024-11-26 22:09:01] ",
# "(AReaL) 20260725-13:51:09.653 ", "[20260511 02:59:23]", "[12:34:56] "
_TIMESTAMP = re.compile(
    r"^\s*(?:\(\w+\)\s*)?(\[(?:[A-Z]+\|)?)?(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"|\d{8}[ -]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?|\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?=\]|\s))(?(1)[^\]]*\])")
_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_DICT_ITEM = re.compile(r"""['"]([^'"\n]{1,80})['"]\s*:\s*(""" + _NUMBER + r"""|'[^'\n]{0,80}'|"[^"\n]{0,80}")""")
_BAR = re.compile(r"(?<!\d)(\d{1,12})/(\d{1,12}) \[(" + _CLOCK + r")<(?:" + _CLOCK + r"|\?),\s{0,8}"
                  r"(?:([\d.]+)(it/s|s/it)|\?it/s)([^\]]{0,400})\]")
_BOX = re.compile(r"[│┃|]")


def plain(value: str) -> str:
    """A value without its thousands commas ("1,234.5" -> "1234.5")."""
    m = _THOUSANDS.match(value)
    return value if m is None else m.group(0).replace(",", "") + value[m.end():]


def pairs_of(text: str) -> dict[str, str]:
    """The `name: value` pairs of plain text (and `value unit-word` pairs), first spelling of a name kept."""
    pairs: dict[str, str] = {}
    for name, value in _PAIR.findall(text):
        pairs.setdefault(name.strip(), plain(value))
    for value, name in _UNIT_AFTER.findall(text):
        pairs.setdefault(name, plain(value))
    return pairs


def _dict_pairs(text: str) -> dict[str, str]:
    return {name: plain(value.strip("'\"")) for name, value in _DICT_ITEM.findall(text)}


def _bar_pairs(text: str, bar: re.Match[str]) -> dict[str, str]:
    n, total, elapsed, rate, unit, postfix = bar.groups()
    pairs = pairs_of(text[:bar.start()].rsplit("%|", 1)[0])  # the description, before the percentage and bar
    pairs.update((k, v) for k, v in pairs_of(postfix.replace(",", " ")).items() if k not in pairs)
    pairs.update({"progress/n": n, "progress/total": total, "progress/elapsed": elapsed})
    if rate:
        pairs["progress/it_per_s" if unit == "it/s" else "progress/s_per_it"] = rate
    return pairs


def _box_pairs(text: str) -> dict[str, str]:
    """A table row's cells in name, value order: `│ name │ value │ name │ value │`."""
    cells = [c.strip() for c in _BOX.split(text)]
    cells = cells[1:] if cells and not cells[0] else cells
    cells = cells[:-1] if cells and not cells[-1] else cells
    if len(cells) < 2 or len(cells) % 2:
        return {}
    out = {}
    for name, value in zip(cells[::2], cells[1::2], strict=True):
        if re.fullmatch(_NUMBER, value.replace(",", "")) is None or not name or " " in name.strip():
            return {}
        out[name] = plain(value)
    return out


def is_table_row(line: str) -> bool:
    return "│" in line or line.lstrip().startswith("|")


def line_pairs(line: str) -> dict[str, str]:
    """Every named value of one console line (or one carriage-return frame), values as printed."""
    if len(line) > MAX_LINE_CHARS:
        return {}
    pairs: dict[str, str] = {}
    if (m := _TIMESTAMP.match(line)) is not None:
        pairs["line_time"] = m.group(2).replace(",", ".")
        line = line[m.end():]
    if "[" in line and ("it/s" in line or "s/it" in line) and (bar := _BAR.search(line)) is not None:
        return pairs | _bar_pairs(line, bar)
    if ("{'" in line or '{"' in line) and (found := _dict_pairs(line)):
        return pairs | found
    if is_table_row(line) and (found := _box_pairs(line)):
        return pairs | found
    return pairs | pairs_of(line)
