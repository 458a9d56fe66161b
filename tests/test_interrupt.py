"""An ingest stopped at any moment: by Ctrl-C (one line saying what the database holds, exit 130) or by
SIGKILL. Either way the database is exactly as it was before the ingest or exactly as a complete ingest
leaves it, table by table, and nothing is left in /dev/shm."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from logmine import api
from logmine.scripts import load_script
from tests.conftest import REPO

JOURNAL = REPO / "examples" / "demo" / "journal.txt"
SYNTH_LINES = 160_000  # 35 MB: parsed by the worker process, through the shared-memory file
VOLATILE = {"sources": ["ingested_at"]}  # when, not what


def shared_files(maker: int) -> set[str]:
    """The shared-memory files that process `maker` made (other tests may be making theirs meanwhile)."""
    return {name for name in os.listdir("/dev/shm") if name.startswith(f"logmine-batches-{maker}-")}


def ingest_command(big: Path, db: Path) -> subprocess.Popen:
    # Its own process group, which the terminal's Ctrl-C signals whole: the worker and forkserver too.
    return subprocess.Popen([sys.executable, "-m", "logmine", "ingest", str(big), "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, float]:
    """(a generated journal, a database before its ingest, the same after a complete one, how long that took)."""
    folder = tmp_path_factory.mktemp("interrupt")
    big = folder / "big.txt"
    synth = load_script(REPO / "bench" / "synth_journal.py")
    with big.open("w", encoding="utf-8", newline="\n") as out:
        synth.write_journal(out, SYNTH_LINES, seed=7)
    before = folder / "before.duckdb"
    api.ingest([str(JOURNAL)], db=before)
    complete = folder / "complete.duckdb"
    shutil.copy(before, complete)
    started = time.monotonic()
    process = ingest_command(big, complete)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return big, before, complete, time.monotonic() - started


def differences(db: Path, expected: Path) -> list[str]:
    """The tables whose rows differ between two databases (each row compared, as a multiset)."""
    con = duckdb.connect()
    con.execute(f"ATTACH '{db}' AS got (READ_ONLY)")
    con.execute(f"ATTACH '{expected}' AS want (READ_ONLY)")
    tables = {name: catalog for catalog in ("got", "want") for (name,) in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = ?", [catalog]).fetchall()}
    found = []
    for table in sorted(tables):
        exclude = f" EXCLUDE ({', '.join(VOLATILE[table])})" if table in VOLATILE else ""
        try:
            got, want = (f'SELECT *{exclude} FROM {catalog}."{table}"' for catalog in ("got", "want"))
            extra, missing = (con.execute(f"SELECT count(*) FROM ({a} EXCEPT ALL {b})").fetchone()[0]
                              for a, b in ((got, want), (want, got)))
        except duckdb.CatalogException:
            found.append(f"{table}: only in {tables[table]}")
            continue
        if extra or missing:
            found.append(f"{table}: {extra} rows more, {missing} fewer")
    con.close()
    return found


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
@pytest.mark.parametrize("how, seed", [("SIGINT", 1), ("SIGINT", 2),
                                       ("SIGKILL", 4), ("SIGKILL", 5)])
def test_an_ingest_stopped_at_any_point_leaves_the_database_before_or_complete(
        tmp_path: Path, inputs: tuple[Path, Path, Path, float], how: str, seed: int) -> None:
    big, before, complete, seconds = inputs
    delay = random.Random(seed).uniform(0.1, seconds * 1.1)  # a little past the end: after the commit too
    db = tmp_path / "t.duckdb"
    shutil.copy(before, db)
    process = ingest_command(big, db)
    time.sleep(delay)
    if process.poll() is None:
        if how == "SIGINT":  # Ctrl-C at a terminal signals the whole process group
            os.killpg(process.pid, signal.SIGINT)
        else:  # `kill -9 PID`: the main process alone; its worker must notice and go
            os.kill(process.pid, signal.SIGKILL)
    _, err = process.communicate(timeout=120)
    for _ in range(100):  # the worker's exit: it polls for its parent every second
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"a process of the {how} ingest (after {delay:.2f} s) is still running")
    now = "before" if not differences(db, before) else "complete" if not differences(db, complete) else None
    assert now, f"{how} after {delay:.2f} s: neither as before {differences(db, before)} nor complete " \
        f"{differences(db, complete)}"
    if process.returncode == 0:  # done before the signal
        assert err == "" and now == "complete"
    elif how == "SIGINT":
        assert process.returncode == 130, err
        if now == "complete":
            assert err == "logmine: interrupted after the commit: the database holds the new data\n"
        else:
            assert err == "logmine: interrupted: nothing was stored, the database is as it was\n"
    else:
        assert process.returncode == -signal.SIGKILL
    assert not shared_files(process.pid)



def test_a_ctrl_c_while_the_interpreter_tears_down_is_ignored(tmp_path: Path) -> None:
    """Python puts back the default SIGINT handler in place of its own while it tears down: a Ctrl-C then,
    after the ingest had committed and reported, killed the process (exit -2, no message) with its
    database complete. Once the command is done, SIGINT is ignored, which Python leaves as it is."""
    db = tmp_path / "t.duckdb"
    script = ("import signal, sys\n"
              f"sys.argv = ['logmine', 'ingest', {str(JOURNAL)!r}, '--db', {str(db)!r}, '--json']\n"
              "from logmine.__main__ import start\n"
              "try:\n"
              "    start()\n"
              "except SystemExit as done:\n"
              "    print(done.code, signal.getsignal(signal.SIGINT) is signal.SIG_IGN, file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stderr == "0 True\n"
    with duckdb.connect(str(db), read_only=True) as con:
        stored = con.execute("SELECT count(*) FROM lines").fetchone()[0]
    assert stored == len(JOURNAL.read_bytes().splitlines())
