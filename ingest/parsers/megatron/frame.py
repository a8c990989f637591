"""A segment's iteration lines -> step rows: launches numbered, cut-short lines dropped, repeated steps
dropped, tokens and per-device throughput derived, with the tallies behind the warnings."""

from __future__ import annotations

import polars as pl

from ingest.parsers._common import finite_or_null, step_frame_from_columns
from ingest.parsers.megatron.config import ConfigReader, _Launch
from ingest.parsers.megatron.scan import _StepLines
from perfledger.records import empty_steps


class StepFramer(ConfigReader):
    """The step half of MegatronParser: iteration columns -> a STEP_SCHEMA frame, in order, chunk by chunk."""

    def _steps(self, found: _StepLines) -> pl.DataFrame:
        s = self._s
        s.steps_in_launch += found.step.len()
        if s.launch is _Launch.PENDING:
            self._decide_launch(int(found.step[0]), int(found.lineno[0]))
        cols = self._drop_truncated(found.cols, found.step, found.lineno)
        step = cols.pop("_step")
        cols.pop("_lineno")
        if step.is_empty():
            return empty_steps()
        keep = self._first_of_each_step(step)
        if not keep.all():
            s.duplicates += int((~keep).sum())
            step = step.filter(keep)
            cols = {k: v.filter(keep) for k, v in cols.items()}
        if step.is_empty():
            return empty_steps()
        self._tally(cols, step)
        return self._frame(cols, step)

    def _decide_launch(self, first: int, lineno: int) -> None:
        s = self._s
        if s.max_step is None or first > s.max_step:
            if s.max_step is not None:
                s.resumed.append(f"line {lineno} (step {first})")
            s.launch = _Launch.KEPT
            for key, value in s.pending.items():
                s.config[key] = value
        else:  # the numbering restarts: a launch of its own, with its own configuration and step counters
            s.launch_configs[s.launch_no] = dict(s.config)
            s.launch_no += 1
            s.restarts.append(f"line {lineno} (step {first})")
            s.config = s.config | s.pending
            s.launch = _Launch.KEPT
            s.max_step = s.last_step = None
            s.last_consumed_tokens = s.last_consumed_samples = None
        s.pending = {}

    def _drop_truncated(self, cols: dict[str, pl.Series], step: pl.Series, lineno: pl.Series) -> dict[str, pl.Series]:
        ok = cols["elapsed_ms"].is_not_null()
        complete = cols["nan_iters"].is_not_null()
        for n in lineno.filter(~ok).to_list():
            self._s.truncated += 1
            self.problem(n, "iteration line without a complete 'elapsed time per iteration (ms)' field "
                            "(cut short?); the line was skipped", kind="cut line")
        for n in lineno.filter(ok & ~complete).to_list():
            self._s.incomplete_lines += 1
            self.note_problem(n, "iteration line ends before 'number of nan iterations' (cut short?); kept the "
                                 "fields that were complete", kind="cut line, complete fields kept")
        out = {k: v.filter(ok) for k, v in cols.items()} if not ok.all() else dict(cols)
        out["_step"] = step.filter(ok)
        out["_lineno"] = lineno.filter(ok)
        return out

    def _first_of_each_step(self, step: pl.Series) -> pl.Series:
        """True for a row whose step is above every step before it (in this chunk and earlier ones)."""
        s = self._s
        floor = s.max_step if s.max_step is not None else -1
        before = step.cum_max().shift(1).fill_null(floor)
        keep = (step > before) & (step > floor)
        s.max_step = max(floor, int(step.max()))  # type: ignore[arg-type]
        return keep

    def _tally(self, cols: dict[str, pl.Series], step: pl.Series) -> None:
        s = self._s
        if s.first_step is None:
            s.first_step = int(step[0])
        s.rows += step.len()
        s.launch_rows[s.launch_no] = s.launch_rows.get(s.launch_no, 0) + step.len()
        first = s.launch_steps.get(s.launch_no, (int(step[0]), 0))[0]
        s.launch_steps[s.launch_no] = (first, int(step[-1]))
        skipped = _counts(cols["skipped"])
        s.skipped_iterations += int(skipped.sum())
        s.rows_with_skips += int((skipped > 0).sum())
        s.nan_iterations += int(_counts(cols["nan_iters"]).sum())
        loss = cols["loss"]
        s.nonfinite_losses += int((loss.is_nan() | loss.is_infinite()).fill_null(False).sum())
        deltas = step.diff().drop_nulls()
        if s.last_step is not None:
            deltas = pl.concat([pl.Series([int(step[0]) - s.last_step]), deltas])
        for value, count in deltas.value_counts().iter_rows():
            s.step_deltas[int(value)] = s.step_deltas.get(int(value), 0) + int(count)

    def _frame(self, cols: dict[str, pl.Series], step: pl.Series) -> pl.DataFrame:
        s = self._s
        prev_step = step.shift(1, fill_value=s.last_step).cast(pl.Float64)
        span = step.cast(pl.Float64) - prev_step
        samples = cols["gbs"]
        if samples.null_count():
            consumed = cols["consumed_samples"]
            from_consumed = (consumed - consumed.shift(1, fill_value=s.last_consumed_samples)) / span
            samples = _fill(samples.fill_null(from_consumed), self._config_int("global_batch_size"))
        seq = _fill(cols["seqlen"], self._seq_len())
        tokens = samples * seq
        ct = cols["consumed_tokens"]
        if ct.null_count() < ct.len():
            tokens = ((ct - ct.shift(1, fill_value=s.last_consumed_tokens)) / span).fill_null(tokens)
        world = self._world_size()
        per_device = cols["tok_gpu"].fill_null(cols["tgs"])
        if world:
            per_device = per_device.fill_null(cols["tok_total"] / world)
        frame = step_frame_from_columns({
            "step": step,
            "step_time_s": cols["elapsed_ms"] / 1000.0,
            "tokens": tokens,
            "samples": samples,
            "loss": cols["loss"],
            "lr": cols["lr"],
            "grad_norm": cols["grad_norm"],
            "reported_tflops_per_device": cols["tflops"].fill_null(cols["tflops_ds"]),
            "reported_tokens_per_s_per_device": per_device,
            "memory_gb": cols["mem_max"].fill_null(cols["mem"]),
            "launch": pl.repeat(s.launch_no, step.len(), dtype=pl.Int64, eager=True),
        }, step.len())
        s.last_step = int(step[-1])
        s.last_consumed_tokens = _last(cols["consumed_tokens"], s.last_consumed_tokens)
        s.last_consumed_samples = _last(cols["consumed_samples"], s.last_consumed_samples)
        s.last_gbs = _last(cols["gbs"], s.last_gbs)
        return frame


def _last(series: pl.Series, previous: float | None) -> float | None:
    kept = series.drop_nulls()
    return float(kept[-1]) if kept.len() else previous


def _fill(series: pl.Series, value: float | None) -> pl.Series:
    return series if value is None else series.fill_null(value)


MAX_COUNT_PER_LINE = 2**31  # skipped / nan iterations one line reports; past it (1e309, 400 digits) a broken number


def _counts(column: pl.Series) -> pl.Series:
    """A per-line count column with nulls, NaN, infinities and values past MAX_COUNT_PER_LINE (or below 0) as 0,
    so the run's totals stay exact integers."""
    counts = finite_or_null(column)
    return counts.set(((counts < 0) | (counts > MAX_COUNT_PER_LINE)).fill_null(False), 0).fill_null(0)
