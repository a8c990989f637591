"""MaxText stdout (JAX on TPU and GPU): `completed step: 9, seconds: 5.667, TFLOP/s/device: 134.924,
Tokens/s/device: 8672.758, total_weights: 196608, loss: 10.374` per step, plus start-up lines
(`Config param per_device_batch_size: 24.0`, `Num_devices: 4, shape (...)`, `number parameters: 15.933 billion`,
`System Information: Jax Version: ...`).

Figures are kept as printed: `seconds` is the step time, TFLOP/s/device and Tokens/s/device are the log's own
per-device figures. Tokens per step = Tokens/s/device x seconds x devices when the device count is known
(MaxText computes Tokens/s/device as per_device_batch_size x max_target_length / seconds).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest.parsers._common import NUM, to_float, to_int
from ingest.parsers.base import LogParser
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, RunConfig, steps_frame
from perfledger.vocabulary import LogFormat

_STEP = re.compile(r"completed step: (\d+), seconds: (" + NUM + r")(?P<rest>.*)$")
_FIELDS = {
    "tflops": re.compile(r"TFLOP/s/device: (" + NUM + r")", re.IGNORECASE),
    "tokens": re.compile(r"Tokens/s/device: (" + NUM + r")", re.IGNORECASE),
    "loss": re.compile(r"\bloss: (" + NUM + r")"),
    "lr": re.compile(r"\blr: (" + NUM + r")"),
    "grad_norm": re.compile(r"\bgrad_norm: (" + NUM + r")"),
}
_CONFIG = re.compile(r"Config param (\w+): (.*)$")
_DEVICES = re.compile(r"Num_devices: (\d+)")
_PARAMS = re.compile(r"number parameters: (" + NUM + r") billion")
_JAX = re.compile(r"Jax Version: (\S+)")
_TFLOPS_PER_STEP = re.compile(r"Total TFLOPs: (" + NUM + r")")
_SNIFF = re.compile(r"completed step: \d+, seconds: ")
_CONFIG_KEYS = ("per_device_batch_size", "max_target_length", "model_name", "gradient_accumulation_steps",
                "dtype", "ici_tensor_parallelism", "ici_fsdp_parallelism", "steps")


class MaxtextParser(LogParser):
    format = LogFormat.MAXTEXT

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        return _SNIFF.search(head) is not None

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.steps = 0
        self.params: dict[str, str] = {}
        self.meta: dict[str, Any] = {}
        self.devices: int | None = None

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        lines = self.without_long_lines(lines, first_lineno)
        rows: list[dict[str, Any]] = []
        for offset, line in enumerate(lines):
            if "completed step: " in line and (m := _STEP.search(line)) is not None:
                row = self._row(m)
                if row is None:
                    self.problem(first_lineno + offset, "step beyond 64 bits; skipped")
                else:
                    rows.append(row)
            elif "Config param " in line and (m := _CONFIG.search(line)) is not None:
                if m.group(1) in _CONFIG_KEYS:
                    self.params[m.group(1)] = m.group(2).strip()
            else:
                self._start_up(line)
        return steps_frame(rows)

    def _start_up(self, line: str) -> None:
        if (m := _DEVICES.search(line)) is not None:
            self.devices = to_int(m.group(1))
        elif (m := _PARAMS.search(line)) is not None:
            self.meta["parameters_billions"] = to_float(m.group(1))
        elif (m := _JAX.search(line)) is not None:
            self.meta.setdefault("jax_version", m.group(1))
        elif (m := _TFLOPS_PER_STEP.search(line)) is not None:
            self.meta["model_tflops_per_step_per_device"] = to_float(m.group(1))
        elif line.startswith(("TFRT TPU ", "TFRT GPU ")):
            self.meta.setdefault("backend_as_printed", line.strip())

    def _row(self, m: re.Match[str]) -> dict[str, Any] | None:
        step = to_int(m.group(1))
        if step is None:
            return None
        self.steps += 1
        rest = m.group("rest")
        found = {name: to_float(f.group(1)) if (f := rx.search(rest)) is not None else None
                 for name, rx in _FIELDS.items()}
        seconds = to_float(m.group(2))
        tokens_per_dev = found["tokens"]
        tokens = (tokens_per_dev * seconds * self.devices
                  if tokens_per_dev is not None and seconds is not None and self.devices else None)
        return {"step": step, "step_time_s": seconds, "loss": found["loss"], "lr": found["lr"],
                "grad_norm": found["grad_norm"], "reported_tflops_per_device": found["tflops"],
                "reported_tokens_per_s_per_device": tokens_per_dev, "tokens": tokens}

    def finish(self) -> ParseSummary:
        if self.steps == 0:
            raise ParseError(self.file_name, None, "no MaxText step lines (`completed step: N, seconds: S, ...`) found")
        return ParseSummary(format=self.format, config=self._run_config(), problems=tuple(self.problems),
                            warnings=tuple(self._warnings()), skipped_lines=self.skipped_lines,
                            meta={**self.meta, "config_params": self.params})

    def _run_config(self) -> RunConfig:
        micro = to_float(self.params.get("per_device_batch_size"))
        seq_len = to_int(self.params.get("max_target_length"))
        global_batch = int(micro * self.devices) if micro and self.devices and micro * self.devices >= 1 else None
        return RunConfig(
            model=self.params.get("model_name"),
            model_as_printed=self.params.get("model_name"),
            accelerator_as_printed=self.meta.get("backend_as_printed"),
            n_devices=self.devices,
            seq_len=seq_len,
            global_batch=global_batch,
            micro_batch=int(micro) if micro is not None and micro == int(micro) and micro >= 1 else None,
            framework="maxtext",
            framework_version=self.meta.get("jax_version"),
        )

    def _warnings(self) -> list[str]:
        if self.devices is None:
            return [("MaxText's `Num_devices:` line was not found: tokens per step are empty; throughput comes "
                     "from the logged Tokens/s/device")]
        return []


PARSER = MaxtextParser
