"""NeMo (PyTorch Lightning) stdout: ``DLL`` dllogger lines and tqdm ``Epoch 0: ... global_step=...`` frames.

A ``DLL <date> - <step> reduced_train_loss : X  lr : ...  global_step : N  ...  train_step_timing in s : T`` line
carries full-precision values, so when the run logs through DLLogger (``DLLogger has been set up``, or any DLL
step line) the tqdm frames are ignored; otherwise each frame's ``global_step=N`` (rounded by tqdm to 4
significant digits) gives the step and the first frame showing a step gives its values. DLL records can sit at
the end of a tqdm frame on the same line and frames can be joined by "\\r"; both are split here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest.parsers._common import NUM, precision_from_name, run_config, to_bool, to_float, to_int
from ingest.parsers._nemo import IncreasingSteps, cfg_int, model_shape, step_row
from ingest.parsers.base import LogParser
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, ResultRecord, empty_steps, steps_frame
from perfledger.vocabulary import LogFormat, Metric

_SNIFF = re.compile(r"\[NeMo [IWE] |nemo_logging|NeMo configuration file|reduced_train_loss|DLLogger has been set up")
_DLL = re.compile(r"DLL \d{4}-\d\d-\d\d [\d:.]+ - (\w+) (.*)$")
# Linear time: a key is at most 120 characters (unbounded, the lazy key was re-read from every start: 32 s on a
# 40K-character line).
_DLL_PAIR = re.compile(r"([A-Za-z_][\w/ ]{0,120}?) : (\S+)")
_TQDM_PAIR = re.compile(r"(reduced_train_loss|global_step|consumed_samples|train_step_timing in s|lr|grad_norm)"
                        rf"=({NUM})")
_MEMBER = re.compile(r"MEMBER: \d+/(\d+)")
_GPU = re.compile(r"GPU \d+: (.{1,200}?) \(UUID")
_TFLOPS = re.compile(rf"TFLOPs per sec per GPU=({NUM})")
_YAML = re.compile(r"^\|?\s+(devices|num_nodes|precision|max_steps): ([^\s#]+)")


class NemoParser(LogParser):
    format = LogFormat.NEMO
    splits_frames = True

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        if "DLLL {" not in head:
            return bool(_SNIFF.search(head))
        return any(cls.claims(line) for line in head.split("\n"))

    @classmethod
    def claims(cls, line: str) -> bool:
        """NeMo's stdout lines; not its DLLogger file's `DLLL {...}` JSON (a record stream)."""
        return not line.startswith("DLLL {") and bool(_SNIFF.search(line))

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self._dll_mode = False
        self._steps = IncreasingSteps()
        self._params: dict[str, str] = {}
        self._yaml: dict[str, str] = {}
        self._world: int | None = None
        self._gpu: str | None = None
        self._tflops: list[tuple[float, int]] = []
        self._tflops_failed: list[str] = []

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        lines = self.without_long_lines(lines, first_lineno)
        rows: list[dict[str, Any]] = []
        for offset, line in enumerate(lines):
            if "DLL" in line or "global_step=" in line or "MEMBER:" in line or "UUID" in line \
                    or "TFLOPs per sec" in line or ": " in line[:40]:
                for frame in line.split("\r"):
                    self._frame(frame, first_lineno + offset, rows)
        return steps_frame(rows) if rows else empty_steps()

    def _frame(self, text: str, lineno: int, rows: list[dict[str, Any]]) -> None:
        if "DLLogger has been set up" in text:
            self._dll_mode = True
        dll_at = text.find("DLL ")
        if dll_at >= 0 and (m := _DLL.match(text, dll_at)) is not None:
            self._dll(m, lineno, rows)
            text = text[:dll_at]
        if not self._dll_mode and "global_step=" in text:
            self._tqdm(text, rows)
        elif (m := _MEMBER.search(text)) is not None:
            self._world = to_int(m.group(1))
        elif (m := _GPU.search(text)) is not None:
            self._gpu = self._gpu or m.group(1).strip()
        elif (m := _TFLOPS.search(text)) is not None and (tflops := to_float(m.group(1))) is not None:
            if tflops > 0:
                self._tflops.append((tflops, lineno))
            else:  # NeMo prints -1 when its FLOPs formula does not know the model
                self._tflops_failed.append(m.group(1))
        elif (m := _YAML.match(text)) is not None:
            self._yaml.setdefault(m.group(1), m.group(2))

    def _dll(self, m: re.Match[str], lineno: int, rows: list[dict[str, Any]]) -> None:
        self._dll_mode = True
        values = {k.strip(): v for k, v in _DLL_PAIR.findall(m.group(2))}
        if m.group(1) == "PARAMETER":
            self._params.update(values)
            return
        step = to_int(values.get("global_step")) if "global_step" in values else to_int(m.group(1))
        if step is None:
            self.problem(lineno, "DLL line without a step number; skipped")
            return
        self._add(rows, step, values)

    def _tqdm(self, text: str, rows: list[dict[str, Any]]) -> None:
        values = dict(_TQDM_PAIR.findall(text))
        step = to_int(values.get("global_step"))
        if step is not None:
            self._add(rows, step, values)

    def _add(self, rows: list[dict[str, Any]], step: int, values: dict[str, str]) -> None:
        if self._steps.take(step):
            rows.append(step_row(step, values, to_float, gbs=self._gbs(), seq=self._seq_len()))

    def _p(self, key: str) -> int | None:
        return cfg_int(self._params, key)

    def _gbs(self) -> int | None:
        return self._p("global_batch_size")

    def _seq_len(self) -> int | None:
        return self._p("encoder_seq_length") or self._p("data/seq_length")

    def finish(self) -> ParseSummary:
        if not self._steps.kept:
            raise ParseError(self.file_name, None, "no training step found (expected NeMo 'DLL ... global_step : N' "
                                                   "lines or tqdm frames with 'global_step=N')")
        return ParseSummary(format=self.format, config=self._config(), problems=tuple(self.problems),
                            warnings=tuple(self._warnings()), results=self._results(),
                            skipped_lines=self.skipped_lines)

    def _config(self) -> Any:
        p = self._params
        world = self._world
        if world is None and (devices := to_int(self._yaml.get("devices"))):
            world = devices * (to_int(self._yaml.get("num_nodes")) or 1)
        tp, pp, cp = self._p("tensor_model_parallel_size"), self._p("pipeline_model_parallel_size"), \
            self._p("context_parallel_size")
        dp = world // (tp * pp * (cp or 1)) if world and tp and pp else None
        fp8 = to_bool(p.get("cfg/fp8"))
        activation = (p.get("cfg/activation") or "").lower()
        experts = self._p("num_moe_experts")
        return run_config({
            "n_devices": world,
            "accelerator_as_printed": self._gpu,
            "precision": "fp8" if fp8 else precision_from_name(p.get("cfg/precision") or self._yaml.get("precision")),
            "seq_len": self._seq_len(),
            "global_batch": self._gbs(),
            "micro_batch": self._p("micro_batch_size"),
            "tp": tp, "pp": pp, "cp": cp, "dp": dp,
            "ep": self._p("expert_model_parallel_size"),
            "framework": "nemo",
            **model_shape(p),
            "vocab_size": self._p("override_vocab_size"),
            "swiglu": ("swiglu" in activation or "glu" in activation) if activation else None,
            "num_experts": experts,
            "moe_top_k": self._p("moe_router_topk") if experts else None,
        })

    def _warnings(self) -> list[str]:
        out = []
        if self._steps.repeats:
            out.append(f"{self._steps.repeats} progress frames or DLL lines repeated a step already read; first kept")
        if self._tflops_failed:
            out.append(f"NeMo printed 'TFLOPs per sec per GPU={self._tflops_failed[0]}': its FLOPs callback could "
                       "not count this model's FLOPs; not stored")
        if self._world is None:
            out.append("world size taken from the trainer config (devices x num_nodes)" if self._yaml.get("devices")
                       else "world size not stated in the log: per-device figures need --devices")
        return out

    def _results(self) -> tuple[ResultRecord, ...]:
        return tuple(ResultRecord(metric=Metric.MODEL_TFLOPS_PER_DEVICE.value, value=value,
                                  unit=Metric.MODEL_TFLOPS_PER_DEVICE.unit, evidence="reported",
                                  locator=f"line {lineno}", note="NeMo's 'TFLOPs per sec per GPU', printed once at the end of training over the whole run")
                     for value, lineno in self._tflops)


PARSER = NemoParser
