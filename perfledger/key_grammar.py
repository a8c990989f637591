"""A logged key no vocabulary row spells, read from its words: a step time (`step_time_s`), a rate (`examples_per_second`, `tokens/s/gpu`), a
counter (`counters/examples`, `samples_seen`, the `after 128 examples` a console line prints as `after/examples`),
a step counter (`counters/updates`) or a loss with its split (`loss/train`, `loss/eval`).

The words are the unit grammar's (data/quantity_words.csv: quantity, time, step and device words), so a spelling
nobody listed reads as its parts say; a key the words do not settle is not read (never guessed):

    examples_per_second  -> samples_per_s (samples per second over all devices)
    tokens/s/gpu         -> reported_tokens_per_s_per_device
    counters/examples    -> samples_total (a cumulative counter)
    counters/updates     -> step
    step_time_s          -> step_time_s (seconds);  iter_time_ms -> step_time_s (milliseconds)
    loss/train           -> loss;  loss/eval -> eval (an evaluation record)

A rate that names an evaluation (`eval/samples_per_second`), a sample rate per device, or a time other than the
second is left unread: the vocabulary has no column that means it. The rows this gives are generic (framework `*`):
any row of the vocabulary, bundled or the user's, is matched before them.
"""

from __future__ import annotations

import functools
import re

from perfledger.metric_keys import KeyRow
from perfledger.quantities import words

NOTE = "read by grammar from the key's words"
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_PER = frozenset({"per", "p"})
_EVALUATION = frozenset({"eval", "evaluation", "val", "valid", "validation", "test"})
_TRAINING = frozenset({"train", "training", "total", "lm", "avg", "mean"})
_TIME_NOUNS = frozenset({"time", "duration", "dt", "latency"})
_TIME_UNITS = {1.0: "s", 1e-3: "ms", 1e-6: "us", 60.0: "min", 3600.0: "h"}  # a time word's factor -> its row unit
_CUMULATIVE = frozenset({"counters", "counter", "consumed", "seen", "processed", "after", "cumulative"})
_STEP_COUNTERS = frozenset({"counters", "counter", "completed", "after"})



def key_words(name: str) -> tuple[str, ...]:
    """The words of a key, lower case: split at separators and where camelCase changes case."""
    return tuple(w.lower() for w in _WORD.findall(name))


@functools.lru_cache(maxsize=4096)
def row_by_grammar(name: str) -> KeyRow | None:
    """The vocabulary row the key's words imply, or None when they do not settle one."""
    parts = key_words(name)
    if not parts or any(w.isdigit() for w in parts):
        return None
    for read in (_loss, _step_time, _rate, _counter):
        if (row := read(name, parts)) is not None:
            return row
    return None


def _row(name: str, column: str, unit: str) -> KeyRow:
    return KeyRow(framework="*", key=name, column=column, unit=unit, note=NOTE)


def _loss(name: str, parts: tuple[str, ...]) -> KeyRow | None:
    if "loss" not in parts:
        return None
    rest = set(parts) - {"loss"}
    if rest <= _TRAINING:
        return _row(name, "loss", "")
    if rest & _EVALUATION and rest <= _EVALUATION | _TRAINING:
        return _row(name, "eval", "")
    return None


def _step_time(name: str, parts: tuple[str, ...]) -> KeyRow | None:
    """A step's time: a step word and a time noun, its unit the time word after them (`step_time_s`,
    `iter_time_ms`, `time_per_step`); seconds when none is printed."""
    times = words().of("time")
    steps = words().of("step")
    nouns = [w for w in parts if w in _TIME_NOUNS]
    if len(nouns) != 1 or not any(w in steps for w in parts) or set(parts) & _EVALUATION:
        return None
    rest = [w for w in parts if w not in steps and w not in _TIME_NOUNS and w not in _PER and w not in _TRAINING]
    if len(rest) > 1 or (rest and rest[0] not in times):
        return None
    unit = _TIME_UNITS.get(times[rest[0]][1]) if rest else "s"
    return _row(name, "step_time_s", unit) if unit is not None else None


def _quantity(parts: tuple[str, ...]) -> tuple[int, str] | None:
    """Where the one quantity word (samples or tokens) is, and what it counts."""
    table = words().of("quantity")
    found = [(i, table[w][0]) for i, w in enumerate(parts) if w in table and table[w][0] in ("sample", "token")]
    return found[0] if len(found) == 1 else None


def _rate(name: str, parts: tuple[str, ...]) -> KeyRow | None:
    found = _quantity(parts)
    if found is None or set(parts) & _EVALUATION:
        return None
    at, counts = found
    after = [w for w in parts[at + 1:] if w not in _PER]
    times = words().of("time")
    if not after or after[0] not in times:
        return None
    if times[after[0]][1] != 1.0:
        return None  # a rate per millisecond or per hour: no column takes it as printed
    per_device = any(w in words().of("device") for w in parts)
    if counts == "token":
        return _row(name, "reported_tokens_per_s_per_device" if per_device else "tokens_per_s", "count/s")
    return None if per_device else _row(name, "samples_per_s", "count/s")


def _counter(name: str, parts: tuple[str, ...]) -> KeyRow | None:
    words_set = set(parts)
    if set(parts) & _EVALUATION or any(w in words().of("time") for w in parts):
        return None
    steps = words().of("step")
    if words_set & _STEP_COUNTERS and any(w in steps for w in parts) \
            and _quantity(parts) is None:
        return _row(name, "step", "count")
    found = _quantity(parts)
    if found is not None and words_set & _CUMULATIVE:
        return _row(name, "tokens_total" if found[1] == "token" else "samples_total", "count")
    return None
