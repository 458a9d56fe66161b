"""`ingest --engine spark --out EXISTING`: the export there is replaced only once the new one is complete.
PySpark missing, Java missing, no input readable: refused in one line, the old export as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from logmine.fleet.parquet import MANIFEST
from tests.conftest import REPO


def old_export(folder: Path) -> dict[str, bytes]:
    """A folder an earlier Spark ingest wrote (its manifest and a data file), and its content."""
    (folder / "lines").mkdir(parents=True)
    (folder / MANIFEST).write_text('{"tables": {}}')
    (folder / "lines" / "source000001-0.parquet").write_bytes(b"PAR1 old rows PAR1")
    return content(folder)


def content(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def spark_ingest(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logmine", "ingest", "--engine", "spark", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env=env)


def test_pyspark_missing_leaves_the_export(tmp_path: Path) -> None:
    before = old_export(tmp_path / "out")
    shim = tmp_path / "shim" / "pyspark"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('no pyspark here')\n")
    env = os.environ | {"PYTHONPATH": str(tmp_path / "shim")}
    done = spark_ingest(str(REPO / "examples" / "demo" / "journal.txt"), "--out", "out", cwd=tmp_path, env=env)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "logmine: the Spark engine needs PySpark: pip install 'logmine[spark]'\n"
    assert content(tmp_path / "out") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "shim"]  # nothing staged left behind


def test_a_spark_ingest_that_reads_nothing_leaves_the_export(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    before = old_export(tmp_path / "out")
    (tmp_path / "bad.log").write_bytes(b"\x00\x01\x02" * 4000)
    done = spark_ingest("bad.log", "--out", "out", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    # (Java's own start-up lines come before logmine's.)
    assert done.stderr.splitlines()[-1] == f"logmine: {tmp_path / 'out'}: no input could be read, nothing was written"
    assert content(tmp_path / "out") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.log", "out"]


def test_a_folder_logmine_did_not_write_is_refused_first(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    done = spark_ingest(str(REPO / "examples" / "demo" / "journal.txt"), "--out", "out", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (f"logmine: {tmp_path / 'out'}: not empty and not a logmine Parquet folder; give a new or "
                           "empty --out\n")
    assert content(tmp_path / "out") == {"notes.txt": b"mine"}
