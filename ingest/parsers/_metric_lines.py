"""What the one-line-per-step logs share (llm.c's main.log, nanoGPT's stdout): a number as they print it, detection
by one line pattern, the count of training lines, and a summary that refuses a file without any.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from ingest.parsers.base import LogParser
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, RunConfig

# A number as printf writes it, captured: 3.2, 1e-05, nan, inf, -inf.
FLOAT = r"([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))"


class MetricLineParser(LogParser):
    sniff_pattern: ClassVar[re.Pattern[str]]
    framework: ClassVar[str]
    expected_lines: ClassVar[str]  # what a usable file holds, for the error when it holds none

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        return cls.sniff_pattern.search(head) is not None

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.steps = 0
        self.meta: dict[str, Any] = {}

    def step_too_big(self, lineno: int, digits: str) -> None:
        self.problem(lineno, f"step {digits[:40]} is beyond 64 bits; skipped")

    def summary(self, warnings: tuple[str, ...], meta: dict[str, Any]) -> ParseSummary:
        """The file's summary; ParseError when no training line was read."""
        if self.steps == 0:
            raise ParseError(self.file_name, None, f"no {self.expected_lines} lines found")
        return ParseSummary(
            format=self.format,
            config=RunConfig(framework=self.framework),
            problems=tuple(self.problems),
            warnings=warnings,
            skipped_lines=self.skipped_lines,
            meta=meta,
        )
