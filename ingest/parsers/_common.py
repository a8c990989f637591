"""Helpers shared by the line parsers: number parsing, rank prefixes, key/value extraction, config merging.

Everything here is pure and generic (no format knows about another); parsers import what they need.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

from perfledger.records import STEP_SCHEMA, RunConfig, empty_steps
from perfledger.vocabulary import Precision

# A printed number as frameworks write it: 12, 1.5, 1.000E-05, .5, nan, NAN, inf, -INF.
NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|[nN][aA][nN]|[iI][nN][fF])"

# Prefixes launchers and loggers put before a framework's own text:
#   "9: [default3]: "                     srun --label + torchrun --tee
#   "[rank3]: " / "[1,0]<stdout>: "         torchrun / mpirun --tag-output
#   "[20260511 02:59:23][rank-7/8][DEBUG] [utils.py:425] : "   AMD Primus logger
RANK_PREFIX = re.compile(
    r"^(?:\d+:\s*)?(?:\[default\d+\]:\s*)?(?:\[rank\d+\]:\s*)?(?:\[\d+,\d+\]<std(?:out|err)>:\s*)?"
    r"(?:\[\d{8} [\d:]+\]\[rank-\d+/\d+\]\[\w+\]\s*\[[^\]]*\]\s*:\s*)?"
)

_INTEGER = re.compile(r"[-+]?\d+")
_TRUE = frozenset({"true", "yes", "1", "on"})
_FALSE = frozenset({"false", "no", "0", "off", "none", "null", ""})


def strip_rank_prefix(line: str) -> str:
    """The line without launcher/logger prefixes ("9: [default3]: ", Primus "[date][rank-7/8][DEBUG] [f:1] : ")."""
    return RANK_PREFIX.sub("", line, count=1)


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1  # the store's step and count columns are 64-bit


def to_float(value: object, *, thousands: bool = False) -> float | None:
    """A printed number ("1.5", "12%", and "1,234" with thousands=True) or a JSON number -> a finite float.

    None when absent, a bool, not a number, NaN, infinite or beyond the float range ("1e309", 400 digits): the
    caller counts or warns; nothing non-finite reaches the store, and nothing here raises.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip().rstrip("%")
        try:
            result = float(text.replace(",", "") if thousands else text)
        except ValueError:
            return None
    elif isinstance(value, int | float):
        try:
            result = float(value)
        except OverflowError:  # an int past the float range
            return None
    else:
        return None
    return result if math.isfinite(result) else None


def to_int(value: object, *, thousands: bool = False) -> int | None:
    """A printed integer (also "8.0", "1e3") or a JSON number -> int within 64 bits; None when absent, a bool,
    not a number, not whole, or beyond int64 (a step of 2e19 is a bad line, not a row the store refuses)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        result = value
    elif isinstance(value, str) and _INTEGER.fullmatch(text := value.strip()):
        try:
            result = int(text)
        except ValueError:  # more digits than int() reads (4,300): far past int64 anyway
            return None
    else:
        number = to_float(value, thousands=thousands)
        if number is None or number != int(number):
            return None
        result = int(number)
    return result if INT64_MIN <= result <= INT64_MAX else None


def load_json(text: str) -> Any:
    """json.loads, where nesting too deep for the interpreter ("[" * 50,000) or an integer of more than 4,300 digits
    is a JSONDecodeError like any other broken document, not a RecursionError or a bare ValueError."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", "", 0) from None
    except ValueError:
        raise json.JSONDecodeError("a number too long to read", "", 0) from None


def json_number(value: object) -> float | None:
    """A JSON number (not a bool, not a string) -> a finite float; None otherwise (see to_float)."""
    return to_float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def to_bool(text: str | None) -> bool | None:
    """"True"/"false"/"1"/"None" -> bool; None when the text is not a recognisable truth value."""
    if text is None:
        return None
    word = text.strip().strip("'\"").lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    return None


def is_unset(text: str | None) -> bool:
    """True for values that mean "not set": None, "None", "null", "" ."""
    return text is None or text.strip().strip("'\"").lower() in {"none", "null", ""}


def key_values(text: str, pattern: re.Pattern[str]) -> dict[str, str]:
    """Every (key, value) pair `pattern` (two groups) finds in text; later keys win."""
    return {m.group(1).strip(): m.group(2).strip() for m in pattern.finditer(text)}


