"""`python -m ingest.worker` that also appends the name of every file it parses whole (a parser's finish()) to
the file named by PERFLEDGER_TEST_PARSES: the upload tests count parses across worker processes with it."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import BinaryIO

from ingest import pipeline, worker
from ingest.detect import Detection, detect_stream
from perfledger.records import ParseSummary


def detect_counted(stream: BinaryIO, head: bytes, *, file_name: str) -> tuple[BinaryIO, bytes, Detection]:
    stream, head, found = detect_stream(stream, head, file_name=file_name)

    class Counted(found.parser):  # type: ignore[name-defined, misc]
        def finish(self) -> ParseSummary:
            with open(os.environ["PERFLEDGER_TEST_PARSES"], "a") as out:
                out.write(self.file_name + "\n")
            return super().finish()  # type: ignore[no-any-return]

    return stream, head, replace(found, parser=Counted)


if __name__ == "__main__":
    setattr(pipeline, "detect_stream", detect_counted)  # noqa: B010  # the one parse entry point, counted
    sys.exit(worker.main())
