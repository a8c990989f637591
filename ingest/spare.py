"""A spare worker process per store, started ahead with its modules loaded, waiting for one job on its stdin.

Loading the worker's modules (Polars, DuckDB, SQLAlchemy, the parsers) is most of a small upload's time: about 1 s
on an idle 2-core machine, 5 s on a loaded one, for each of the preview, an applied choice and the store. A job
handed to the spare starts at once; a new spare is then started for the next job. The spare ends when its
parent does (its stdin closes) and applies its limits only once it has a job.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

_SPARES: dict[tuple[str, ...], subprocess.Popen[bytes]] = {}
_LOCK = threading.Lock()
SERVE = "serve"  # the worker's command that waits for a job on stdin


def _key(command: Sequence[str], env: Mapping[str, str]) -> tuple[str, ...]:
    return (*command, env.get("PERFLEDGER_DB_URL", ""), env.get("PERFLEDGER_UPLOAD_TOKEN", ""))


def prime(command: Sequence[str], env: Mapping[str, str]) -> None:
    """Start a spare for this command and environment, unless one is waiting."""
    key = _key(command, env)
    with _LOCK:
        spare = _SPARES.get(key)
        if spare is not None and spare.poll() is None:
            return
        _SPARES[key] = subprocess.Popen([*command, SERVE], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, env=dict(env), start_new_session=True)


def take(command: Sequence[str], env: Mapping[str, str], args: Sequence[str], stderr: Path) -> \
        subprocess.Popen[bytes] | None:
    """The waiting spare, handed `args` (its stderr to go to `stderr`), or None when none waits; a new spare is
    started either way."""
    key = _key(command, env)
    with _LOCK:
        spare = _SPARES.pop(key, None)
    handed = spare is not None and spare.poll() is None and _hand(spare, args, stderr)
    prime(command, env)
    return spare if handed else None


def _hand(spare: subprocess.Popen[bytes], args: Sequence[str], stderr: Path) -> bool:
    assert spare.stdin is not None
    try:
        spare.stdin.write(json.dumps({"args": list(args), "stderr": str(stderr)}).encode() + b"\n")
        spare.stdin.close()
    except OSError:  # it ended meanwhile
        return False
    return True
