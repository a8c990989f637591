"""A campaign's score and the rule that gave it.

An MLPerf submission is scored as MLCommons scores it: the olympic mean of its runs' times to train, under the rule
for its benchmark in data/mlperf_scoring.csv (perfledger.calc.repeats.olympic_score). Any other campaign is
summarised by its best configuration: the median of that configuration's measured runs, on the campaign's headline
metric (higher is better for a throughput, lower for a time). A run stopped from outside (cancelled, or killed at its
time limit) measured the steps it logged and counts; one that ran out of memory, diverged or crashed does not.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace

from perfledger.calc.repeats import Spread, olympic_score, spread
from perfledger.campaigns import Attempt, CampaignScore
from perfledger.mlperf_rules import FILE_NAME, rule_for
from perfledger.vocabulary import CampaignKind, OutcomeKind

LOWER_IS_BETTER = frozenset({"time_to_train_s", "step_time_s"})
MEASURED = (OutcomeKind.COMPLETED.value, OutcomeKind.CANCELLED.value, OutcomeKind.TIMEOUT.value)


def mlperf_benchmark(submission: Mapping[str, str]) -> str | None:
    return submission.get("submission_benchmark") or None


def campaign_score(kind: CampaignKind, attempts: Sequence[Attempt], benchmark: str | None) -> CampaignScore:
    if kind is CampaignKind.MLPERF:
        return mlperf_score(attempts, benchmark)
    return best_configuration(attempts)


def mlperf_score(attempts: Sequence[Attempt], benchmark: str | None) -> CampaignScore:
    """The olympic mean of the result files' times to train; a run that did not converge counts as the slowest."""
    runs = [a for a in attempts if a.configuration.get("benchmark") == benchmark]
    rule = rule_for(benchmark)
    if rule is None:
        return CampaignScore(None, None, "MLPerf olympic mean",
                             f"no scoring rule for benchmark {benchmark!r} in data/{FILE_NAME}")
    times = [a.value if a.kind is OutcomeKind.COMPLETED and a.metric == "time_to_train_s" else None for a in runs]
    scored = olympic_score(times, rule)
    text = f"{rule.describe()} ({rule.source})"
    if scored.value is None:
        return CampaignScore(None, "s", text, scored.problem)
    return CampaignScore(scored.value, "s", text,
                         f"{scored.used} of {len(times)} runs averaged: {scored.value / 60:.3f} minutes")


def scaled(score: CampaignScore, factor: float, source: str) -> CampaignScore:
    """The score times the factor a benchmark's scaling.json gives it (MLCommons sets one in review when a closed
    submission converged in fewer samples than the reference; result_summarizer multiplies by it)."""
    if score.value is None or factor == 1:
        return score
    note = f"{score.note + '; ' if score.note else ''}times the scaling factor {factor:.6g} of {source}"
    return replace(score, value=score.value * factor, rule=f"{score.rule}, times the review's scaling factor",
                   note=note)


def configuration_key(configuration: Mapping[str, object]) -> str:
    return json.dumps(dict(configuration), sort_keys=True, default=str)


def measured_by_configuration(attempts: Sequence[Attempt], metric: str) -> dict[str, Spread]:
    """Each configuration's spread of `metric` over its measured attempts."""
    values: dict[str, list[float | None]] = {}
    for a in attempts:
        if a.kind.value in MEASURED and a.metric == metric:
            values.setdefault(configuration_key(a.configuration), []).append(a.value)
    return {key: s for key, vals in values.items() if (s := spread(vals)) is not None}


def best_configuration(attempts: Sequence[Attempt]) -> CampaignScore:
    """The best configuration's median of the campaign's headline metric (the metric most attempts carry)."""
    metrics = [a.metric for a in attempts if a.metric is not None and a.kind.value in MEASURED]
    if not metrics:
        return CampaignScore(None, None, "the best configuration's median",
                             f"no measured attempt carries a figure ({len(attempts)} attempts)")
    metric = max(sorted(set(metrics)), key=metrics.count)
    spreads = measured_by_configuration(attempts, metric)
    pick = min if metric in LOWER_IS_BETTER else max
    key = pick(spreads, key=lambda k: spreads[k].median)
    unit = next(a.unit for a in attempts if a.metric == metric)
    direction = "lowest" if metric in LOWER_IS_BETTER else "highest"
    return CampaignScore(spreads[key].median, unit,
                         f"the {direction} median {metric} of a configuration over its measured runs "
                         "(completed, cancelled or stopped at the time limit)",
                         f"{key}: {spreads[key].describe()}")
