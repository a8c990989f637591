"""bench/run.py's round part: a whole MLPerf Training round built from the real result files, imported by
`python -m ingest ROUND` and summarised by mlperf-logging's `result_summarizer` on the same folder, in the same run.

The round is laid out as MLCommons publishes one (training_results_vX.Y):

    ROUND/ORG/systems/SYSTEM.json
    ROUND/ORG/results/SYSTEM/BENCHMARK/result_N.txt   (and scaling.json where the submission has one)

Each system is a copy of a real submission's result files (tests/fixtures/logs/*result*.txt and the ASUSTeK
submission in tests/fixtures/campaigns): a copy's `seed` is its own and its `run_stop` (and every event after it)
is moved later by a few seconds, so every file has bytes and a time to train of its own. A few files are broken on
purpose (a truncated copy, bytes that are no log, an empty file), as a real round's folder can hold them. Nothing of
this is committed: the round is built at run time and removed after.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "fixtures" / "logs"
ASUSTEK = ROOT / "tests" / "fixtures" / "campaigns" / "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora"
RULESET = "5.1.0"  # every benchmark below is scored under it (gpt3 is not: it left the suite before 5.0)
ROUND_FILES = 1669  # training_results_v5.1's result files


@dataclass(frozen=True, slots=True)
class Submission:
    """A real submission a round's systems are copied from: its org, accelerator, result files and runs a score."""

    org: str
    accelerator: str
    files: tuple[Path, ...]
    runs: int
    weight: int  # how many systems of it, relative to the others


SUBMISSIONS = (
    Submission("AMD", "AMD Instinct MI300X", (LOGS / "amd_mi300x_llama2_70b_lora_v5.1_result_0.txt",), 10, 4),
    Submission("AMD", "AMD Instinct MI355X", (LOGS / "amd_mi355x_llama31_8b_v5.1_result_0.txt",), 10, 4),
    Submission("Cisco", "NVIDIA H100-SXM5-80GB",
               (LOGS / "cisco_hpf_n8_h100_llama31_8b_v5.1_result_0_rankprefix.txt",), 10, 7),
    Submission("Intel-HabanaLabs", "Intel Gaudi 2", (LOGS / "habana_gaudi2x8_llama2_70b_lora_v4.0_result_0.txt",), 10, 3),
    Submission("Juniper", "NVIDIA A100-SXM4-80GB",
               (LOGS / "juniper_a100_n8_deepspeed_llama2_70b_lora_v4.0_result_0.txt",), 10, 3),
    Submission("MangoBoost", "AMD Instinct MI300X", (LOGS / "mangoboost_mi300x_1node_llama2_70b_lora_v5.1_result_0.txt",),
               10, 4),
    Submission("NVIDIA", "NVIDIA H200-SXM-141GB", (LOGS / "nvidia_h200x8_llama2_70b_lora_nemo_v4.0_result_0.txt",), 10, 6),
    Submission("NVIDIA", "NVIDIA GB200", (LOGS / "nvidia_hsg_ngpu2560_llama31_405b_nemo_v5.1_result_0.txt",), 3, 6),
    Submission("ASUSTeK", "NVIDIA H100-SXM5-80GB",
               tuple(sorted((ASUSTEK / "results" / "ESC_N8A-E12" / "llama2_70b_lora").glob("result_*.txt"))), 10, 6),
)

_KEY = re.compile(rb'"key": "(submission_org|submission_platform|submission_benchmark|seed)", "value": ("[^"]*"|\d+)')
_TIME = re.compile(rb'"time_ms": (\d+)')


@dataclass(frozen=True, slots=True)
class Round:
    folder: Path
    files: int
    bytes: int
    broken: tuple[str, ...]  # the files made broken on purpose, relative to the round


def build_round(folder: Path, n_files: int = ROUND_FILES, seed: int = 51,
                submissions: tuple[Submission, ...] = SUBMISSIONS, broken_at: tuple[int, ...] = (7, 40, 90)) -> Round:
    """A round of `n_files` result files under `folder`, built from `submissions` in turn; the systems numbered in
    `broken_at` get one broken file more (a truncated copy, bytes that are no log, an empty file)."""
    rng = random.Random(seed)
    written = total = 0
    broken: list[str] = []
    for number, sub in enumerate(_systems(submissions)):
        if written >= n_files:
            break
        system = f"{_slug(sub.accelerator)}_S{number:03d}"
        org = folder / sub.org
        bench_dir = org / "results" / system / _benchmark(sub.files[0])
        bench_dir.mkdir(parents=True, exist_ok=True)
        nodes = 1 + number % 4
        _write_system(org / "systems" / f"{system}.json", sub, system, nodes)
        for run in range(min(sub.runs, n_files - written)):
            base = sub.files[run % len(sub.files)].read_bytes()
            data = _copy(base, sub.org, f"{nodes}x{system}", rng.randrange(1, 2**31), rng.randrange(0, 30_000))
            path = bench_dir / f"result_{run}.txt"
            path.write_bytes(data)
            written += 1
            total += len(data)
        if number in broken_at and written < n_files:  # a truncated run, no log at all, nothing at all
            path = bench_dir / f"result_{sub.runs}.txt"
            data = (data[: len(data) // 2], bytes(rng.randrange(256) for _ in range(4096)), b"")[
                broken_at.index(number) % 3]
            path.write_bytes(data)
            broken.append(path.relative_to(folder).as_posix())
            written += 1
            total += len(data)
    return Round(folder, written, total, tuple(broken))


def _systems(submissions: tuple[Submission, ...]) -> Iterator[Submission]:
    """The submissions in turn, each as often as its weight, for ever."""
    turn = [s for i in range(max(s.weight for s in submissions)) for s in submissions if i < s.weight]
    while True:
        yield from turn


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


def _benchmark(path: Path) -> str:
    m = re.search(rb'"key": "submission_benchmark", "value": "([^"]+)"', path.read_bytes())
    if m is None:
        raise SystemExit(f"{path}: no submission_benchmark")
    return m.group(1).decode()


def _copy(base: bytes, org: str, platform: str, seed: int, later_ms: int) -> bytes:
    """The file with this org, platform and seed, and its run_stop (and all after it) `later_ms` later."""
    def key(m: re.Match[bytes]) -> bytes:
        name = m.group(1)
        value = {b"submission_org": json.dumps(org).encode(), b"submission_platform": json.dumps(platform).encode(),
                 b"seed": str(seed).encode()}.get(name, m.group(2))
        return b'"key": "' + name + b'", "value": ' + value

    head = _KEY.sub(key, base[: 1 << 20]) + base[1 << 20:]
    stop = head.find(b'"key": "run_stop"')
    if stop < 0:
        return head
    start = head.rfind(b"\n", 0, stop) + 1
    tail = _TIME.sub(lambda m: b'"time_ms": ' + str(int(m.group(1)) + later_ms).encode(), head[start:])
    return head[:start] + tail


def _write_system(path: Path, sub: Submission, system: str, nodes: int) -> None:
    """A system description in MLCommons' schema (the ASUSTeK one's fields), naming this system."""
    desc = json.loads((ASUSTEK / "systems" / "ESC_N8A-E12.json").read_text())
    desc |= {"submitter": sub.org, "system_name": system, "number_of_nodes": str(nodes),
             "accelerator_model_name": sub.accelerator}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(desc, indent=4))


