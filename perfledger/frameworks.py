"""Frameworks as data: how a framework's log is recognised and read, and what its configuration lines state.

Two files in the data folder (PERFLEDGER_DATA_DIR, else data/), beside the key vocabulary (perfledger.metric_keys):

`frameworks.csv`: one row per way a framework writes a log

    framework,grammar,recognise,line_prefix,workload,note

- `grammar` is the reader (a LogFormat value: `key_value` for console lines, `metrics` for record streams);
- `recognise` is a regular expression: a head line it matches is evidence of the framework, and a file whose head
  holds one is read as that framework's (its key rows apply);
- `line_prefix` is a regular expression removed from the start of each line before it is read (`DLLL ` before
  NeMo's DLLogger JSON, `Train ` before Composer's items);
- `workload` is the workload every run of the framework is (verl: `rlhf`), or empty.

`config_keys.csv`: one row per configuration key spelling

    framework,key,field,unit,value,note

- `key` is the key as a configuration line prints it. It is matched in every common spelling: `key: value`,
  `key=value`, `key = value`, `"key": value`, `'key': value`, `--key value`, `--key=value`, under any dotted or
  slashed parent (`cfg/key`, `model.key`), `_` and `-` alike. A key that starts with `re:` is a regular expression
  whose first group is the value, for sentences (`re:GPU \\d+: (.+?) \\(UUID`).
- `field` is a run configuration field (RunConfig) or a quantity one is derived from (FIELDS).
- `unit` says how the value is read (VALUE_UNITS): a count, a name, a precision, the count of lines that match
  (per-rank lines: weak evidence, used when nothing stronger states the device count), or a flag: the key's
  presence states `value` (`--bf16` states precision bf16).

Rows of `*` apply to any log; a framework's rows apply only to its logs, and a framework's row of a key shadows the
`*` rows of that key in its logs (field `not_read`: the key means nothing for the run there, as NeMo's Lightning
`accumulate_grad_batches`). Nothing here knows a framework.
"""

from __future__ import annotations

import csv
import functools
import io
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from perfledger.errors import DataFileError
from perfledger.quantities import workload_in
from perfledger.settings import data_dir as settings_data_dir
from perfledger.vocabulary import LogFormat

FRAMEWORKS_FILE = "frameworks.csv"
CONFIG_KEYS_FILE = "config_keys.csv"
FRAMEWORK_HEADER = ("framework", "grammar", "recognise", "line_prefix", "workload", "note")
CONFIG_HEADER = ("framework", "key", "field", "unit", "value", "note")
GRAMMARS = (LogFormat.KEY_VALUE.value, LogFormat.METRICS.value)
WORKLOADS = ("pretrain", "sft", "lora_finetune", "rlhf")

# field -> what it states (RunConfig fields, and the quantities others are derived from)
FIELDS: dict[str, str] = {
    "model": "the model's name", "run_name": "a run name that may name the model (used only when it resolves)",
    "accelerator": "the accelerator's name", "n_devices": "devices over the whole run",
    "nodes": "nodes", "devices_per_node": "devices on each node", "precision": "the training precision",
    "seq_len": "tokens per sample", "global_batch": "samples per optimizer step, all devices",
    "micro_batch": "samples per device per micro-step", "grad_accum": "micro-steps per optimizer step",
    "tokens_per_step": "tokens per optimizer step, all devices", "logging_steps": "optimizer steps per logged record",
    "tp": "tensor parallel size", "pp": "pipeline parallel size", "dp": "data parallel size",
    "cp": "context parallel size", "ep": "expert parallel size", "zero_stage": "DeepSpeed ZeRO stage",
    "framework_version": "the framework's version", "workload": "pretrain, sft, lora_finetune or rlhf",
    "num_layers": "transformer layers", "hidden_size": "hidden size", "ffn_hidden_size": "feed-forward size",
    "num_attention_heads": "attention heads", "num_kv_heads": "key-value heads (query groups)",
    "num_experts": "experts of a mixture-of-experts layer", "moe_top_k": "experts each token is routed to",
    "printed_window": "steps each of the log's own printed throughput figures is a mean over (a speed monitor's)",
    "tokenizer": "the tokenizer's name: never the model's, whatever model it was first published with",
    "not_read": "nothing: the framework prints the key with no meaning for the run (its generic row shadowed)",
}
# unit -> how the value is read
VALUE_UNITS: dict[str, str] = {
    "count": "a whole number (thousands commas and a trailing .0 allowed)",
    "count+1": "a whole number, plus one (peers of a rank: the ranks are one more)",
    "lines": "how many lines match (one per rank: weak evidence of the device count)",
    "name": "a name as printed (a model, an accelerator, a version)",
    "hint_name": "a name used only when the catalog knows it (a run name, a class path's last part)",
    "host_name": "a host, node, instance or cluster name: an accelerator is read from it only when the catalog "
                 "finds exactly one in its words (perfledger.catalog.accelerator_in_name), and said so",
    "precision": "a precision as printed (bf16-mixed, Precision.AMP_BF16, bfloat16)",
    "flag": "the key's presence states the row's value (--bf16: precision bf16)",
    "workload": "a workload word (lora, sft, ...)",
}
_TEXT_FIELDS = frozenset({"model", "run_name", "tokenizer", "accelerator", "precision", "framework_version", "workload"})


