"""Units and precisions read by grammar, not by list: a printed unit is prefix x quantity / time / device noun, a
printed precision is the number formats it names and the role of each clause.

    parse_unit("TFLOPs/sec/chip")   -> flop x 1e12, per 1 s, per device (chip)
    parse_unit("Per GPU TF")        -> flop x 1e12, per device (gpu); FLOPs with no time read as a rate
    parse_unit("PFLOP/s per node")  -> flop x 1e15, per s, per node: a group noun, so no per-device reading
    parse_unit("ms/step")           -> time x 0.001 s, per step
    parse_precision("Training BF16, Generation FP8") -> bf16 (the training clause decides what MFU is against)

The parts are data: data/quantity_words.csv (kind, word, means, factor), read once and checked row by row; a user
adds a device noun, a quantity word or a precision spelling with one line. `unit_factor_of` says what a value
printed in one unit is multiplied by to be in a metric's own unit (perfledger.vocabulary.unit_factor asks it after
data/units.csv, which keeps only what the grammar cannot derive: "%", "WPS", "x"). The grammar is the same for a
log's key ("tokens/s/GPU"), so a log reader can ask `parse_unit` too.
"""

from __future__ import annotations

import csv
import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from perfledger.errors import DataFileError
from perfledger.vocabulary import Metric, Precision, PrecisionReading, Workload

WORDS_FILE = Path(__file__).resolve().parents[1] / "data" / "quantity_words.csv"
WORDS_HEADER = ("kind", "word", "means", "factor")
KINDS = ("prefix", "quantity", "rate", "time", "step", "device", "group", "format", "role", "workload", "source_kind")
_NEEDS_FACTOR = frozenset({"prefix", "quantity", "rate", "time"})
_NEEDS_MEANING = frozenset({"quantity", "rate", "format", "role", "workload", "source_kind"})


@dataclass(frozen=True, slots=True)
class Words:
    """The grammar's parts by kind: word -> (meaning, factor)."""

    by_kind: Mapping[str, Mapping[str, tuple[str, float]]]

    def of(self, kind: str) -> Mapping[str, tuple[str, float]]:
        return self.by_kind.get(kind, {})


def read_words(path: Path) -> Words:
    """The words file; a bad header or row raises DataFileError naming its line. Blank and `#` rows are passed."""
    out: dict[str, dict[str, tuple[str, float]]] = {k: {} for k in KINDS}
    with path.open(newline="", encoding="utf-8") as f:
        rows = csv.reader(f)
        if tuple(next(rows, ())) != WORDS_HEADER:
            raise DataFileError(path.name, 1, f"header must be {','.join(WORDS_HEADER)}")
        for line, cells in enumerate(rows, 2):
            if not cells or not cells[0].strip() or cells[0].startswith("#"):
                continue
            kind, word, means, factor = _checked_row(path.name, line, cells)
            out[kind][word] = (means, factor)
    return Words(out)


def _checked_row(name: str, line: int, cells: list[str]) -> tuple[str, str, str, float]:
    if len(cells) != len(WORDS_HEADER):
        raise DataFileError(name, line, f"expected {len(WORDS_HEADER)} cells ({','.join(WORDS_HEADER)})")
    kind, word, means, text = (c.strip() for c in cells)
    if kind not in KINDS:
        raise DataFileError(name, line, f"kind {kind!r} is not one of {', '.join(KINDS)}")
    if not re.fullmatch(r"[a-z0-9µ]+", word):
        raise DataFileError(name, line, f"word {word!r} must be lower-case letters and digits")
    if kind in _NEEDS_MEANING and not means:
        raise DataFileError(name, line, f"a {kind} word needs what it means")
    if kind == "format" and means not in {p.value for p in Precision}:
        raise DataFileError(name, line, f"format {means!r} is not a precision ({', '.join(p.value for p in Precision)})")
    try:
        factor = float(text) if text else 1.0
    except ValueError:
        factor = math.nan
    if kind in _NEEDS_FACTOR and (not math.isfinite(factor) or factor <= 0):
        raise DataFileError(name, line, f"factor {text!r} is not a positive number")
    return kind, word, means, factor


@functools.cache
def words() -> Words:
    """The bundled words file, read once per process."""
    return read_words(WORDS_FILE)


# where the words of one text name several workloads, the narrowest: "sft with lora" is a LoRA run
_WORKLOAD_PRECEDENCE = (Workload.LORA_FINETUNE, Workload.RLHF, Workload.SFT, Workload.PRETRAIN)


