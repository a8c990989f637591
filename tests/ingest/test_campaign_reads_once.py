"""A campaign import reads each log once: how the job ended, its hash and its MLPerf submission keys are scanned in
the same pass as the parse, not in a second read of the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest import campaign_files as files
from ingest.campaign import plan_folder

CAMPAIGNS = Path(__file__).parents[1] / "fixtures" / "campaigns"
SWEEP = CAMPAIGNS / "bigscience_gpt2_meg_base_sweep"
MLPERF = CAMPAIGNS / "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora"


def bytes_read_by_this_process() -> int:
    """The kernel's count of bytes this process has read (rchar in /proc/self/io), every thread included."""
    with open("/proc/self/io", encoding="ascii") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("rchar:"))


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("folder", [SWEEP, MLPERF], ids=lambda p: p.name)
def test_planning_a_folder_reads_its_bytes_about_once(folder: Path) -> None:
    plan_folder(folder).close()  # once first, so that the modules it imports on first use are not counted
    before = bytes_read_by_this_process()
    plan_folder(folder).close()
    read = bytes_read_by_this_process() - before
    assert read < 1.5 * folder_bytes(folder)  # twice the folder's bytes when each log was read twice


@pytest.mark.parametrize("path", sorted(p for p in SWEEP.iterdir() if p.suffix == ".out"), ids=lambda p: p.name)
@pytest.mark.parametrize("chunk", [7, 4096])
def test_a_scan_fed_in_chunks_equals_the_scan_of_the_whole_file(path: Path, chunk: int) -> None:
    data = path.read_bytes()
    scan = files.ContentScan()
    for start in range(0, len(data), chunk):
        scan.feed(data[start:start + chunk])
    assert scan.finish() == files.scan_file(path, path.name, None)