def precision_from_flags(*, fp8: str | None, bf16: str | None, fp16: str | None) -> str | None:
    """Megatron-style flags -> a Precision value; fp8 wins (it runs on top of bf16/fp16)."""
    if fp8 is not None and not is_unset(fp8) and to_bool(fp8) is not False:
        return Precision.FP8.value
    if to_bool(bf16):
        return Precision.BF16.value
    if to_bool(fp16):
        return Precision.FP16.value
    if to_bool(bf16) is False and to_bool(fp16) is False:
        return Precision.FP32.value
    return None


def precision_from_name(name: str | None) -> str | None:
    """"bf16-mixed", "bf16_mixed", "16-mixed", "fp8" ... -> a Precision value, or None."""
    if name is None:
        return None
    low = name.lower()
    for marker, precision in (("fp8", Precision.FP8), ("bf16", Precision.BF16), ("fp16", Precision.FP16),
                              ("16", Precision.FP16), ("fp32", Precision.FP32), ("32", Precision.FP32)):
        if marker in low:
            return precision.value
    return None


def run_config(values: Mapping[str, Any]) -> RunConfig:
    """A RunConfig from a dict whose keys are RunConfig field names; None values and unknown keys dropped."""
    known = RunConfig.__dataclass_fields__.keys()
    return RunConfig(**{k: v for k, v in values.items() if k in known and v is not None})


def grad_accum(global_batch: int | None, micro_batch: int | None, dp: int | None) -> int | None:
    """Micro-batches per step = global / (micro x data-parallel), when all are known and it divides."""
    if not (global_batch and micro_batch and dp):
        return None
    per_step = micro_batch * dp
    return global_batch // per_step if global_batch % per_step == 0 else None


def concat_steps(frames: Iterable[pl.DataFrame]) -> pl.DataFrame:
    """Step frames -> one frame with exactly STEP_SCHEMA (empty frames allowed)."""
    kept = [f.select(list(STEP_SCHEMA)).cast(STEP_SCHEMA) for f in frames if f.height]  # type: ignore[arg-type]
    return pl.concat(kept) if kept else empty_steps()


def null_column(name: str, height: int, dtype: pl.DataType | type[pl.DataType]) -> pl.Series:
    """height nulls of dtype (from a list of Nones: 80x slower, 0.5 ms for 30k rows)."""
    return pl.Series(name, [None], dtype=dtype).new_from_index(0, height)


def step_frame_from_columns(columns: Mapping[str, pl.Series | None], height: int) -> pl.DataFrame:
    """Columns by STEP_SCHEMA name (missing or None -> all null) -> a frame with exactly STEP_SCHEMA."""
    data = {}
    for name, dtype in STEP_SCHEMA.items():
        col = columns.get(name)
        data[name] = (null_column(name, height, dtype) if col is None
                      else finite_or_null(col.alias(name).cast(dtype, strict=False), keep_nan=name == "loss"))
    return pl.DataFrame(data)


def finite_or_null(column: pl.Series, *, keep_nan: bool = False) -> pl.Series:
    """A float column with ±inf ("inf", "1e309" cast from text) and NaN made null; with keep_nan, NaN stays (a
    diverged run's loss: the summary counts and warns about it). Other columns unchanged."""
    if not column.dtype.is_float() or column.is_finite().all():
        return column
    value = pl.lit(column)
    kept = value.is_finite() | value.is_nan() if keep_nan else value.is_finite()
    return pl.select(pl.when(kept).then(value)).to_series().alias(column.name)


# Durations a step can only have above zero: a negative or zero one (a clock that stepped back) is no figure.
DURATION_COLUMNS = ("step_time_s", "generation_s", "training_s")


def without_backward_durations(frame: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The steps with every negative or zero duration (DURATION_COLUMNS) made null, and how many steps had one."""
    bad = pl.any_horizontal(pl.col(c).fill_nan(None) <= 0 for c in DURATION_COLUMNS).fill_null(False)
    count = int(frame.select(bad.sum()).item())
    if not count:
        return frame, 0
    return frame.with_columns(pl.when(pl.col(c) > 0).then(pl.col(c)) for c in DURATION_COLUMNS), count


def backwards_warning(count: int) -> str:
    return (f"{count:,} step(s) with a negative or zero step time (a clock that stepped back?) are stored without "
            "it and left out of the figures")