@dataclass(frozen=True, slots=True)
class FrameworkRow:
    framework: str
    grammar: str
    recognise: re.Pattern[str]
    line_prefix: re.Pattern[str] | None
    workload: str = ""
    note: str = ""


@dataclass(frozen=True, slots=True)
class ConfigKey:
    framework: str
    key: str
    field: str
    unit: str
    value: str = ""
    note: str = ""

    @property
    def is_pattern(self) -> bool:
        return self.key.startswith("re:")

    def applies_to(self, frameworks: tuple[str, ...]) -> bool:
        return self.framework == "*" or self.framework in frameworks


@functools.lru_cache(maxsize=8)
def _joined(frameworks: Frameworks, grammar: str) -> re.Pattern[str] | None:
    try:
        return re.compile("|".join(f"(?:{row.recognise.pattern})" for row in frameworks.grammar_rows(grammar)) or "(?!)")
    except re.error:
        return None


@dataclass(frozen=True, eq=False)
class Frameworks:
    """Every framework row and configuration key, in file order."""

    rows: tuple[FrameworkRow, ...]
    config_keys: tuple[ConfigKey, ...]

    def recognised(self, lines: list[str], grammar: str | None = None) -> list[str]:
        """The frameworks whose `recognise` pattern matches one of these lines (of `grammar`, when given), in file
        order."""
        found: dict[str, None] = {}
        for row in self.rows:
            if (grammar is None or row.grammar == grammar) and row.framework not in found \
                    and any(row.recognise.search(line) for line in lines):
                found[row.framework] = None
        return list(found)

    def recognises(self, line: str, grammar: str) -> bool:
        """Whether a framework row of `grammar` recognises the line: one search of their patterns joined (a
        detection asks it of every head line)."""
        joined = _joined(self, grammar)
        if joined is None:  # a user's pattern with flags of its own: each searched alone
            return any(row.recognise.search(line) for row in self.grammar_rows(grammar))
        return joined.search(line) is not None

    def of(self, framework: str | None) -> tuple[FrameworkRow, ...]:
        return tuple(row for row in self.rows if row.framework == framework)

    def grammar_rows(self, grammar: str) -> tuple[FrameworkRow, ...]:
        return tuple(row for row in self.rows if row.grammar == grammar)


def data_path(name: str, data_dir: Path | None = None) -> Path:
    return (data_dir or settings_data_dir()) / name


def load_frameworks(data_dir: Path | None = None) -> Frameworks:
    """Both files, checked row by row; read again only when one changes."""
    paths = (data_path(FRAMEWORKS_FILE, data_dir), data_path(CONFIG_KEYS_FILE, data_dir))
    stamps = []
    for path in paths:
        try:
            stat = path.stat()
        except OSError as exc:
            raise DataFileError(str(path), None, f"the framework rows cannot be read ({exc.strerror})") from None
        stamps.append((stat.st_mtime_ns, stat.st_size))
    return _load(paths[0], paths[1], tuple(stamps))


@functools.lru_cache(maxsize=8)
def _load(frameworks: Path, config: Path, stamps: tuple[tuple[int, int], ...]) -> Frameworks:
    return Frameworks(
        rows=tuple(parse_framework_rows(frameworks.read_text(encoding="utf-8"), str(frameworks))),
        config_keys=tuple(parse_config_keys(config.read_text(encoding="utf-8"), str(config))))


