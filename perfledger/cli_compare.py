"""python -m perfledger compare RUN [--against published|RUN] [--usd-per-device-hour PRICE] [--json]: the run's
verdict (perfledger.views.verdict), as its page shows it first.

Exit 0: the verdict printed, a comparison that cannot be made said in one sentence (`published` null, `reason`);
2: bad input (no such run; a run named with --against that is not like for like, said in one sentence).
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from perfledger import store
from perfledger.views import verdict, verdict_text


def register(sub: Any) -> None:
    """Add the `compare` command to the CLI's subparsers."""
    cmd = sub.add_parser("compare", help="a run beside the comparable published figure: ratio, differences, gap, "
                                         "where its wall time went")
    cmd.add_argument("run", type=int, help="the run id (as `python -m ingest --json` prints)")
    cmd.add_argument("--against", default=verdict.PUBLISHED,
                     help="'published' (the comparable published row; default) or another run's id")
    cmd.add_argument("--usd-per-device-hour", type=float, default=None, metavar="PRICE",
                     help="a device-hour's price: goodput then says tokens per dollar")
    cmd.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    cmd.add_argument("--db", help="SQLAlchemy URL of the store (default: PERFLEDGER_DB_URL, else data/perfledger.duckdb)")


def run(args: argparse.Namespace) -> int:
    found = verdict.verdict(store.engine_from_url(args.db), args.run, against=args.against,
                            usd_per_device_hour=args.usd_per_device_hour)
    if args.json:
        print(json.dumps(_finite(found.as_json()), indent=1, default=str))
    else:
        print("\n".join(verdict_text.lines(found)))
    return 0


def _finite(value: Any) -> Any:
    """JSON has no NaN: a figure that is not finite is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value
