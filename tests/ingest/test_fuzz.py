"""Fuzz: mutated real logs of every format (byte flips, repeated and cut lines, numbers past every range, JSON
nested 50,000 deep, lines of 100K-300K characters; see mutations.py) either parse with finite values or are
refused with a ParseError naming the file, never another exception. A fixed seed makes every run the same cases;
bench/fuzz.py runs the long version (100,000 cases, bench/README.md)."""

from __future__ import annotations

import random
from functools import cache

import pytest

from perfledger.vocabulary import LogFormat
from tests.ingest.mutations import MUTATIONS, PARSED, REFUSED, cases, corpus, describe, run_case

SEED = 24
CASES_PER_FORMAT = 25  # 300 cases (12 grammars); bench/fuzz.py runs the long version
# The formats are named here, not found by detecting every fixture: that took 4 s of every worker's collection.
FORMATS = sorted(f.value for f in LogFormat if f is not LogFormat.MICROBENCH)
CORPUS = cache(corpus)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_mutated_log_parses_or_is_refused_with_its_file_name(fmt: str) -> None:
    failures = [describe(case, result) for case in cases(SEED, CASES_PER_FORMAT, {fmt: CORPUS()[fmt]})
                if (result := run_case(case)).outcome not in (PARSED, REFUSED)]
    assert not failures, "\n".join(failures)


def test_every_format_has_fixtures_to_mutate() -> None:
    assert sorted(CORPUS()) == FORMATS
    assert len(CORPUS()["key_value"]) >= 8 and len(CORPUS()["metrics"]) >= 6  # nanoGPT, llm.c, Composer, HF ...


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_every_mutation_accepts_what_an_earlier_one_left(name: str) -> None:
    rng = random.Random(SEED)
    for raw in (b"x", b"\n", b"ab"):
        assert isinstance(MUTATIONS[name](raw, rng), bytes)
