"""DeepSpeed-Chat step 3 (RLHF): its per-PPO-step `|E2E latency=...|CurSamplesPerSec=...` lines as step rows.

The hybrid engine times a PPO step from one switch to generation to the next, so the line for step N comes after
step N's ``epoch: E|step: N|...`` line (the last step of a run has none). Step numbers continue over epochs.
"""

from __future__ import annotations

import re
from typing import Any

from ingest.parsers._common import to_float, to_int


class RlhfSteps:
    """The E2E lines read so far: each becomes a row with the step's end-to-end latency and its parts."""

    def __init__(self) -> None:
        self.seen = False  # an E2E line was seen: the file is a step-3 log
        self.rows = 0
        self.repeats = 0
        self.samples: int | None = None  # the last step's samples (the PPO step's generation batch, all devices)
        self._epoch: int | None = None
        self._offset = 0  # added to a printed step so that numbers continue over epochs
        self._printed: int | None = None  # the step named by the last `epoch: E|step: N` line, not yet timed
        self._last: int | None = None

    def step_line(self, epoch: int | None, step: int | None) -> None:
        if epoch is None or step is None:
            return
        if self._epoch is not None and epoch != self._epoch and self._last is not None:
            self._offset = self._last + 1 - step
        self._epoch = epoch
        self._printed = step + self._offset

    def row(self, m: re.Match[str], per_device_batch: int | None, seq: int | None) -> dict[str, Any] | None:
        """A step row from an E2E match (groups: latency, generate, training, CurSamplesPerSec).

        samples = CurSamplesPerSec x latency, both printed to 2 decimals, so rounded to a whole multiple of the
        per-device generation batch when the command states it, else to a whole number.
        """
        step = self._printed if self._printed is not None else (self._last + 1 if self._last is not None else 0)
        self._printed = None
        if self._last is not None and step <= self._last:
            self.repeats += 1
            return None
        self._last = step
        latency, per_s = to_float(m.group(1)), to_float(m.group(4))
        samples = None
        if latency and per_s:
            unit = per_device_batch or 1
            samples = max(1, round(per_s * latency / unit)) * unit
            self.samples = samples
        self.rows += 1
        return {
            "step": step,
            "step_time_s": latency,
            "samples": samples,
            "tokens": samples * seq if samples and seq else None,
            "generation_s": to_float(m.group(2)),
            "training_s": to_float(m.group(3)),
        }


def prompt_and_answer(cmd: dict[str, str]) -> int | None:
    """The sequence a PPO step trains on: the prompt and the answer at their maximum lengths."""
    prompt, answer = to_int(cmd.get("max_prompt_seq_len")), to_int(cmd.get("max_answer_seq_len"))
    return prompt + answer if prompt and answer else None
