"""python -m ingest.corrections RUN FIELD=VALUE... [--reason TEXT] [--db URL]: correct a stored run's identity
(model, accelerator, devices, precision, sequence length, global or micro batch) in place.

Everything derived is recomputed from the run's stored steps under its stored steady rule (nothing parsed): the
summary, its figures and result rows; the correction is kept with its time and reason (perfledger.store.corrections)
and each corrected field's provenance in the run's configuration says "user". `python -m perfledger runs set` runs
this in a child process (perfledger never imports ingest); the run page calls `correct` directly.
Exit 0: corrected (or nothing to change); 1: the store refused; 2: bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from typing import Any

from ingest import hints as hint
from ingest.pipeline import _catalog_rows, _stored_config, _stored_summary
from ingest.summary import parser_warnings, resolve_config, summarize
from perfledger import corrections, store
from perfledger.calc.steady import SteadyRule
from perfledger.errors import InvalidInput, PerfledgerError, UnknownId
from perfledger.records import ParseSummary, RunConfig
from perfledger.store.corrections import save_correction
from perfledger.store.runs import STEADY_LOCATOR
from perfledger.vocabulary import LogFormat

NOT_RUNS = (LogFormat.CLAIMS_CSV.value,)


@dataclass(frozen=True, slots=True)
class Corrected:
    run_id: int
    changed: tuple[corrections.Change, ...]
    ids: tuple[int, ...]
    warnings: tuple[str, ...]

    def lines(self) -> list[str]:
        if not self.changed:
            return [f"run {self.run_id}: nothing to change (it already states these values)"]
        out = [f"run {self.run_id}: corrected {c.field}: {c.before} -> {c.after} (correction {i})"
               for c, i in zip(self.changed, self.ids, strict=True)]
        return out + [f"  warning: {w}" for w in self.warnings if "catalog" in w or "unstated" in w]


def correct(engine: store.Engine, run_id: int, values: Mapping[str, Any], *, reason: str | None = None,
            now: datetime | None = None) -> Corrected:
    """Set the fields `values` names (perfledger.corrections.parse) on run `run_id` and recompute what follows."""
    stored = store.run(engine, run_id)
    if stored is None:
        raise InvalidInput(f"there is no run {run_id} in the store")
    if stored.format in NOT_RUNS:
        raise InvalidInput(f"item {run_id} is an import of published figures, not a run: correct its claims file")
    given = _hints(engine, values)
    known = {f.name for f in fields(RunConfig)}
    before = resolve_config(RunConfig(**{k: v for k, v in stored.config.items() if k in known}))
    after = resolve_config(hint.apply(before, given))
    changed = corrections.changes(before.stated(), after.stated(), list(values))
    if not changed:
        return Corrected(run_id, (), (), ())
    meta = stored.config.get("format_meta") or {}
    parsed = ParseSummary(format=LogFormat(stored.format), config=after, meta=meta,
                          warnings=parser_warnings(stored.warnings) + given.warnings)
    summary = summarize(parsed, after, store.steps(engine, run_id), _catalog_rows(engine, after), _rule(stored.summary))
    config = _stored_config(summary, meta) | {"identity": stored.config.get("identity") or {}}
    at = now or datetime.now(UTC)
    ids = save_correction(engine, run_id, config=config, summary=_stored_summary(summary), warnings=summary.warnings,
                          steady_results=[r for r in summary.results if r.locator == STEADY_LOCATOR],
                          changed=changed, reason=reason, at=at)
    return Corrected(run_id, tuple(changed), tuple(ids), tuple(given.warnings))


def _hints(engine: store.Engine, values: Mapping[str, Any]) -> hint.Hints:
    given = hint.hints_for(engine, model=values.get("model"), accelerator=values.get("accelerator"),
                           devices=values.get("n_devices"), precision=values.get("precision"),
                           seq_len=values.get("seq_len"))
    batch = {k: values[k] for k in ("global_batch", "micro_batch") if k in values}
    return replace(given, config=replace(given.config, **batch)) if batch else given


def _rule(summary: Mapping[str, Any] | None) -> SteadyRule:
    known = {f.name for f in fields(SteadyRule)}
    return SteadyRule(**{k: v for k, v in ((summary or {}).get("rule") or {}).items() if k in known})


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ingest.corrections", description=__doc__.splitlines()[0])
    p.add_argument("run", type=int)
    p.add_argument("assignments", nargs="+", metavar="FIELD=VALUE")
    p.add_argument("--reason", help="why (kept with the correction)")
    p.add_argument("--db")
    args = p.parse_args(argv)
    try:
        done = correct(store.engine_from_url(args.db), args.run, corrections.parse(args.assignments),
                       reason=args.reason)
    except (InvalidInput, UnknownId) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except PerfledgerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(done.lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
