"""The torchtitan parser as first written, one line at a time in Python (test oracle only).

ingest/parsers/torchtitan.py reads step lines vectorized; tests/ingest/test_torchtitan_vectorized.py checks
that both give the same steps, problems and configuration. Verbatim but for this docstring.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest.parsers.base import LogParser
from ingest.parsers.mlperf import resolve_accelerator_or_none
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, RunConfig, steps_frame
from perfledger.vocabulary import LogFormat

GIB_TO_GB = 1.073741824
_NUM = r"(-?[\d,]*\.?\d+(?:[eE][-+]?\d+)?|nan|inf)"
_STEP = re.compile(r"(?<![A-Za-z_])step:\s*(\d+)\s+(?P<rest>.*)$")
_VALIDATE = re.compile(r"validat\w*\s+step:")
_FIELDS = {
    "loss": re.compile(r"\bloss:\s*" + _NUM),
    "grad_norm": re.compile(r"\bgrad_norm:\s*" + _NUM),
    "memory_gib": re.compile(r"\bmemory:\s*" + _NUM + r"\s*GiB"),
    "tps": re.compile(r"\btps:\s*" + _NUM),
    "tflops": re.compile(r"\btflops:\s*" + _NUM),
    "mfu_pct": re.compile(r"\bmfu:\s*" + _NUM + r"\s*%"),
    "lr": re.compile(r"\blr:\s*" + _NUM),
    "time_s": re.compile(r"\b(?:step_time|time):\s*" + _NUM + r"\s*s\b"),
}
_MESH = re.compile(r"parallelism:\s*(.*)$")
_MESH_DIM = re.compile(r"(\w+)=(\d+)")
_BATCH = re.compile(
    r"local batch size (\d+), global batch size (\d+), gradient accumulation steps (\d+), sequence length (\d+)"
)
_MODEL_BUILD = re.compile(r"Building (\S+) (\S+) with")
_MODEL_SIZE = re.compile(r"Model (\S+) (\S+) size: ([\d,]+) total parameters")
_GPU = re.compile(r"(?:CUDA|GPU|ROCm) capacity: (.+?) with ([\d.]+)GiB memory")
_VERSION = re.compile(r"torchtitan version: (\S+)")
_START = re.compile(r"Training starts at step (\d+)")


def _num(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


class TorchtitanParser(LogParser):
    format = LogFormat.TORCHTITAN

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        return "[titan]" in head or ("torchtitan" in head and _STEP.search(head) is not None)

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.config: dict[str, Any] = {}
        self.meta: dict[str, Any] = {}
        self.steps = 0
        self.validation_lines = 0
        self.saw_step_time = False

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        rows: list[dict[str, Any]] = []
        for offset, line in enumerate(lines):
            if "step:" in line:
                if _VALIDATE.search(line):
                    self.validation_lines += 1
                    continue
                if (m := _STEP.search(line)) is not None:
                    row = self._row(int(m.group(1)), m.group("rest"))
                    if row is None:
                        self.problem(first_lineno + offset, "step line without loss, tps or tflops; skipped")
                    else:
                        rows.append(row)
                    continue
            self._config_line(line)
        return steps_frame(rows)

    def _row(self, step: int, rest: str) -> dict[str, Any] | None:
        found = {name: _num(m.group(1)) if (m := rx.search(rest)) else None for name, rx in _FIELDS.items()}
        if found["loss"] is None and found["tps"] is None and found["tflops"] is None:
            return None
        self.steps += 1
        step_time = found["time_s"]
        self.saw_step_time = self.saw_step_time or step_time is not None
        mfu, mem = found["mfu_pct"], found["memory_gib"]
        return {
            "step": step,
            "step_time_s": step_time,
            "loss": found["loss"],
            "lr": found["lr"],
            "grad_norm": found["grad_norm"],
            "reported_tokens_per_s_per_device": found["tps"],
            "reported_tflops_per_device": found["tflops"],
            "reported_mfu": mfu / 100.0 if mfu is not None else None,
            "memory_gb": mem * GIB_TO_GB if mem is not None else None,
            "tokens": self._tokens(found["tps"], step_time),
        }

    def _tokens(self, tps: float | None, step_time: float | None) -> float | None:
        devices = self._devices()
        if tps is None or step_time is None or devices is None:
            return None
        return tps * step_time * devices

    def _devices(self) -> int | None:
        mesh = self.meta.get("mesh")
        if not mesh:
            return None
        product = 1
        for name in ("pp", "dp_replicate", "dp_shard", "cp", "tp"):
            product *= int(mesh.get(name, 1)) if int(mesh.get(name, 1)) > 0 else 1
        return product

    def _config_line(self, line: str) -> None:
        if "[titan]" not in line and "torchtitan" not in line and " - root - " not in line:
            return
        if (m := _MESH.search(line)) is not None and "mesh" not in self.meta:
            self.meta["mesh"] = {k: int(v) for k, v in _MESH_DIM.findall(m.group(1))}
        elif (m := _BATCH.search(line)) is not None:
            micro, gbs, ga, seq = (int(g) for g in m.groups())
            self.config.update(micro_batch=micro, global_batch=gbs, grad_accum=ga, seq_len=seq)
        elif (m := _MODEL_SIZE.search(line)) is not None:
            self.config.setdefault("model_as_printed", f"{m.group(1)} {m.group(2)}")
            self.meta["total_parameters"] = int(m.group(3).replace(",", ""))
        elif (m := _MODEL_BUILD.search(line)) is not None:
            self.config.setdefault("model_as_printed", f"{m.group(1)} {m.group(2)}")
        elif (m := _GPU.search(line)) is not None:
            self.config.setdefault("accelerator_as_printed", m.group(1).strip())
        elif (m := _VERSION.search(line)) is not None:
            self.config["framework_version"] = m.group(1)
        elif (m := _START.search(line)) is not None:
            self.meta["training_starts_at_step"] = int(m.group(1))
        elif "Peak flops undefined for" in line:
            self.meta["mfu_peak_fallback"] = line.split("Peak flops undefined for:", 1)[-1].split(",")[0].strip()

    def finish(self) -> ParseSummary:
        if self.steps == 0:
            raise ParseError(self.file_name, None, "no torchtitan step lines (`step: N  loss: ...  tps: ...`) found")
        return ParseSummary(
            format=self.format,
            config=self._run_config(),
            problems=tuple(self.problems),
            warnings=tuple(self._warnings()),
            skipped_lines=self.skipped_lines,
            meta={**self.meta, "validation_lines": self.validation_lines},
        )

    def _run_config(self) -> RunConfig:
        mesh: dict[str, int] = self.meta.get("mesh", {})
        accelerator = self.config.get("accelerator_as_printed")
        dp = mesh.get("dp_replicate", 1) * mesh.get("dp_shard", 1) if mesh else None
        return RunConfig(
            model=self.config.get("model_as_printed"),
            model_as_printed=self.config.get("model_as_printed"),
            accelerator=resolve_accelerator_or_none(accelerator),
            accelerator_as_printed=accelerator,
            n_devices=self._devices(),
            seq_len=self.config.get("seq_len"),
            global_batch=self.config.get("global_batch"),
            micro_batch=self.config.get("micro_batch"),
            grad_accum=self.config.get("grad_accum"),
            tp=mesh.get("tp"),
            pp=mesh.get("pp"),
            dp=dp,
            cp=mesh.get("cp"),
            ep=mesh.get("ep"),
            framework="torchtitan",
            framework_version=self.config.get("framework_version"),
            strategy="fsdp" if mesh.get("dp_shard", 1) > 1 else None,
        )

    def _warnings(self) -> list[str]:
        out = ["memory_gb is torchtitan's GiB converted to GB (x 1.073741824)"]
        if not self.saw_step_time:
            out.append("torchtitan prints no step time: step_time_s is empty; throughput comes from the logged tps")
        if "mfu_peak_fallback" in self.meta:
            out.append(
                f"torchtitan did not know the peak FLOPS of {self.meta['mfu_peak_fallback']}; its mfu uses a "
                "fallback peak (A100), so reported_mfu is not relative to this device"
            )
        return out


PARSER = TorchtitanParser
