"""One log read, detected, parsed and summarised, as a child of bench/run.py: the parser's share of an ingest.

    python bench/parse_only.py FILE  ->  {"steps": N, "seconds": S}

`seconds` is ingest.pipeline.prepare alone: no interpreter start, no imports, no store; what the plain regex loop
(bench/baselines.py, timed the same way) is compared with. The whole `python -m ingest` is timed separately.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ingest.pipeline import prepare

if __name__ == "__main__":
    path = Path(sys.argv[1])
    with path.open("rb") as raw:
        start = time.perf_counter()
        with prepare(raw, path.name) as run:
            seconds = time.perf_counter() - start
            print(json.dumps({"steps": run.steps.rows, "seconds": seconds}))
