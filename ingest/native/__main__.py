"""`python -m ingest.native`: build the compiled helpers now, as the Docker image does while it has a compiler.

Prints where each one lives; exits 1, saying why, when any cannot be had, so an image build fails loudly
instead of shipping a server that quietly reads Megatron logs on the slower pure-Polars path.
"""

from __future__ import annotations

import sys

from ingest import native

HELPERS = {"labeled_scan": native.labeled_scan, "clean_ascii": native.clean_ascii, "mllog_scan": native.mllog_scan,
           "titan_scan": native.titan_scan, "tfrecord_scan": native.tfrecord_scan}


def main() -> int:
    missing = 0
    for name, load in HELPERS.items():
        module = load()
        if module is None:
            missing += 1
            print(f"{name}: not available ({native.why_not(name)})", file=sys.stderr)
        else:
            print(f"{name}: {module.__file__}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