# ------------------------------------------------------------------------------------------- measuring


def summarizer_scores(folder: Path) -> tuple[float, dict[tuple[str, str, str], float]]:
    """mlperf-logging's result_summarizer over every org of the round, in a child process: its seconds, and its
    score (minutes) per (org folder, system folder, benchmark)."""
    code = ("import json, os, sys\n"
            "from mlperf_logging.result_summarizer import result_summarizer as R\n"
            "out = {}\n"
            "for org in sorted(os.listdir(sys.argv[1])):\n"
            "    folder = os.path.join(sys.argv[1], org)\n"
            "    if not R._is_organization_folder(folder):\n"
            "        continue\n"
            "    for system in sorted(os.listdir(os.path.join(folder, 'results'))):\n"
            "        desc = R._load_system_desc(folder, system)\n"
            "        scores, _ = R._compute_strong_scaling_scores(desc, os.path.join(folder, 'results', system),\n"
            "                                                     'training', sys.argv[2], desc['division'])\n"
            "        for bench, score in scores.items():\n"
            "            if score is not None:\n"
            "                out['|'.join((org, system, bench))] = score\n"
            "print(json.dumps(out))\n")
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, str(folder), RULESET], check=False, capture_output=True,
                          text=True, cwd=ROOT)
    seconds = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"result_summarizer failed:\n{done.stderr[-2000:]}")
    raw = json.loads(done.stdout.strip().splitlines()[-1])
    return seconds, {tuple(k.split("|")): float(v) for k, v in raw.items()}  # type: ignore[misc]


def our_scores(url: str) -> dict[tuple[str, str, str], float]:
    """The stored MLPerf campaigns' scores (minutes) by (org, system folder, benchmark) from their metadata."""
    from perfledger import store

    engine = store.engine_from_url(url)
    out: dict[tuple[str, str, str], float] = {}
    for row in store.campaigns(engine).iter_rows(named=True):
        if row["kind"] != "mlperf" or row["score"] is None:
            continue
        meta = (store.campaign(engine, int(row["id"])) or {})["meta"]
        where = meta.get("results_folder", "").split("/")  # ORG/results/SYSTEM/BENCHMARK
        if len(where) >= 4:
            out[(where[-4], where[-2], where[-1])] = float(row["score"]) / 60
    engine.dispose()
    return out


def bench_round(work: Path, repeats: int, n_files: int = ROUND_FILES) -> dict[str, Any]:
    """`python -m ingest ROUND` into a fresh store (each repeat) against result_summarizer on the same folder."""
    from measure import run_child, stats

    folder = work / "round"
    built = build_round(folder, n_files)
    ours, rss, summarizer = [], [], []
    scores: dict[tuple[str, str, str], float] = {}
    theirs: dict[tuple[str, str, str], float] = {}
    exit_codes = []
    for i in range(repeats):
        db = work / f"round_{i}.duckdb"
        url = f"duckdb:///{db}"
        seconds, peak, code, _ = run_child([sys.executable, "-m", "ingest", str(folder), "--db", url])
        ours.append(seconds)
        rss.append(peak)
        exit_codes.append(code)
        if i == 0:
            scores = our_scores(url)
        db.unlink(missing_ok=True)
        t, found = summarizer_scores(folder)
        summarizer.append(t)
        if i == 0:
            theirs = found
    common = sorted(set(scores) & set(theirs))
    unequal = [k for k in common if abs(scores[k] - theirs[k]) > 1e-9 * max(1.0, abs(theirs[k]))]
    t_ours, t_theirs = stats(ours), stats(summarizer)
    return {"files": built.files, "mb": built.bytes / 1e6, "broken": list(built.broken), "ours_s": t_ours,
            "peak_rss_mb": stats(rss), "exit_codes": exit_codes, "summarizer_s": t_theirs,
            "ratio": t_theirs["median"] / t_ours["median"], "scored_by_both": len(common),
            "scored_by_us_only": len(set(scores) - set(theirs)), "scored_by_summarizer_only": len(set(theirs) - set(scores)),
            "scores_unequal": ["/".join(k) for k in unequal]}