def _records(text: str, file_name: str, header: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    reader = csv.reader(io.StringIO(text))
    first = next(reader, None)
    if first is None or tuple(h.strip() for h in first) != header:
        raise DataFileError(file_name, 1, f"the header must be {','.join(header)}")
    out = []
    for lineno, fields in enumerate(reader, start=2):
        if not any(f.strip() for f in fields):
            continue
        if len(fields) != len(header):
            raise DataFileError(file_name, lineno, f"{len(fields)} fields where the header has {len(header)}")
        out.append((lineno, dict(zip(header, (f.strip() for f in fields), strict=True))))
    return out


def _pattern(text: str, what: str, file_name: str, lineno: int) -> re.Pattern[str]:
    """The pattern compiled; lines are searched with it in Polars too, whose regular expressions have no
    look-around or back-reference (a row using one would stop every ingest)."""
    try:
        pl.Series([""], dtype=pl.String).str.contains(text)
        return re.compile(text)
    except (re.error, pl.exceptions.PolarsError) as exc:
        reason = next((line for line in str(exc).splitlines() if line.startswith("error:")), str(exc))[:120]
        raise DataFileError(file_name, lineno, f"{what} {text!r} is not a regular expression both Python and "
                                               f"Polars read ({reason})") from None


def parse_framework_rows(text: str, file_name: str) -> list[FrameworkRow]:
    return [check_framework_row(fields, file_name, lineno) for lineno, fields in
            _records(text, file_name, FRAMEWORK_HEADER)]


def check_framework_row(fields: Mapping[str, str], file_name: str, lineno: int | None) -> FrameworkRow:
    where = lineno or 0
    if not fields.get("framework") or fields["framework"] == "*":
        raise DataFileError(file_name, lineno, "a framework row must name its framework")
    if fields.get("grammar") not in GRAMMARS:
        raise DataFileError(file_name, lineno, f"grammar must be one of: {', '.join(GRAMMARS)}")
    if not fields.get("recognise"):
        raise DataFileError(file_name, lineno, "recognise must be a regular expression a line of the log matches")
    printed = fields.get("workload", "")
    workload = workload_in(printed) if printed else None
    if printed and (workload is None or workload.value not in WORKLOADS):
        raise DataFileError(file_name, lineno, f"workload {printed!r} names none of: {', '.join(WORKLOADS)}")
    prefix = fields.get("line_prefix", "")
    return FrameworkRow(framework=fields["framework"], grammar=fields["grammar"],
                        recognise=_pattern(fields["recognise"], "recognise", file_name, where),
                        line_prefix=_pattern(prefix, "line_prefix", file_name, where) if prefix else None,
                        workload=workload.value if workload else "", note=fields.get("note", ""))


def parse_config_keys(text: str, file_name: str) -> list[ConfigKey]:
    return [check_config_key(fields, file_name, lineno) for lineno, fields in
            _records(text, file_name, CONFIG_HEADER)]


def check_config_key(fields: Mapping[str, str], file_name: str, lineno: int | None) -> ConfigKey:
    key, field, unit = fields.get("key", ""), fields.get("field", ""), fields.get("unit", "")
    if not key:
        raise DataFileError(file_name, lineno, "key must be the configuration key as printed, or re:PATTERN")
    if field not in FIELDS:
        raise DataFileError(file_name, lineno, f"field {field!r} is not one of: {', '.join(FIELDS)}")
    if unit not in VALUE_UNITS:
        raise DataFileError(file_name, lineno, f"unit {unit!r} is not one of: {', '.join(VALUE_UNITS)}")
    textual = unit in ("name", "hint_name", "host_name", "precision", "workload")
    if textual != (field in _TEXT_FIELDS) and unit != "flag":
        raise DataFileError(file_name, lineno, f"unit {unit} does not fit field {field}")
    if key.startswith("re:"):
        pattern = _pattern(key[3:], "key", file_name, lineno or 0)
        if pattern.groups < 1 and unit not in ("lines", "flag"):
            raise DataFileError(file_name, lineno, "a re: key needs a group around the value")
    if (unit == "flag") != bool(fields.get("value")):
        raise DataFileError(file_name, lineno, "a flag (and only a flag) states its value in the value column")
    return ConfigKey(framework=fields.get("framework") or "*", key=key, field=field, unit=unit,
                     value=fields.get("value", ""), note=fields.get("note", ""))


def header_of(text: str) -> tuple[str, ...]:
    """A CSV text's header row, stripped."""
    first = next(csv.reader(io.StringIO(text)), [])
    return tuple(h.strip() for h in first)


def add_file_rows(text: str, file_name: str, data_dir: Path | None = None, *, dry_run: bool = False) -> tuple[Path, int]:
    """Check every row of a CSV with the header of frameworks.csv or config_keys.csv and append them to that file
    in the data folder (nothing written when one is refused, or with dry_run); returns (the file, rows)."""
    header = header_of(text)
    if header == FRAMEWORK_HEADER:
        name, count = FRAMEWORKS_FILE, len(parse_framework_rows(text, file_name))
    elif header == CONFIG_HEADER:
        name, count = CONFIG_KEYS_FILE, len(parse_config_keys(text, file_name))
    else:
        raise DataFileError(file_name, 1, f"the header must be {','.join(FRAMEWORK_HEADER)} or "
                                          f"{','.join(CONFIG_HEADER)}")
    path = data_path(name, data_dir)
    load_frameworks(data_dir)  # the file as it is reads
    if not dry_run:
        rows = text.split("\n", 1)[1] if "\n" in text else ""
        existing = path.read_text(encoding="utf-8")
        with path.open("a", encoding="utf-8") as fh:
            fh.write(("" if existing.endswith("\n") or not existing else "\n") + rows.strip("\n") + "\n")
    return path, count
