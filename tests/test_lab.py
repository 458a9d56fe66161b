"""`logmine lab` as a user starts it, seen in a real (headless) browser: on copies of the notebooks beside the
database, with the run asked for checked first; and an ingest while another process reads the database."""

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
from logmine.lab import server as lab
from logmine.lab.server import free_port

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


def get_json(port: int, token: str, path: str) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/{path}", headers={"Authorization": f"token {token}"})
    return json.loads(urllib.request.urlopen(request, timeout=10).read())


def test_lab_serves_the_notebooks_to_a_browser_and_stops_on_ctrl_c(journal_db: Path, tmp_path: Path) -> None:
    pytest.importorskip("jupyterlab")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is absent")
    db = tmp_path / "demo.duckdb"
    shutil.copy(journal_db, db)
    bundled = {p.name: p.read_bytes() for p in (REPO / "notebooks").iterdir()}
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "logmine", "lab", "--db", str(db), "--port", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        first, second = server.stdout.readline(), server.stdout.readline()  # printed once JupyterLab answers
        url = re.fullmatch(rf"JupyterLab on (http://127\.0\.0\.1:{port}/lab\?token=(\w+))\n", first)
        assert url, first
        # It serves copies of the notebooks beside the database, not the package's own files.
        assert second == f"  notebooks in {tmp_path / 'demo-notebooks'} (your copies), database {db} ($LOGMINE_DB in " \
                         "the notebooks)\n"
        listing = get_json(port, url[2], "api/contents")
        assert sorted(item["name"] for item in listing["content"]) == ["explore.ipynb", "postmortem.ipynb"]
        assert sorted(p.name for p in (tmp_path / "demo-notebooks").iterdir()) == ["explore.ipynb", "postmortem.ipynb"]
        # No news, and no prompt asking whether to fetch it: the setting's default is "false".
        notification = get_json(port, url[2], "lab/api/settings/@jupyterlab/apputils-extension:notification")
        assert notification["schema"]["properties"]["fetchNews"]["default"] == "false"
        browser = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium'}", "--virtual-time-budget=10000"]
        dom = subprocess.run([*browser, "--dump-dom", url[1]], capture_output=True, text=True, timeout=120).stdout
        assert "explore.ipynb" in dom and "postmortem.ipynb" in dom  # the lab's file browser lists them
        assert "Jupyter news" not in dom
    finally:
        server.send_signal(signal.SIGINT)  # Ctrl-C
        rest, _ = server.communicate(timeout=60)
    assert server.returncode == 0 and rest.strip().endswith("JupyterLab stopped")
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2)
    assert {p.name: p.read_bytes() for p in (REPO / "notebooks").iterdir()} == bundled  # no checkpoints there


def test_lab_passes_the_run_asked_for_to_the_kernels(two_journals_db: Path, tmp_path: Path) -> None:
    pytest.importorskip("jupyterlab")
    db = tmp_path / "two.duckdb"
    shutil.copy(two_journals_db, db)
    server = lab.start(db, run="2", source="gpu-b/journal.txt", log=subprocess.DEVNULL)
    try:
        # The server's environment, which every kernel it starts inherits.
        env = dict(item.split("=", 1) for item in Path(f"/proc/{server.process.pid}/environ").read_text()
                   .split("\0") if "=" in item)
        assert server.root == tmp_path / "two-notebooks"
    finally:
        server.stop()
    assert (env["LOGMINE_DB"], env["LOGMINE_SOURCE"], env["LOGMINE_RUN"]) == (
        str(db), str(two_journals_db.parent / "gpu-b" / "journal.txt"), "2")


@pytest.mark.parametrize(("args", "message"), [
    (["--run", "2"], "run '2': several sources have runs (gpu-a/journal.txt, gpu-b/journal.txt); name it as "
                     "SOURCE:ORDINAL, e.g. gpu-a/journal.txt:2"),
    (["--run", "7", "--source", "gpu-a/journal.txt"],
     "no run 7 in gpu-a/journal.txt; the runs are gpu-a/journal.txt: 1-3"),
    (["--run", "gpu-b/journal.txt:3"], "no run 3 in gpu-b/journal.txt; the runs are gpu-b/journal.txt: 1-2"),
    (["--run", "gpu-a/journal.txt:2", "--source", "gpu-b/journal.txt"],
     "run 'gpu-a/journal.txt:2' is of gpu-a/journal.txt, not of the source asked for, gpu-b/journal.txt"),
    (["--source", "gpu-c"], "no source 'gpu-c'; the sources are gpu-a/journal.txt, gpu-b/journal.txt"),
])
def test_lab_refuses_a_run_it_cannot_name(two_journals_db: Path, tmp_path: Path, args: list[str],
                                          message: str) -> None:
    """Refused in one line before JupyterLab starts (or any notebook is copied)."""
    db = tmp_path / "two.duckdb"
    shutil.copy(two_journals_db, db)
    refused = subprocess.run([sys.executable, "-m", "logmine", "lab", "--db", str(db), *args], capture_output=True,
                             text=True, timeout=60)
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == f"logmine: {message}\n"
    assert not (tmp_path / "two-notebooks").exists()


def test_the_working_copy_keeps_the_users_edits(tmp_path: Path) -> None:
    db = tmp_path / "mine.duckdb"
    folder = lab.working_copy(db)
    assert folder == tmp_path / "mine-notebooks"
    (folder / "explore.ipynb").write_text("{}")  # edited
    (folder / "postmortem.ipynb").unlink()  # deleted: the bundled one comes back
    lab.working_copy(db)
    assert (folder / "explore.ipynb").read_text() == "{}"
    assert (folder / "postmortem.ipynb").read_bytes() == (REPO / "notebooks" / "postmortem.ipynb").read_bytes()


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
