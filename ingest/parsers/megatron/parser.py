"""Megatron-LM family stdout (Megatron-LM/Core, Megatron-Bridge, Megatron-DeepSpeed, Primus, MindSpeed, Pai-Patch).

One step row per printed ``iteration N/ M | ... | elapsed time per iteration (ms): X | ...`` line. Step lines are
found and read vectorized with Polars over each chunk (the hot path of a 1 GB log); only configuration lines
(argument dump, YAML config, command line, ``using world size``) are read in Python, and they are few.

Decisions a reader of the data should know:
- Several ranks printing the same iteration (interleaved output, Primus printing each line twice): the first
  line of a step is kept; later ones are counted in a warning. Only the highest step seen is tracked, so a
  step number at or below it is a duplicate (memory does not grow with the file).
- Several launches in one file (a new ``arguments`` dump or ``using world size`` after steps): a launch that
  resumes above the highest step so far continues the same launch (joined); one whose numbering restarts (a
  smoke test before the main run, a restart from a checkpoint) is a launch of its own. Every launch's steps are
  stored, numbered in the ``launch`` column; the run's configuration is its longest launch's
  (perfledger.calc.launches.longest_launch), and the summary uses that launch.
- Configuration: the last value stated wins (Megatron-Bridge dumps its default recipe, then the override).
- ``tokens`` per step: ``consumed tokens`` deltas when printed, else global batch x sequence length
  (``actual seqlen`` on the line, else ``seq_length`` from the config).
- ``reported_tokens_per_s_per_device``: a per-GPU field when printed, else the aggregate ``tokens per second``
  divided by the world size.
- A row is one *logged* iteration; with ``log-interval`` k the printed time is the mean over k iterations.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import polars as pl

from ingest import native
from ingest.parsers._common import run_config
from ingest.parsers.megatron.config import _Launch, _State
from ingest.parsers.megatron.frame import StepFramer
from ingest.parsers.megatron.scan import _scanned_segments, _Segment, _segments
from ingest.text import TextChunk
from perfledger.calc.launches import longest_launch
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, empty_steps
from perfledger.vocabulary import LogFormat

_SNIFF = re.compile(
    r"elapsed time per iteration \(ms\)|-- arguments --|using world size:|_model_parallel_size \.{3,}"
    r"|megatron\.bridge\.training|pretrain_(?:gpt|mcore_\w+|llama\w*|bert|t5|mamba)\.py")
_CLAIMS = re.compile(_SNIFF.pattern + r"|^\s*\w{1,80} \.{3,} \S|\biteration {0,12}\d{1,12}/ {0,12}\d{1,12} \||megatron\.")


class MegatronParser(StepFramer):
    format = LogFormat.MEGATRON
    # The 1 GB log, 5 runs each (median s, peak RSS MB), with the store's 40 MB insert: 6 MB chunks (5.7, 287
    # with a 64 MB insert), 8 MB (5.9, 243-280), 10 MB (5.2, 238-275), 12 MB (5.1, 245-301). Bigger chunks mean
    # fewer per-chunk query plans and thread handoffs; 12 MB left no margin under issue 8's 300 MB. Once the
    # store dropped the insert's cached blocks before the summary, on a faster machine, 5 runs each interleaved:
    # 10 MB (2.86 s, 264 median, 269 max), 12 MB (2.75, 255, 273), 14 MB (2.74, 277, 285), 16 MB (2.68, 284, 288);
    # the 100 MB log: 10 MB 252-256, 12 MB 266-270.
    # Without the compiled scanner a chunk's lines become a Polars frame of strings: at 10 MB the 1 GB log then
    # peaked at 283-294 MB (304 median of 3 in a second series), at 6 MB at 258-272 MB, 5% slower.
    CHUNK_BYTES_SCANNED = 12 * 1024 * 1024
    CHUNK_BYTES_POLARS = 6 * 1024 * 1024

    @property
    def chunk_bytes(self) -> int | None:
        return self.CHUNK_BYTES_SCANNED if native.labeled_scan() is not None else self.CHUNK_BYTES_POLARS

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        return _SNIFF.search(head) is not None

    @classmethod
    def claims(cls, line: str) -> bool:
        """Iteration lines, argument-dump lines (`  num_layers ...... 24`) and Megatron's own logger lines."""
        return _CLAIMS.search(line) is not None

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self._s = _State()

    # -- chunks ---------------------------------------------------------------------------------------------

    def feed(self, lines: Sequence[str], first_lineno: int) -> pl.DataFrame:
        # MegatronParser's own prepare: DeepSpeedParser, which feeds Megatron chunks through here, keeps the base one
        return self._feed_segments(MegatronParser.prepare(self, lines, first_lineno))

    def prepare(self, lines: Sequence[str], first_lineno: int) -> list[_Segment]:
        return _segments(pl.Series("line", lines, dtype=pl.String), first_lineno, all(map(str.isascii, lines)))

    def prepare_chunk(self, chunk: TextChunk) -> list[_Segment]:
        if (scanned := _scanned_segments(chunk.text, chunk.first_lineno)) is not None:
            return scanned
        first_lineno, ascii = chunk.first_lineno, chunk.text.isascii()
        lines = pl.Series("line", chunk.lines(), dtype=pl.String)
        del chunk  # its text (chunk_bytes) is not needed past here; the pipeline holds no other reference
        return _segments(lines, first_lineno, ascii)

    def feed_prepared(self, prepared: list[_Segment]) -> pl.DataFrame:
        return self._feed_segments(prepared)

    def _feed_segments(self, segments: list[_Segment]) -> pl.DataFrame:
        frames = []
        for segment in segments:
            if segment.starts_launch:
                self._launch_marker()
            for line in segment.config_lines:
                self._config_line(line)
            if segment.steps is not None and (frame := self._steps(segment.steps)).height:
                frames.append(frame)
        return pl.concat(frames) if frames else empty_steps()

    def _launch_marker(self) -> None:
        s = self._s
        if s.steps_in_launch:
            s.launches += 1
            s.launch = _Launch.PENDING
            s.pending = {}
            s.steps_in_launch = 0

    # -- summary --------------------------------------------------------------------------------------------

    def finish(self) -> ParseSummary:
        s = self._s
        if not s.rows:
            raise ParseError(self.file_name, None, self._why_no_steps())
        if (chosen := longest_launch(s.launch_rows)) != s.launch_no:
            s.config = s.launch_configs[chosen]  # the configuration of the launch the run is summarised over
        return ParseSummary(
            format=self.format,
            config=run_config(self._config_fields()),
            problems=tuple(self.problems),
            warnings=tuple(self._warnings()),
            skipped_lines=self.skipped_lines,
            meta=self._meta(),
        )

    def _why_no_steps(self) -> str:
        if self._s.truncated:
            return "no complete training iteration line: every 'iteration N/ M' line was cut short"
        return ("no training iteration found (expected Megatron lines like "
                "'iteration 10/ 500 | ... | elapsed time per iteration (ms): 1234.5 | ...')")


    def _warnings(self) -> list[str]:
        s = self._s
        out = []
        if s.duplicates:
            out.append(f"{s.duplicates} iteration lines repeated a step already read (several ranks printing, "
                       "or a logger printing twice); the first line of each step was kept")
        if s.restarts:
            chosen = longest_launch(s.launch_rows)
            spans = ", ".join(f"{n}: steps {a}-{b} ({s.launch_rows[n]} rows)" for n, (a, b) in s.launch_steps.items())
            out.append(f"{len(s.launch_rows)} launches in one file (step numbering restarted at "
                       f"{', '.join(s.restarts)}): {spans}; every launch is stored, the summary uses launch "
                       f"{chosen}, the longest")
        if s.resumed:
            out.append(f"the run was relaunched and resumed at {', '.join(s.resumed)}; steps kept as one run")
        if s.skipped_iterations:
            out.append(f"{s.skipped_iterations} iterations were skipped by the optimizer (loss-scale overflow) "
                       f"across {s.rows_with_skips} logged rows; those rows are kept")
        if s.nan_iterations:
            out.append(f"{s.nan_iterations} iterations had a NaN loss (Megatron's 'number of nan iterations')")
        if s.nonfinite_losses:
            out.append(f"{s.nonfinite_losses} logged rows have a NaN or infinite loss; kept as NaN/inf")
        if s.incomplete_lines:
            out.append(f"{s.incomplete_lines} iteration lines end early (cut short?); their complete fields kept")
        if self._world_size() is None:
            out.append("world size not stated in the log: per-device figures need --devices")
        return out

    def _meta(self) -> dict[str, Any]:
        s = self._s
        meta: dict[str, Any] = {}
        if s.step_deltas:
            meta["log_interval"] = max(s.step_deltas.items(), key=lambda kv: kv[1])[0]
        if s.peak_allocated_mb is not None:
            meta["peak_max_allocated_gib"] = round(s.peak_allocated_mb / 1024, 3)
        if (iters := self._config_int("train_iters")) is not None:
            meta["train_iters"] = iters
        if s.ds_version:
            meta["deepspeed_version"] = s.ds_version
        if s.launches > 1:
            meta["launches"] = s.launches
        if len(s.launch_rows) > 1:
            meta["launch_summarised"] = longest_launch(s.launch_rows)
        return meta



PARSER = MegatronParser