def workload_in(text: str) -> Workload | None:
    """The workload the words of `text` name, by the words file ("SFTTrainer" -> sft, "peft: lora" and "lora"
    -> lora_finetune, "GRPO" -> rlhf); None where they name none.

    >>> workload_in("SFTTrainer"), workload_in("QLoRA + SFT"), workload_in("none")
    (<Workload.SFT: 'sft'>, <Workload.LORA_FINETUNE: 'lora_finetune'>, None)
    """
    table = words().of("workload")
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", text)  # CamelCase: SFT Trainer
    said = {*re.findall(r"[a-z0-9]+", text.lower()), *re.findall(r"[a-z0-9]+", spaced.lower())}  # and LoRA whole
    named = {Workload(table[w][0]) for w in said if w in table}
    return next((w for w in _WORKLOAD_PRECEDENCE if w in named), min(named) if named else None)


# ------------------------------------------------------------------------------------------------------------ units
@dataclass(frozen=True, slots=True)
class UnitReading:
    """A printed unit read from its parts: what is counted (flop, token, sample, or time itself) and how many of it
    one printed unit is; per how many seconds, per step, per how many devices (`group`: a node or system noun
    with no device count printed, so no per-device reading)."""

    quantity: str
    scale: float
    per_time_s: float | None = None
    per_step: bool = False
    per_device: bool = False
    devices: float = 1.0
    device_noun: str | None = None
    group: bool = False

    @property
    def per_device_rate(self) -> float:
        """One printed unit in the quantity per second per device (or in total), when it is a rate."""
        return self.scale / (self.per_time_s or 1.0) / (self.devices if self.per_device else 1.0)


_TOKEN = re.compile(r"[a-zµ]+|\d+(?:\.\d+)?|[/()%]")


def parse_unit(text: str | None) -> UnitReading | None:
    """A printed unit read by the grammar, or None when a word is not one of its parts (an aside in parentheses
    only adds a device count, "per node (8 GPUs)").

    >>> parse_unit("TFLOPs/sec/chip")
    UnitReading(quantity='flop', scale=1000000000000.0, per_time_s=1.0, per_step=False, per_device=True, devices=1.0, device_noun='chip', group=False)
    >>> parse_unit("tokens per second per 8-GPU node").per_device_rate
    0.125
    """
    lowered = (text or "").lower().replace("-", " ")
    main, asides = _split_asides(lowered)
    parts = _parts(main)
    if parts is None or not parts:
        return None
    count = next((n for aside in asides if (n := _aside_count(aside)) is not None), None)
    return _assemble(parts, count)


_FOOTNOTE = re.compile(r"\[\^[^\]]*\]|<sup>.*?</sup>|[*\u2020\u2021\u00b9\u00b2\u00b3\u2070-\u2079]+(?=\s*(?:\(|$))")
_BRACKETS = str.maketrans({"[": "(", "]": ")", "\uff08": "(", "\uff09": ")", "{": "(", "}": ")"})
_NOT_THE_FIGURE = frozenset({"speedup", "vs", "versus", "ratio", "relative", "improvement", "gain", "increase",
                             "difference", "delta", "over", "reduction", "peak", "theoretical", "hardware",
                             "hw"})  # "Speedup vs tokens/s", "Peak TFLOPS/GPU": another figure than the row's


def plain_header(text: str) -> str:
    """A printed header without its footnote markers, its brackets as parentheses: "Throughput[^1]" ->
    "Throughput", "Performance [seq/sec]" -> "Performance (seq/sec)", full-width "吞吐（tokens/s）" alike."""
    return _FOOTNOTE.sub("", text).translate(_BRACKETS).strip()


def unit_suffix(text: str) -> str | None:
    """The rate unit a header ends with after words that qualify it ("Vanilla TP tokens/sec" -> "tokens/sec",
    "Model TFLOP / sec / GPU" -> "TFLOP / sec / GPU"): the longest such ending that reads as a rate; None when
    the words before it say the figure is another one's ratio ("Speedup vs tokens/s")."""
    spaced = re.sub(r"\s*/\s*", " / ", text.strip())
    tokens = spaced.split()
    for start in range(1, len(tokens)):
        ending = " ".join(tokens[start:])
        if "/" not in ending and " per " not in f" {ending.lower()} ":
            continue
        reading = parse_unit(ending)
        if reading is not None and reading.per_time_s is not None:
            lead = {t.lower().strip(",:;") for t in tokens[:start]}
            return None if lead & _NOT_THE_FIGURE else ending
    return None


def unit_in_name(text: str) -> str | None:
    """The unit a printed metric name carries: the name itself when it is a unit ("Tokens/sec/chip"), else its
    aside in parentheses when that reads as a unit ("Total Step time(s)" -> "s"); None otherwise.

    >>> unit_in_name("Total Step time(s)"), unit_in_name("TFLOPs/sec/chip"), unit_in_name("MFU")
    ('s', 'TFLOPs/sec/chip', None)
    """
    if parse_unit(text) is not None:
        return text.strip()
    asides = [a.strip() for a in text[text.find("(") + 1:].split(")")[:1]] if "(" in text else []
    found = next((a for a in asides if a and parse_unit(a) is not None), None)
    if found is None and (plain := plain_header(text)) != text:
        return unit_in_name(plain)
    return found or unit_suffix(text)


