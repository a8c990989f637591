"""The upload form's choices (model, accelerator, devices, precision, seq len): what a log or a stored run states,
as the form's starting values; the choices that differ from it, which travel as hints (ingest.hints); what a
change did, in one sentence; and the command line's flag advice as the form's user reads it."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from perfledger.calc.metrics import minutes
from perfledger.names import in_words
from perfledger.numbers import percent_text, text
from perfledger.views.mlperf import derived_tflops, per_device_tokens
from perfledger.vocabulary import Precision

PRECISIONS = tuple(p.value for p in Precision if p is not Precision.UNSTATED)


@dataclass(frozen=True, slots=True)
class Choices:
    """The form's values; None = not stated (and not overridden)."""

    model: str | None = None  # a catalog id, or a name as printed
    accelerator: str | None = None
    devices: int | None = None
    precision: str | None = None
    seq_len: int | None = None

    def as_json(self) -> dict[str, Any]:
        """The stated choices by name (the keyword arguments of ingest.hints.hints)."""
        return {k: v for k, v in asdict(self).items() if v is not None}


def stated(config: Mapping[str, Any]) -> Choices:
    """What a run's configuration states: the catalog id where the name resolved, else the name as printed."""
    precision = config.get("precision")
    return Choices(model=config.get("model") or config.get("model_as_printed"),
                   accelerator=config.get("accelerator") or config.get("accelerator_as_printed"),
                   devices=config.get("n_devices"), precision=None if precision == "unstated" else precision,
                   seq_len=config.get("seq_len"))


def chosen(model: str | None, accelerator: str | None, devices: int, precision: str | None, seq_len: int) -> Choices:
    """The form's widgets read as choices: blank names and zero counts are "not stated"."""
    return Choices(model=(model or "").strip() or None, accelerator=(accelerator or "").strip() or None,
                   devices=devices or None, precision=precision or None, seq_len=seq_len or None)


def overrides(before: Choices, after: Choices) -> Choices:
    """The choices that differ from what is stated; a choice left empty overrides nothing."""
    return Choices(**{k: v for k, v in asdict(after).items() if v is not None and v != getattr(before, k)})


LABELS = {"model": "model", "model_as_printed": "model as printed", "accelerator": "accelerator",
          "accelerator_as_printed": "accelerator as printed", "n_devices": "devices", "precision": "precision",
          "seq_len": "seq len"}


def changes_text(changed: Mapping[str, tuple[Any, Any]]) -> str:
    """What a re-annotation changed, e.g. "devices: 8 → 16; precision: — → bf16"; or that nothing did. A name as
    printed that is the id it resolved to is said once."""
    if not changed:
        return "nothing changed: the run already states these values"
    said = {k: v for k, v in changed.items()
            if not (k.endswith("_as_printed") and k.removesuffix("_as_printed") in changed
                    and changed[k.removesuffix("_as_printed")][1] == v[1])}
    return "; ".join(f"{LABELS.get(k, k)}: {_shown(was)} → {_shown(now)}" for k, (was, now) in said.items())


def _shown(value: Any) -> str:
    return "—" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


_FLAGS = re.compile(r"\b(pass|need|ingest with) (--[a-z-]+(?:/--[a-z-]+)*)(?: ID)?")
_NAMES = {"--model": "model", "--accelerator": "accelerator", "--devices": "devices", "--precision": "precision",
          "--seq-len": "seq len"}


def for_the_form(text: str) -> str:
    """A note written for the command line ("pass --model", "need --devices") as the upload form's user reads it:
    the flags become the form's selectors, and a metric's id its name ("mfu not computed" -> "MFU not computed")."""
    def said(m: re.Match[str]) -> str:
        names = " and ".join(_NAMES.get(f, f.lstrip("-")) for f in m.group(2).split("/"))
        return f"need the {names} chosen in the upload form" if m.group(1) == "need" else \
            f"choose the {names} in the upload form"
    return _FLAGS.sub(said, in_words(text))


