"""`logmine lab` as a user starts it, seen in a real (headless) browser; and an ingest while another process
reads the database."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import duckdb
import pytest

from logmine import api
from logmine.lab import free_port

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "examples" / "demo"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def journal_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo journal alone (its transcript is left for the tests to ingest)."""
    db = tmp_path_factory.mktemp("lab") / "demo.duckdb"
    api.ingest([str(DEMO / "journal.txt")], db=db)
    return db


def test_lab_serves_the_notebooks_to_a_browser_and_stops_on_ctrl_c(journal_db: Path, tmp_path: Path) -> None:
    pytest.importorskip("jupyterlab")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is absent")
    port = free_port()
    lab = subprocess.Popen([sys.executable, "-m", "logmine", "lab", "--db", str(journal_db), "--port", str(port)],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        first = lab.stdout.readline()  # printed once JupyterLab answers /api/status
        url = re.fullmatch(rf"JupyterLab on (http://127\.0\.0\.1:{port}/lab\?token=(\w+))\n", first)
        assert url, first
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/contents",
                                         headers={"Authorization": f"token {url[2]}"})
        listing = json.loads(urllib.request.urlopen(request, timeout=10).read())
        assert {"explore.ipynb", "postmortem.ipynb"} <= {item["name"] for item in listing["content"]}
        browser = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium'}", "--virtual-time-budget=10000"]
        dom = subprocess.run([*browser, "--dump-dom", url[1]], capture_output=True, text=True, timeout=120).stdout
        assert "explore.ipynb" in dom and "postmortem.ipynb" in dom  # the lab's file browser lists them
    finally:
        lab.send_signal(signal.SIGINT)  # Ctrl-C
        rest, _ = lab.communicate(timeout=60)
    assert lab.returncode == 0 and rest.strip().endswith("JupyterLab stopped")
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2)


READER = textwrap.dedent("""
    import sys
    import duckdb
    import pandas as pd
    import logmine.api as lm

    db = sys.argv[1]
    if sys.argv[2] == "connection":  # a connection kept open, e.g. jupysql's or an open `lm.open_db`
        con = duckdb.connect(db, read_only=True)
        read = lambda: con.execute("SELECT count(*) FROM sessions").fetchone()[0]
    else:  # the notebooks' engine: a connection per query
        engine = lm.engine(db)
        read = lambda: int(pd.read_sql("SELECT count(*) AS n FROM sessions", engine)["n"][0])
    for line in sys.stdin:  # one read per line the test sends
        print(read(), flush=True)
""")


@pytest.mark.parametrize("reader", ["engine", "connection"])
def test_an_ingest_while_another_process_reads(journal_db: Path, tmp_path: Path, reader: str) -> None:
    """DuckDB lets one process write a file or several read it: an ingest runs between the notebooks' queries,
    and stops with one line naming the process that keeps a connection open."""
    db = tmp_path / "demo.duckdb"
    shutil.copy(journal_db, db)
    process = subprocess.Popen([sys.executable, "-c", READER, str(db), reader], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    try:
        process.stdin.write("read\n")
        process.stdin.flush()
        assert process.stdout.readline() == "0\n"
        ingest = subprocess.run([sys.executable, "-m", "logmine", "ingest", str(DEMO / "session.opencode.json"),
                                 "--db", str(db)], capture_output=True, text=True, timeout=120)
        process.stdin.write("read\n")
        process.stdin.flush()
        sessions_seen = process.stdout.readline()
    finally:
        process.stdin.close()
        process.wait(timeout=30)
    if reader == "engine":
        assert ingest.returncode == 0, ingest.stderr
        assert sessions_seen == "1\n"
    else:
        assert ingest.returncode == 2 and ingest.stdout == ""
        (line,) = ingest.stderr.splitlines()
        assert line.startswith(f"logmine: {db} is open in process {process.pid} (") and "ingest again" in line
        assert sessions_seen == "0\n"
        with duckdb.connect(str(db), read_only=True) as con:
            assert con.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
