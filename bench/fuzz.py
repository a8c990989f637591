"""Mutate the real fixture logs of every format N times and count what parsing each one did.

    nice .venv/bin/python bench/fuzz.py                   # 100,000 cases, one worker per core
    .venv/bin/python bench/fuzz.py -n 2000 --jobs 1       # a quick look
    .venv/bin/python bench/fuzz.py -n 500 --jobs 1 --formats composer,wandb_history   # some formats only
    .venv/bin/python bench/fuzz.py --json                 # one JSON object

A case is one or two mutations of a fixture (tests/ingest/mutations.py: byte flips, duplicated, dropped and cut
lines, numbers replaced by 1e309 / 400 digits / nan / -inf / 2**63 / 2e19, JSON nested 50,000 deep, lines of
100K-300K characters), detected and parsed as the pipeline does. Outcomes: parsed (no infinity in any step, no
NaN but a diverged loss, no non-finite result), refused with a typed error naming the file (and the line where one
is to blame), crashed (any other exception: a bug), stored a non-finite value (a bug). Crashes and bad values are printed, one JSON line each.
Worker k of --jobs J runs the cases of seed (seed, k): the run is the same for the same -n, --seed and --jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.ingest.mutations import BAD_VALUE, CRASHED, OUTCOMES, cases, corpus, describe, run_case


def worker(seed: int, part: int, count: int, only: frozenset[str] = frozenset()) -> tuple[
        Counter[str], Counter[str], list[str]]:
    """Run `count` cases (round-robin over the formats, or those in `only`); outcome counts, per-format cases,
    and each failure."""
    logs = {fmt: files for fmt, files in corpus().items() if not only or fmt in only}
    if not logs:
        raise SystemExit(f"no fixture of the formats {', '.join(sorted(only))}")
    outcomes: Counter[str] = Counter()
    formats: Counter[str] = Counter()
    failures: list[str] = []
    per_format = -(-count // len(logs))
    for done, case in enumerate(cases(seed * 1000 + part, per_format, logs)):
        if done == count:
            break
        result = run_case(case)
        outcomes[result.outcome] += 1
        formats[case.format] += 1
        if result.outcome in (CRASHED, BAD_VALUE):
            failures.append(describe(case, result))
    return outcomes, formats, failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=100_000, help="cases in all (default 100,000)")
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--formats", default="", help="comma list of formats to mutate (default: all)")
    args = parser.parse_args()
    shares = [args.n // args.jobs + (k < args.n % args.jobs) for k in range(args.jobs)]
    start = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        only = frozenset(filter(None, args.formats.split(",")))
        parts = list(pool.map(worker, [args.seed] * args.jobs, range(args.jobs), shares, [only] * args.jobs))
    seconds = time.perf_counter() - start
    outcomes: Counter[str] = sum((p[0] for p in parts), Counter())
    formats: Counter[str] = sum((p[1] for p in parts), Counter())
    failures = [f for p in parts for f in p[2]]
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    report = {"cases": sum(outcomes.values()), "seconds": round(seconds, 1), "jobs": args.jobs, "seed": args.seed,
              "commit": commit, "outcomes": {o: outcomes[o] for o in OUTCOMES}, "formats": dict(sorted(formats.items()))}
    for failure in failures:
        print(failure)
    if args.json:
        print(json.dumps(report))
    else:
        print(f"{report['cases']:,} cases in {seconds:,.0f} s ({args.jobs} workers, seed {args.seed}, commit {commit})")
        for outcome in OUTCOMES:
            print(f"  {outcome:28} {outcomes[outcome]:>8,}")
        print("  by format: " + ", ".join(f"{k} {v:,}" for k, v in sorted(formats.items())))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
