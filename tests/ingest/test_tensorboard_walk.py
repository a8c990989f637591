"""The compiled walk (ingest/native/tfrecord_scan.c) reads an event file into the same steps, problems, config and
counts as the Python reader and the tensorboard package's protobuf.

The Python path is the definition: the walk stores only the Events it is sure of and leaves every other record,
and every framing problem, to it. So on real files and on damaged or hostile ones, both paths give equal output.
"""

from __future__ import annotations

import io
import math
import random
import struct
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from tensorboard.compat.proto import event_pb2, summary_pb2  # type: ignore[import-untyped]
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as package_crc  # type: ignore[import-untyped]

from ingest import native
from ingest.parsers import _tfrecord
from ingest.parsers import tensorboard as tb
from ingest.parsers.base import step_frames
from perfledger.errors import ParseError
from tests.conftest import LOGS
from tests.ingest.mutations import cases, corpus
from tests.ingest.parsers.test_tensorboard import scalar_event as event

needs_walk = pytest.mark.skipif(native.tfrecord_scan() is None,
                                reason=f"no compiled walk here: {native.why_not('tfrecord_scan')}")

FIXTURES = [LOGS / "cscs_gh200_llama3_1b_10n4g_megatron.events.out.tfevents.1776244695.nid007435.275938.0",
            LOGS / "qiu023_vlm_447m_8gpu_fsdp2_pp4_torchtitan.events.out.tfevents.1777773634.b008e969124e.595985.0",
            LOGS.parent / "tensorboard" / "events.out.tfevents.1774539456.nid006786.251594.0"]


def framed(payload: bytes) -> bytes:
    length = struct.pack("<Q", len(payload))
    return length + struct.pack("<I", package_crc(length)) + payload + struct.pack("<I", package_crc(payload))


def text_arg(name: str, text: str) -> bytes:
    summary = summary_pb2.Summary()
    value = summary.value.add(tag=name + "/text_summary")
    value.tensor.dtype = 7
    value.tensor.string_val.append(text.encode())
    return event_pb2.Event(wall_time=1.5, step=0, summary=summary).SerializeToString()  # type: ignore[no-any-return]


FILE_VERSION = framed(event_pb2.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString())


