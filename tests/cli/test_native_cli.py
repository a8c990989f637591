"""python -m ingest.native builds the compiled helpers ahead of time, as the Docker image does, or fails saying why.

A real process: it imports each compiled helper from a fresh cache folder, and an extension module, once loaded,
cannot be unloaded from this one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def build_native(cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PERFLEDGER_CACHE_DIR": str(cache), "PERFLEDGER_NATIVE": "1", **env}
    return subprocess.run([sys.executable, "-m", "ingest.native"], check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=environ)


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler here")
def test_every_helper_is_built_into_the_cache_and_its_path_printed(tmp_path: Path) -> None:
    out = build_native(tmp_path)
    assert out.returncode == 0, out.stderr
    built = dict(line.split(": ", 1) for line in out.stdout.splitlines())
    assert set(built) == {"labeled_scan", "clean_ascii", "mllog_scan", "titan_scan", "tfrecord_scan"}
    assert all(Path(path).parent == tmp_path and Path(path).is_file() for path in built.values())


def test_without_a_compiler_the_build_fails_naming_each_helper_and_why(tmp_path: Path) -> None:
    out = build_native(tmp_path, CC="false")
    assert out.returncode == 1 and out.stdout == ""
    why = "could not build or load labeled_scan.c: the compiler exited with 1"
    assert f"labeled_scan: not available ({why})" in out.stderr
    assert "clean_ascii: not available (could not build or load clean_ascii.c" in out.stderr
    assert "tfrecord_scan: not available (could not build or load tfrecord_scan.c" in out.stderr
    assert not list(tmp_path.glob("*.so"))


def test_a_changed_header_rebuilds_the_scanners_that_include_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ingest import native

    sources = tmp_path / "src"
    sources.mkdir()
    (sources / "scan.c").write_text('#include "shared.h"\n')
    (sources / "shared.h").write_text("#define A 1\n")
    monkeypatch.setattr(native, "SOURCES", sources)
    before = native._build_key(sources / "scan.c")
    (sources / "shared.h").write_text("#define A 2\n")
    assert native._build_key(sources / "scan.c") != before
