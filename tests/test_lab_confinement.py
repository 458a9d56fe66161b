"""`logmine lab` against its neighbours: the token never on a command line, the server gone with its launcher
however the launcher ends, and nothing written outside the notebooks' folder (real JupyterLab servers)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from logmine import api
from logmine.lab import server as lab
from logmine.lab.server import free_port
from tests.conftest import REPO, as_second_user

DEMO = REPO / "examples" / "demo"


@pytest.fixture(scope="module")
def small_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("lab-confined") / "demo.duckdb"
    api.ingest([str(DEMO / "journal.txt")], db=db)
    return db


def launch(db: Path) -> tuple[subprocess.Popen, int, str]:
    """`logmine lab` as a user starts it; its port and token once JupyterLab answers."""
    pytest.importorskip("jupyterlab")
    port = free_port()
    launcher = subprocess.Popen([sys.executable, "-m", "logmine", "lab", "--db", str(db), "--port", str(port)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    first = launcher.stdout.readline()
    url = re.fullmatch(rf"JupyterLab on http://127\.0\.0\.1:{port}/lab\?token=(\w+)\n", first)
    assert url, first
    return launcher, port, url[1]


def server_pid(port: int) -> int:
    """The JupyterLab process listening on `port`."""
    out = subprocess.run(["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True).stdout
    return int(re.search(r"pid=(\d+)", out)[1])


def answers(port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2)
    except urllib.error.HTTPError:
        return True  # answered, without a token
    except OSError:
        return False
    return True


def gone(pid: int, port: int, within_s: float = 30) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists() and not answers(port):
            return True
        time.sleep(0.2)
    return False


def put(port: int, token: str, path: str, content: str) -> int:
    body = json.dumps({"type": "file", "format": "text", "content": content}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/contents/{path}", data=body, method="PUT",
                                     headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("how", [signal.SIGHUP, signal.SIGKILL])
def test_the_lab_dies_with_its_launcher(small_db: Path, tmp_path: Path, how: signal.Signals) -> None:
    """kill -HUP (the terminal closed) and kill -KILL of `logmine lab`: JupyterLab stops listening too."""
    db = tmp_path / "demo.duckdb"
    shutil.copy(small_db, db)
    launcher, port, _ = launch(db)
    pid = server_pid(port)
    assert pid != launcher.pid and answers(port)
    launcher.send_signal(how)
    launcher.wait(timeout=60)
    assert gone(pid, port), f"JupyterLab (pid {pid}) still serves port {port} after {how.name} of its launcher"


def test_the_token_is_in_no_command_line_and_a_second_user_reads_nothing(small_db: Path, open_dir: Path) -> None:
    db = open_dir / "demo.duckdb"
    shutil.copy(small_db, db)
    db.chmod(0o600)
    launcher, port, token = launch(db)
    try:
        pid = server_pid(port)
        for process in (pid, launcher.pid):
            assert token not in Path(f"/proc/{process}/cmdline").read_bytes().decode(errors="replace")
        assert f"JUPYTER_TOKEN={token}".encode() in Path(f"/proc/{pid}/environ").read_bytes()
        folder = open_dir / "demo-notebooks"
        assert oct(folder.stat().st_mode & 0o777) == "0o700"
        assert {oct(p.stat().st_mode & 0o777) for p in folder.iterdir()} == {"0o600"}
        # Another local user: the server's environment, the database and the notebooks are closed to it.
        for path in (f"/proc/{pid}/environ", str(db), str(folder / "explore.ipynb")):
            seen = as_second_user("cat", path)
            assert seen.returncode != 0 and token.encode() not in seen.stdout, path
            assert b"Permission denied" in seen.stderr, path
        listing = as_second_user("cat", f"/proc/{pid}/cmdline")
        assert listing.returncode == 0 and b"jupyterlab" in listing.stdout and token.encode() not in listing.stdout
    finally:
        launcher.send_signal(signal.SIGINT)
        launcher.communicate(timeout=60)


def test_a_link_out_of_the_notebooks_folder_is_refused_at_start(small_db: Path, tmp_path: Path) -> None:
    """A dangling link among the notebooks: the copy would have been written through it. Refused in one line,
    nothing written where it points."""
    db = tmp_path / "demo.duckdb"
    shutil.copy(small_db, db)
    folder = tmp_path / "demo-notebooks"
    folder.mkdir()
    outside = tmp_path / "elsewhere" / "planted.ipynb"
    outside.parent.mkdir()
    (folder / "explore.ipynb").symlink_to(outside)
    refused = subprocess.run([sys.executable, "-m", "logmine", "lab", "--db", str(db)], capture_output=True,
                             text=True, timeout=60)
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (f"logmine: {folder / 'explore.ipynb'}: a symlink leading outside {folder} (to "
                              f"{outside}); remove it, the lab writes only inside its folder\n")
    assert not outside.exists()
    assert not (folder / "postmortem.ipynb").exists()


def test_the_running_lab_writes_nothing_through_a_link(small_db: Path, tmp_path: Path) -> None:
    """A link made after the lab started (dangling, or to a folder outside): PUT through it is refused (404) and
    nothing appears outside; a file inside is written as usual."""
    db = tmp_path / "demo.duckdb"
    shutil.copy(small_db, db)
    server = lab.start(db, log=subprocess.DEVNULL)
    try:
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        (server.root / "notes.txt").symlink_to(outside / "notes.txt")
        (server.root / "out").symlink_to(outside)
        assert put(server.port, server.token, "notes.txt", "planted") == 404
        assert put(server.port, server.token, "out/x.txt", "planted") == 404
        assert put(server.port, server.token, "mine.txt", "kept") == 201
    finally:
        server.stop()
    assert sorted(os.listdir(outside)) == []
    assert (server.root / "mine.txt").read_text() == "kept"