def refused_reading(counts: Mapping[str, int]) -> list[str]:
    """A claims file's rows refused while it was read, counted by reason: "2 rows: no value"."""
    return [f"{n:,} row{'s' if n != 1 else ''}: {why}" for why, n in sorted(counts.items())]


_REFUSAL = re.compile(r"^(?P<file>.+?):(?:\d+:)? (?P<reason>.+)$", re.DOTALL)


def refusals_summary(refusals: Sequence[str], *, named: int = 3, reasons: int = 8) -> list[str]:
    """A folder's refusals ("FILE: reason", "FILE:LINE: reason") as one line per reason, most files first, naming
    the first `named` files of each; at most `reasons` lines, then how many files the other reasons refused. 10,000
    refused files were 10,000 boxes on the page (93 s to draw, other sessions slowed to 5 s a page).

    >>> refusals_summary(["a.txt: not a log", "b.txt:3: not a log", "c.bin: too large"])
    ['2 files: not a log (a.txt, b.txt)', 'c.bin: too large']
    """
    groups: dict[str, list[str]] = {}
    for refusal in refusals:
        m = _REFUSAL.match(refusal)
        file, reason = (m["file"], m["reason"]) if m else (refusal, "")
        groups.setdefault(reason, []).append(file if m else refusal)
    ranked = sorted(groups.items(), key=lambda group: -len(group[1]))
    lines = [_group_line(reason, files, named) for reason, files in ranked[:reasons]]
    rest = sum(len(files) for _, files in ranked[reasons:])
    return lines + ([f"{rest:,} more files, for {len(ranked) - reasons:,} other reasons"] if rest else [])


def _group_line(reason: str, files: Sequence[str], named: int) -> str:
    if len(files) == 1:
        return f"{files[0]}: {reason}" if reason else files[0]
    more = f" and {len(files) - named:,} more" if len(files) > named else ""
    return f"{len(files):,} files: {reason} ({', '.join(files[:named])}{more})"


@dataclass(frozen=True, slots=True)
class Figure:
    """One headline figure of an upload's preview: its label, its value as text ("—" when not known), and how it
    was obtained."""

    label: str
    text: str
    help: str = ""


def preview_figures(file_format: str, config: Mapping[str, Any], summary: Mapping[str, Any],
                    results: Sequence[Any]) -> tuple[Figure, ...]:
    """The figures an upload's preview leads with. A result file that states a time to train (an MLPerf result)
    leads with it, in minutes as MLPerf reports it, with the figures derived from it labelled so; any other log
    with its steady-state figures. `results` are the prepared run's result records (metric, value)."""
    stated = {r.metric: r.value for r in results if r.value is not None}
    seconds = stated.get("time_to_train_s")
    if seconds and (file_format == "mlperf" or summary.get("tokens_per_s_per_device") is None):
        return (Figure("Time to train", text(minutes(seconds), "min"),
                       "run_stop - run_start, in minutes as MLPerf reports it"),
                Figure("Tokens/s/device (derived)", text(per_device_tokens(config, stated)),
                       "trained tokens over the time to train, per device: not an MLPerf metric"),
                Figure("Model TFLOP/s/device (derived)", text(derived_tflops(config, summary, stated)),
                       "tokens/s per device x the model's FLOPs per token at the stated sequence length / 1e12"),
                Figure("Samples/s", text(stated.get("samples_per_s"), stored=True), "as the file logs it"),
                Figure("Devices", text(config.get("n_devices"))))
    return (Figure("Steady tokens/s/device", text(summary.get("tokens_per_s_per_device"))),
            Figure("Model TFLOP/s/device", text(summary.get("model_tflops_per_device"))),
            Figure("MFU", percent_text(summary.get("mfu"))),
            Figure("Median step time", text(summary.get("step_time_s_median"), "s")),
            Figure("Jitter (CV)", text(summary.get("jitter_cv"))))
