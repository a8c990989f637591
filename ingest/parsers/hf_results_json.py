"""Hugging Face `all_results.json` / `train_results.json`: one flat object of the run's final metrics
(train_runtime, train_samples_per_second, train_steps_per_second, train_loss, epoch, eval_*).

No steps; one result: samples/s over the whole run (evidence measured), the other figures kept in meta.
"""

from __future__ import annotations

import re
from typing import Any

from ingest.parsers._common import json_number
from ingest.parsers._hf import JsonFileParser, summary_results
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, RunConfig
from perfledger.vocabulary import Evidence, LogFormat

_FLAT_START = re.compile(r'\A\s*\{\s*"[^"]+"\s*:\s*-?\d')


class HfResultsJsonParser(JsonFileParser):
    format = LogFormat.HF_RESULTS_JSON

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        # a flat object whose first value is a number; optimum-habana's first value is an object
        return _FLAT_START.match(head) is not None and '"train_runtime"' in head and '"log_history"' not in head

    def finish(self) -> ParseSummary:
        doc = self.document()
        if not isinstance(doc, dict) or not any(json_number(v) is not None for v in doc.values()):
            raise ParseError(self.file_name, None, "not a flat object of metrics (all_results.json)")
        results = summary_results(doc, file_name=self.file_name, locator="train_samples_per_second",
                                  evidence=Evidence.MEASURED)
        if not results:
            raise ParseError(self.file_name, None, "no train_samples_per_second in the results file")
        meta: dict[str, Any] = {k: v for k, v in doc.items() if json_number(v) is not None}
        return ParseSummary(
            format=self.format,
            config=RunConfig(framework="transformers"),
            problems=tuple(self.problems),
            results=tuple(results),
            skipped_lines=self.skipped_lines,
            meta=meta,
        )


PARSER = HfResultsJsonParser