def _split_asides(text: str) -> tuple[str, list[str]]:
    asides = re.findall(r"\(([^()]*)\)", text)
    return re.sub(r"\([^()]*\)", " ", text), asides


def _aside_count(aside: str) -> float | None:
    """A device count an aside prints: "(8 GPUs)" -> 8."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*", aside)
    if found and found.group(2) in words().of("device"):
        return float(found.group(1))
    return None


_Part = tuple[str, str, float, bool]  # (kind, meaning, factor, in a denominator)


def _parts(text: str) -> list[_Part] | None:
    """Each word classified, with whether it follows a "/" or "per"; a number before a device noun is its count."""
    out: list[_Part] = []
    denominator = False
    count: float | None = None
    for token in _TOKEN.findall(text):
        if token in ("/", "per"):
            denominator = True
            continue
        if token in ("(", ")", "%"):
            return None
        if token[0].isdigit():
            count = float(token)
            continue
        if (found := _word(token)) is None and "per" in token:  # glued: "tflopspergpu", "spergpu"
            lead = "/ " if denominator or token.startswith("per") else ""
            glued = _parts(lead + " / ".join(p for p in token.split("per") if p))
            if glued is None:
                return None
            out += glued
            denominator = False
            continue
        if found is None:
            return None
        kind, means, factor = found
        if kind == "rate":  # "tps": tokens per second, a quantity and its time in one word
            out += [("quantity", means, 1.0, denominator), ("time", "", factor, True)]
            denominator = False
            continue
        if kind in ("device", "group") and count is not None:
            factor, count = count, None
        if kind == "group" and out and out[-1][0] == "device" and out[-1][3]:  # "per 8-GPU node": 8 per group
            _, _, factor, denominator = out.pop()
        out.append((kind, means, factor, denominator))
        denominator = False
    return out


def _word(token: str) -> tuple[str, str, float] | None:
    """(kind, meaning, factor) of one word: a word of its own, else an SI prefix glued to a quantity word."""
    table = words()
    for kind in ("quantity", "rate", "time", "step", "device", "group"):
        if token in table.of(kind):
            means, factor = table.of(kind)[token]
            return kind, means or token, factor
    if len(token) > 1 and token[0] in table.of("prefix") and token[1:] in table.of("quantity"):
        means, factor = table.of("quantity")[token[1:]]
        return "quantity", means, table.of("prefix")[token[0]][1] * factor
    if token in table.of("prefix"):  # "K tok/s": the prefix as a word of its own
        return "prefix", "", table.of("prefix")[token][1]
    return None


def _assemble(parts: list[_Part], aside_count: float | None) -> UnitReading | None:
    numerator = [p for p in parts if not p[3]]
    denominator = [p for p in parts if p[3]]
    prefix = math.prod(f for kind, _, f, _ in numerator if kind == "prefix")
    counted = [p for p in numerator if p[0] == "quantity"]
    times = [p for p in numerator if p[0] == "time"]
    if len(counted) > 1 or len(times) > 1 or (counted and times) or not (counted or times):
        return None
    if any(kind not in ("prefix", "quantity", "time") for kind, *_ in numerator):
        return None
    quantity, scale = (counted[0][1], counted[0][2]) if counted else ("time", times[0][2])
    reading = UnitReading(quantity, scale * prefix)
    for kind, noun, factor, _ in denominator:
        if kind == "time" and reading.per_time_s is None and quantity != "time":
            reading = replace(reading, per_time_s=factor)
        elif kind == "step" and not reading.per_step:
            reading = replace(reading, per_step=True)
        elif kind in ("device", "group") and not reading.per_device:
            reading = _device(reading, kind, noun, factor, aside_count)
        else:
            return None
    return reading


def _device(reading: UnitReading, kind: str, noun: str, count: float, aside_count: float | None) -> UnitReading:
    if kind == "group":  # a node counts devices only when its count is printed ("8-GPU node", "node (8 GPUs)")
        known = aside_count if aside_count is not None else (count if count != 1.0 else None)
        return replace(reading, per_device=known is not None, devices=known or 1.0, group=known is None,
                       device_noun=noun)
    return replace(reading, per_device=True, devices=count, device_noun=noun)


@functools.cache
def _metric_unit(metric: Metric) -> UnitReading | None:
    return parse_unit(metric.unit)


def unit_factor_of(metric: Metric, unit: str) -> float | None:
    """What a value printed in `unit` is multiplied by to be in `metric.unit`, by the grammar; None when the unit
    does not read or cannot be that metric's (another quantity, a per-device unit for a total, a node with no
    device count). FLOPs with no time are a rate ("TFLOPs/GPU"); a unit with no device noun takes the metric's.

    >>> unit_factor_of(Metric.TOKENS_PER_S_PER_DEVICE, "ktokens/hour/GPU"), unit_factor_of(Metric.STEP_TIME_S, "ms/iter")
    (0.2777777777777778, 0.001)
    """
    target, given = _metric_unit(metric), parse_unit(unit)
    if target is None or given is None or given.quantity != target.quantity or given.group:
        return None
    if given.per_step and metric is not Metric.STEP_TIME_S:
        return None
    if given.per_device and not target.per_device:
        return None
    if target.quantity in ("token", "sample") and given.per_time_s is None:
        return None
    if target.per_time_s is None and given.per_time_s is not None:
        return None
    return given.per_device_rate / target.per_device_rate


def metric_of_unit_reading(reading: UnitReading) -> Metric | None:
    """The one metric a unit alone names ("Tokens/sec/chip" as a column), or None when several could be meant (a
    bare time: step time or time to train; FLOPs with no device: per device or in all)."""
    if reading.group:
        return None
    if reading.quantity == "flop" and reading.per_device:
        return Metric.MODEL_TFLOPS_PER_DEVICE
    if reading.quantity == "token" and reading.per_time_s is not None:
        return Metric.TOKENS_PER_S_PER_DEVICE if reading.per_device else Metric.TOKENS_PER_S
    if reading.quantity == "sample" and reading.per_time_s is not None and not reading.per_device:
        return Metric.SAMPLES_PER_S
    if reading.quantity == "time" and reading.per_step and not reading.per_device:
        return Metric.STEP_TIME_S
    return None


# ------------------------------------------------------------------------------------------------------- precisions
_FORMAT_ORDER = (Precision.FP4, Precision.FP8, Precision.FP16, Precision.BF16, Precision.TF32, Precision.FP32)


@dataclass(frozen=True, slots=True)
class PrecisionParts:
    """The formats a printed precision names: those of its training clause (or of the whole text when no clause
    names a role), and each other role's, for the sentence that keeps them."""

    formats: tuple[Precision, ...]
    roles: tuple[tuple[str, tuple[Precision, ...]], ...] = ()


