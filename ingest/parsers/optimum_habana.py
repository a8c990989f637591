"""optimum-habana CI baselines (`tests/baselines/fixture/tests/test_examples.json`): for each pytest id,
per Gaudi generation (gaudi1 / gaudi2 / gaudi3), the reference train_runtime, train_samples_per_second and
quality metrics (perplexity, eval_f1 ...).

Each train_samples_per_second becomes a samples/s result (evidence reported: these are reference values the
project publishes, not raw trainer output), with accelerator_as_printed the generation key, the model name
taken from the test id, and locator the JSON path `<test id>/<generation>/train_samples_per_second`.
Device counts are not stated per entry: `single_card` tests say 1, others stay unknown.
"""

from __future__ import annotations

import re
from typing import Any

from ingest.parsers._common import json_number
from ingest.parsers._hf import JsonFileParser
from ingest.parsers.mlperf import resolve_accelerator_or_none
from perfledger.errors import ParseError
from perfledger.records import ParseSummary, ResultRecord, RunConfig
from perfledger.vocabulary import Evidence, LogFormat, Metric, SourceKind

_TEST_ID = re.compile(r"::test_\w+?_(?P<model>[^_]+(?:-[^_]+)*)_(?P<kind>single_card|multi_card|deepspeed)$")
_GENERATION = re.compile(r"^gaudi\d*$")


def model_from_test_id(test_id: str) -> tuple[str | None, str | None]:
    """'...::test_run_clm_gemma-2b-it_single_card' -> ('gemma-2b-it', 'single_card')."""
    m = _TEST_ID.search(test_id)
    return (m.group("model"), m.group("kind")) if m else (None, None)


class OptimumHabanaParser(JsonFileParser):
    format = LogFormat.OPTIMUM_HABANA_BASELINES

    @classmethod
    def sniff(cls, head: str, file_name: str) -> bool:
        return head.lstrip().startswith("{") and re.search(r'"[^"]*::[^"]*"\s*:\s*\{\s*"gaudi', head) is not None

    def finish(self) -> ParseSummary:
        doc = self.document()
        if not isinstance(doc, dict):
            raise ParseError(self.file_name, None, "not an object of test ids")
        results = [r for test_id, per_device in doc.items() for r in self._results(str(test_id), per_device)]
        if not results:
            raise ParseError(self.file_name, None, "no gaudi*/train_samples_per_second baselines found")
        return ParseSummary(
            format=self.format,
            config=RunConfig(framework="optimum-habana"),
            problems=tuple(self.problems),
            results=tuple(results),
            skipped_lines=self.skipped_lines,
            meta={"source_kind": SourceKind.BENCHMARK.value, "tests": len(doc)},
        )

    def _results(self, test_id: str, per_device: Any) -> list[ResultRecord]:
        if not isinstance(per_device, dict):
            self.problem(None, f"{test_id}: not an object of gaudi generations; skipped")
            return []
        model, kind = model_from_test_id(test_id)
        out = []
        for generation, figures in per_device.items():
            if not _GENERATION.match(str(generation)) or not isinstance(figures, dict):
                continue
            value = json_number(figures.get("train_samples_per_second"))
            if value is None or value <= 0:
                continue
            out.append(self._record(test_id, str(generation), figures, value, model, kind))
        return out

    def _record(self, test_id: str, generation: str, figures: dict[str, Any], value: float,
                model: str | None, kind: str | None) -> ResultRecord:
        others = ", ".join(f"{k}={v}" for k, v in figures.items() if k != "train_samples_per_second")
        return ResultRecord(
            metric=Metric.SAMPLES_PER_S.value,
            value=value,
            unit=Metric.SAMPLES_PER_S.unit,
            accelerator_id=resolve_accelerator_or_none(generation),
            accelerator_as_printed=generation,
            n_devices=1 if kind == "single_card" else None,
            framework="optimum-habana",
            model_as_printed=model,
            strategy="deepspeed" if kind == "deepspeed" else None,
            evidence=Evidence.REPORTED.value,
            locator=f"{test_id}/{generation}/train_samples_per_second",
            note=f"optimum-habana CI baseline ({test_id.split('::')[-1]}); {others}",
        )


PARSER = OptimumHabanaParser