def read(raw: bytes, *, walk: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Everything a parse gives: steps, problems, warnings, config, meta, results, or the refusal."""
    with monkeypatch.context() as patch:
        if not walk:
            patch.setattr(native, "tfrecord_scan", lambda: None)
        parser = tb.TensorBoardParser("events.out.tfevents.1.host.1.0")
        assert (parser._reader._walk is not None) == walk
        frames = list(step_frames(parser, io.BytesIO(raw)))
    try:
        summary = parser.finish()
    except ParseError as refused:
        return {"refused": str(refused), "frames": [f.height for f in frames]}
    return {"steps": pl.concat(frames) if frames else None, "problems": [str(p) for p in summary.problems],
            "warnings": summary.warnings, "config": summary.config, "meta": summary.meta, "results": summary.results,
            "skipped_lines": summary.skipped_lines, "frames": [f.height for f in frames]}


def assert_same(raw: bytes, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    walked, python = read(raw, walk=True, monkeypatch=monkeypatch), read(raw, walk=False, monkeypatch=monkeypatch)
    assert walked.keys() == python.keys()
    for key, expected in python.items():
        if isinstance(expected, pl.DataFrame):
            assert_frame_equal(walked[key], expected)
        else:
            assert walked[key] == expected, key
    return python


def megatron_file(steps: range, *, extra: dict[int, bytes] | None = None) -> bytes:
    """A Megatron-like file: arguments, then each step's tags one per Event and a `vs samples` copy."""
    records = [FILE_VERSION, framed(text_arg("seq_length", "4096")), framed(text_arg("world_size", "8"))]
    for step in steps:
        for tag, number in (("lm loss", 2.0 + 1 / (step + 1)), ("iteration-time", 1.5), ("batch-size", 8.0),
                            ("mem-max-allocated-bytes", 7.5e10), ("throughput", 400.25)):
            records.append(framed(event(step, {tag: number})))
            records.append(framed(event(step * 8, {tag + " vs samples": number})))
        if extra and step in extra:
            records.append(extra[step])
    return b"".join(records)


# ------------------------------------------------------------------------------------------------ real files


@needs_walk
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name[:30])
def test_real_event_files_read_the_same_with_and_without_the_walk(path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    assert_same(path.read_bytes(), monkeypatch)


@needs_walk
def test_many_steps_flushed_and_framed_at_the_same_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past PENDING_STEPS steps go out as rows; steps that come back after their row left make a second row."""
    back = {600: framed(event(10, {"lm loss": 9.0})), 700: framed(event(650, {"grad-norm": 3.0}))}
    out = assert_same(megatron_file(range(1, 1200), extra=back), monkeypatch)
    assert out["steps"].height == 1200 and out["steps"]["tokens"][0] == 8 * 4096


@needs_walk
def test_arguments_after_the_first_flush_give_tokens_only_to_later_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = FILE_VERSION + b"".join(framed(event(s, {"batch-size": 8.0})) for s in range(1, 400)) + framed(
        text_arg("seq_length", "2048")) + b"".join(framed(event(s, {"batch-size": 8.0})) for s in range(400, 800))
    out = assert_same(raw, monkeypatch)
    assert out["steps"]["tokens"].null_count() == 256  # two flushes of 128 before the argument


@needs_walk
def test_the_walk_reads_a_megatron_file_without_the_protobuf_package(monkeypatch: pytest.MonkeyPatch) -> None:
    decoded: list[int] = []
    original = tb.TensorBoardParser._event

    def counted(parser: tb.TensorBoardParser, number: int, payload: bytes) -> None:
        decoded.append(number)
        original(parser, number, payload)

    monkeypatch.setattr(tb.TensorBoardParser, "_event", counted)
    out = read(megatron_file(range(1, 3000)), walk=True, monkeypatch=monkeypatch)
    assert out["steps"].height == 2999
    assert len(decoded) < 20  # the arguments, and a record across each 1 MiB block's end


# ------------------------------------------------------------------------------------------------ damaged files


@needs_walk
def test_a_file_cut_anywhere_reads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = megatron_file(range(1, 40))
    for cut in [*range(0, 200, 7), *random.Random(1).sample(range(200, len(whole)), 60)]:
        assert_same(whole[:cut], monkeypatch)


@needs_walk
def test_damaged_lengths_and_oversize_records_end_the_file_with_the_same_problem(
        monkeypatch: pytest.MonkeyPatch) -> None:
    whole = megatron_file(range(1, 20))
    starts = _record_starts(whole)
    for at in starts[5:14]:
        damaged = bytearray(whole)
        damaged[at + 1] ^= 0x40
        out = assert_same(bytes(damaged), monkeypatch)
        assert "fails its checksum" in out["problems"][0]
    huge = struct.pack("<Q", _tfrecord.MAX_RECORD_BYTES + 1)
    out = assert_same(whole[:starts[9]] + huge + struct.pack("<I", package_crc(huge)) + whole[starts[9]:], monkeypatch)
    assert "over 16,777,216" in out["problems"][0]


@needs_walk
@pytest.mark.parametrize("seed", range(6))
def test_random_byte_flips_inside_records_read_the_same(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Payload bytes changed (the payload checksum is not checked): the walk declines what it cannot be sure of."""
    rng = random.Random(seed)
    whole = megatron_file(range(1, 30))
    starts = _record_starts(whole)
    for _ in range(25):
        damaged = bytearray(whole)
        for _ in range(rng.randint(1, 4)):
            at = rng.choice(starts[3:])
            length = struct.unpack_from("<Q", whole, at)[0]
            damaged[at + 12 + rng.randrange(length)] = rng.randrange(256)
        assert_same(bytes(damaged), monkeypatch)


@needs_walk
def test_the_fuzz_mutations_of_the_real_event_files_read_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fuzz test's cases (byte flips, cut and repeated "lines", hostile numbers written into the bytes)."""
    event_files = {"tensorboard": corpus()["tensorboard"]}
    for case in cases(7, 40, event_files):
        assert_same(case.raw, monkeypatch)


# ------------------------------------------------------------------------------------------------ hostile events


def _hostile_events() -> dict[str, bytes]:
    lm = b"\x0a\x07lm loss"
    value = lm + b"\x15" + struct.pack("<f", 2.5)
    summary = b"\x2a" + bytes([len(value) + 2, 0x0a, len(value)]) + value
    return {
        "garbage naming a tag": lm + b"\xff\xff\xff\xff",
        "a 10-byte step (negative)": event(-5, {"lm loss": 1.0}),
        "an 11-byte varint step": b"\x10" + b"\xff" * 10 + b"\x01" + summary,
        "the largest 9-byte step": b"\x10" + b"\xff" * 8 + b"\x7f" + summary,
        "an overlong step": b"\x10\x85\x80\x80\x00" + summary,
        "two steps": b"\x10\x05\x10\x06" + summary,
        "two summaries": b"\x10\x05" + summary + summary,
        "a tensor scalar": event(7, {"lm loss": 3.0}, tensor=True),
        "a known and an unknown tag": event(8, {"lm loss": 3.0, "my/custom": 1.0}),
        "an unknown field": b"\x10\x05" + summary + b"\x58\x01",
        "a value without its number": b"\x10\x05\x2a\x0b\x0a\x09" + lm,
        "a value of two numbers": b"\x10\x05\x2a\x12\x0a\x10" + value + b"\x15" + struct.pack("<f", 1.0),
        "a summary longer than the event": b"\x10\x05\x2a\x40" + summary,
        "a run summary tag": event(9, {"train/train_samples_per_second": 12.5}),
        "an argument": text_arg("seq_length", "8192"),
        "no step": summary,
        "an empty summary, a tag's bytes in wall_time": b"\x09\x0a\x02lr\x00\x00\x00\x00\x10\x05\x2a\x00",
        "a tag's bytes in file_version": b"\x1a\x09" + lm,
    }


@needs_walk
@pytest.mark.parametrize("name", sorted(_hostile_events()))
def test_a_hostile_event_between_good_ones_reads_the_same(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    good = [framed(event(s, {"lm loss": 2.0, "iteration-time": 1.0})) for s in range(1, 6)]
    assert_same(FILE_VERSION + b"".join(good[:3]) + framed(_hostile_events()[name]) + b"".join(good[3:]), monkeypatch)


@needs_walk
def test_odd_numbers_are_widened_from_float32_as_protobuf_does(monkeypatch: pytest.MonkeyPatch) -> None:
    numbers = [0.0, -0.0, math.nan, math.inf, -math.inf, 1e-45, 3.4e38, 0.1, -2.5, 1 / 3]
    raw = FILE_VERSION + b"".join(framed(event(s, {"lm loss": n, "mem-max-allocated-bytes": n, "mfu(%)": n}))
                                  for s, n in enumerate(numbers))
    out = assert_same(raw, monkeypatch)
    assert out["steps"]["loss"][7] == struct.unpack("<f", struct.pack("<f", 0.1))[0]


def test_without_the_compiled_walk_the_parser_reads_in_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFLEDGER_NATIVE", "0")
    native._module.cache_clear()
    try:
        assert tb.TensorBoardParser("x")._reader._walk is None
        out = read(FIXTURES[0].read_bytes(), walk=False, monkeypatch=monkeypatch)
        assert out["steps"].height == 344
    finally:
        native._module.cache_clear()


# ------------------------------------------------------------------------------------------------ checksum


def test_the_checksum_agrees_with_the_tensorboard_package() -> None:
    rng = random.Random(5)
    for size in (0, 1, 7, 8, 9, 100):
        for _ in range(50):
            data = bytes(rng.randrange(256) for _ in range(size))
            assert _tfrecord.masked_crc32c(data) == package_crc(data)


@needs_walk
def test_the_walk_checks_lengths_as_the_python_reader_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """Random lengths with their right (or one-bit-off) checksum: the walk goes past exactly the right ones."""
    rng = random.Random(9)
    walk = native.tfrecord_scan()
    assert walk is not None
    for _ in range(2000):
        length = struct.pack("<Q", rng.randrange(0, 200))
        crc = _tfrecord.masked_crc32c(length) ^ (rng.random() < 0.5) << rng.randrange(32)
        raw = length + struct.pack("<I", crc) + bytes(300)
        reached, _, _ = walk.walk((), (), {}, {}, 256, _tfrecord.MAX_RECORD_BYTES, bytearray(), raw, 0, 0)
        assert (reached > 0) == (crc == _tfrecord.masked_crc32c(length))


def test_reading_the_parser_module_does_not_import_the_tensorboard_package() -> None:
    import subprocess
    import sys

    code = "import sys, ingest.detect; print(any(m.startswith('tensorboard') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "False"


def _record_starts(raw: bytes) -> list[int]:
    starts, at = [], 0
    while at < len(raw):
        starts.append(at)
        at += 16 + struct.unpack_from("<Q", raw, at)[0]
    return starts