def _formats_in(text: str) -> tuple[Precision, ...]:
    table = words().of("format")
    pattern = "|".join(sorted(map(re.escape, table), key=len, reverse=True))
    found = [Precision(table[m][0]) for m in re.findall(pattern, re.sub(r"[^a-z0-9]", "", text))] if pattern else []
    return tuple(dict.fromkeys(found))


def precision_parts(text: str) -> PrecisionParts | None:
    """The formats of a printed precision, by clause role; None when it names no format.

    >>> precision_parts("Generation FP8, Training BF16").formats
    (<Precision.BF16: 'bf16'>,)
    """
    roles = words().of("role")
    clauses = [c for c in re.split(r"[,;]", text.lower()) if c.strip()]
    by_role: list[tuple[str, tuple[Precision, ...]]] = []
    for clause in clauses:
        role = next((roles[w][0] for w in re.findall(r"[a-z]+", clause) if w in roles), None)
        if role is not None:
            by_role.append((role, _formats_in(clause)))
    training = [f for role, fs in by_role if role == "training" for f in fs]
    formats = tuple(dict.fromkeys(training)) if by_role else _formats_in(text.lower())
    if not formats:  # no format, or roles printed and none of them training's
        return None
    return PrecisionParts(formats, tuple(by_role))


def matmul_precision(formats: tuple[Precision, ...]) -> Precision:
    """Of several formats in one recipe, the lowest: the one its matmuls run in, so the peak MFU is against."""
    return min(formats, key=_FORMAT_ORDER.index)


def precision_by_grammar(text: str) -> PrecisionReading | None:
    """A printed precision read from its parts; a mixed recipe keeps its meaning in a sentence."""
    parts = precision_parts(text)
    if parts is None:
        return None
    found = matmul_precision(parts.formats)
    others = [f"{role} in {'/'.join(f.value.upper() for f in fs) or 'an unread format'}" for role, fs in parts.roles
              if role != "training"]
    meaning = None
    if len(parts.formats) > 1:
        mixed = " + ".join(f.value.upper() for f in parts.formats)
        meaning = (f"{mixed} recipe: the matmuls run in {found.value.upper()}, so MFU is against the "
                   f"{found.value.upper()} dense peak" + (f"; {', '.join(others)}" if others else ""))
    elif others:
        meaning = f"training in {found.value.upper()} (MFU against its dense peak); {', '.join(others)}"
    return PrecisionReading(found, found, meaning)
