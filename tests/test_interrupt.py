"""Ctrl-C during `logmine ingest`: one line saying what the database holds, exit 130, nothing left behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from logmine import api

JOURNAL = Path(__file__).resolve().parents[1] / "examples" / "demo" / "journal.txt"
COPIES = 140  # 35 MB: parsed by the worker process, through the shared-memory file


def shared_files() -> set[str]:
    return {name for name in os.listdir("/dev/shm") if name.startswith("logmine-batches-")}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("interrupt")
    big = folder / "big.txt"
    big.write_bytes(JOURNAL.read_bytes() * COPIES)
    db = folder / "before.duckdb"
    api.ingest([str(JOURNAL)], db=db)
    return big, db


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
@pytest.mark.parametrize("delay", [0.3, 1.5, 3.0])
def test_ctrl_c_at_any_point(tmp_path: Path, inputs: tuple[Path, Path], delay: float) -> None:
    big, before = inputs
    db = tmp_path / "t.duckdb"
    shutil.copy(before, db)
    shared_before = shared_files()
    # Its own process group, which the terminal's Ctrl-C signals whole: the worker and forkserver too.
    process = subprocess.Popen([sys.executable, "-m", "logmine", "ingest", str(big), "--db", str(db)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(delay)
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=120)
    with duckdb.connect(str(db), read_only=True) as con:
        lines = con.execute("SELECT count(*) FROM lines").fetchone()[0]
    if process.returncode == 0:  # done before the signal
        assert err == "" and lines == 1205 * (COPIES + 1)
    else:
        assert process.returncode == 130, err
        if "holds the new data" in err:
            assert err == "logmine: interrupted after the commit: the database holds the new data\n"
            assert lines == 1205 * (COPIES + 1)
        else:
            assert err == "logmine: interrupted: nothing was stored, the database is as it was\n"
            assert lines == 1205
    time.sleep(0.2)  # the killed worker's exit
    assert shared_files() <= shared_before
