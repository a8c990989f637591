"""MLPerf device counts from whatever the file states: the system description, the platform string in its several
spellings, else the launcher's banner printed around the events."""

from __future__ import annotations

import json

import pytest

from ingest.parsers._mlperf_config import read_platform
from ingest.parsers.mlperf import PARSER
from tests.ingest.parsers.helpers import parse_text


def mllog(key: str, value: object) -> str:
    return ":::MLLOG " + json.dumps({"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": key,
                                    "value": value, "metadata": {}})


@pytest.mark.parametrize(("platform", "devices", "accelerator"), [
    ("1xXE9680x8H100-SXM-80GB", 8, "H100-SXM-80GB"), ("1xXE9785L_8xMI355X", 8, "MI355X"),
    ("gaudi-1024", 1024, "gaudi-1024"), ("64xNVIDIA DGX H100", None, "NVIDIA DGX H100"),
    ("tpu-v5p-1024", None, "tpu-v5p-1024"), ("1xMI300X", None, "MI300X"),
])
def test_platform_strings_give_the_devices_they_state(platform: str, devices: int | None, accelerator: str) -> None:
    read = read_platform(platform)
    assert (read.devices, read.accelerator) == (devices, accelerator)


@pytest.mark.parametrize(("banner", "devices"), [
    (["GPUS_PER_NODE=8", "NNODES=2"], 16), (["+ export NNODES=1", "DGXNGPU=8"], 8), (["WORLD_SIZE=64"], 64),
    (["torchrun --nproc_per_node 4 --nnodes 1 train.py"], 4), (["GPUS_PER_NODE=8"], 8),
])
def test_launcher_banners_give_the_device_count(banner: list[str], devices: int) -> None:
    text = "\n".join([*banner, mllog("submission_platform", "1xMI300X"), mllog("global_batch_size", 8)])
    summary, _ = parse_text(PARSER, text + "\n", "result_0.txt")
    assert summary.config.n_devices == devices
    assert any("launcher's settings" in w for w in summary.warnings)
