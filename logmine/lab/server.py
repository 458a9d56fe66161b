"""`logmine lab`: JupyterLab on copies of the bundled notebooks, with the database passed to them.

The notebooks read the database path from the environment variable LOGMINE_DB (and the run the
postmortem looks at from LOGMINE_SOURCE and LOGMINE_RUN), which the server passes to every kernel it
starts. They are served from a folder beside the database (`<db stem>-notebooks/`), copied there the first
time and never overwritten, so that a user's edits, and Jupyter's checkpoints, stay out of the installed
package. JupyterLab runs in its own session, so Ctrl-C reaches `logmine lab`, which stops the server (and
its kernels) cleanly; and it dies with `logmine lab` however that ends (a parent-death signal), so a killed
launcher leaves no server listening. The token reaches the server in its environment, which only its owner
can read (`/proc/PID/environ`), never on its command line, which every local user can. The notebooks' folder
is the owner's alone (0700, copies 0600), and nothing the lab reads or writes leaves it: a symlink in it that
points outside is refused at start, and the server's contents manager (`logmine.lab.contents`) refuses any
path that resolves outside at run time. Nothing is fetched from the internet: the news feed (and its prompt), the update
check and the extension manager's PyPI search are off, and so are jupysql's usage reports.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

DB_ENV = "LOGMINE_DB"
RUN_ENV = "LOGMINE_RUN"
SOURCE_ENV = "LOGMINE_SOURCE"
# jupysql reports usage to its makers unless told not to.
OFFLINE_ENV = {"PLOOMBER_STATS_ENABLED": "false", "PLOOMBER_VERSION_CHECK_DISABLED": "true"}
START_TIMEOUT_S = 120
# jupyter_server reads its token from this variable when none is configured.
TOKEN_ENV = "JUPYTER_TOKEN"
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# A Jupyter config folder (put on JUPYTER_CONFIG_PATH) whose labconfig/default_setting_overrides.json turns
# the news feed off: without it JupyterLab asks at every start whether to fetch news from the internet.
JUPYTER_CONFIG = Path(__file__).with_name("jupyter_config")
# Where the notebooks, opened without LOGMINE_DB, find the bundled example: a source checkout's examples/demo/.
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "demo"
EXAMPLE_INPUTS = ("journal.txt", "session.opencode.json")


class LabError(RuntimeError):
    """JupyterLab, or what it serves (the notebooks' copies, their database), cannot be set up; the message
    says what to do."""


def notebooks_dir() -> Path:
    """The folder of the bundled notebooks (shipped as the package data `logmine.notebooks`)."""
    return Path(str(resources.files("logmine.notebooks")))


def working_copy(database: Path) -> Path:
    """The folder `logmine lab` serves: `<db stem>-notebooks/` beside the database (made 0700), holding a copy
    of each bundled notebook (0600, as the database); one already there (perhaps edited) is kept as it is.
    LabError when the folder is a symlink or holds one that leads outside it (a dangling one included): the
    lab, or this copy, would write where it points."""
    folder = database.with_name(f"{database.stem}-notebooks")
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        if folder.is_symlink():
            raise LabError(f"{folder}: a symlink; the notebooks' folder must be a real folder")
        escaping = links_leaving(folder)
        if escaping:
            raise LabError(f"{escaping}: a symlink leading outside {folder} (to {os.readlink(escaping)}); "
                           "remove it, the lab writes only inside its folder")
        for bundled in sorted(notebooks_dir().glob("*.ipynb")):
            copy = folder / bundled.name
            if not copy.exists():
                # O_EXCL|O_NOFOLLOW: never through a link, never over a file that appeared meanwhile.
                fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                with os.fdopen(fd, "wb") as out:
                    out.write(bundled.read_bytes())
    except OSError as exc:
        raise LabError(f"{folder}: cannot copy the notebooks there ({exc.strerror})") from exc
    return folder


def links_leaving(folder: Path) -> Path | None:
    """The first symlink under `folder` whose target (followed to the end, existing or not) is outside it."""
    root = os.path.realpath(folder)
    for parent, dirs, files in os.walk(folder):
        for name in sorted(dirs + files):
            path = Path(parent) / name
            if path.is_symlink() and not inside(os.path.realpath(path), root):
                return path
    return None


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def notebook_db(db: str | Path | None) -> Path:
    """The database a bundled notebook opens: `db` (LOGMINE_DB), else the bundled example, ingested into
    demo.duckdb in the notebook's working folder the first time."""
    if db:
        return Path(db)
    if not EXAMPLE.is_dir():
        raise LabError(f"no {DB_ENV} given, and this installation has no bundled example ({EXAMPLE}): "
                       "open the notebooks with `logmine lab --db FILE`")
    example_db = Path.cwd() / "demo.duckdb"
    if not example_db.exists():
        from ..ingest.transaction import ingest

        ingest([str(EXAMPLE / name) for name in EXAMPLE_INPUTS], db=example_db)
    return example_db


def selection_env(database: Path, run: str | None, source: str | None) -> dict[str, str]:
    """LOGMINE_SOURCE and LOGMINE_RUN for the run and source asked for, checked before the server starts so
    that a run that does not exist, or that several sources have, is refused in one line (LookupError)."""
    if run is None and source is None:
        return {}
    from ..query.selection import select_run
    from ..store import reading

    with reading(database) as con:
        chosen_source, ordinal = select_run(con, run, source)
    return {SOURCE_ENV: chosen_source} | ({RUN_ENV: str(ordinal)} if run is not None else {})


def free_port(ip: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((ip, 0))
        return probe.getsockname()[1]


def local_address(ip: str) -> str:
    """Where this host reaches a server bound to `ip` (every address: its loopback)."""
    return "127.0.0.1" if ip in ("0.0.0.0", "::", "") else ip


@dataclass
class Lab:
    """A running JupyterLab server."""

    process: subprocess.Popen
    port: int
    token: str
    root: Path
    ip: str = "127.0.0.1"

    @property
    def url(self) -> str:
        return f"http://{local_address(self.ip)}:{self.port}/lab?token={self.token}"

    def ssh_hint(self, environ: dict[str, str] | None = None) -> str | None:
        """On a host reached over SSH (SSH_CONNECTION is set), the `ssh -L` line that brings the lab to the
        user's own machine, and the URL to open there; None on the user's own machine."""
        connection = (environ if environ is not None else os.environ).get("SSH_CONNECTION", "").split()
        if len(connection) != 4:
            return None
        server = connection[2]
        user = (environ if environ is not None else os.environ).get("USER")
        login = f"{user}@{server}" if user else server
        return (f"from your machine: ssh -N -L {self.port}:{local_address(self.ip)}:{self.port} {login}\n"
                f"  then open http://127.0.0.1:{self.port}/lab?token={self.token}")

    def api(self, path: str) -> bytes:
        """GET `/api/PATH` with the token; urllib's errors when the server does not answer."""
        request = urllib.request.Request(f"http://{local_address(self.ip)}:{self.port}/api/{path}",
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.read()

    def serve(self) -> int | None:
        """Wait until the server exits (its exit code) or this process gets Ctrl-C, SIGTERM or SIGHUP (None, once the
        server is stopped): the server has its own session, so it must not outlive us."""
        def interrupt(signum: int, frame: object) -> None:
            raise KeyboardInterrupt

        # Explicitly: a shell starting `logmine lab &` leaves SIGINT ignored.
        previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            return self.process.wait()
        except KeyboardInterrupt:
            self.stop()
            return None
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def stop(self) -> None:
        """SIGTERM: JupyterLab shuts its kernels down and exits; killed if it takes over 20 s."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start(db: str | Path, port: int | None = None, run: str | None = None, source: str | None = None,
          open_browser: bool = False, log: int | None = None, ip: str = "127.0.0.1") -> Lab:
    """Start JupyterLab on copies of the bundled notebooks with LOGMINE_DB set to `db`; return once it answers.

    `run` (ORDINAL or SOURCE:ORDINAL) and `source` choose the run the postmortem shows (`api.select_run`);
    LookupError when they name none or several. `log` is a file descriptor for the server's own messages
    (default: this process's stderr). `ip` is the address the server listens on (its token is always
    required).
    """
    if importlib.util.find_spec("jupyterlab") is None:
        raise LabError("JupyterLab is not installed: pip install 'logmine[notebook]'")
    database = Path(db).resolve()
    if not database.exists():
        raise LabError(f"{db}: no such database (run `logmine ingest` first)")
    selection = selection_env(database, run, source)
    root = working_copy(database)
    port = port or free_port(ip)
    token = secrets.token_hex(16)
    env = kernel_env(database, selection) | {TOKEN_ENV: token}  # the environment: owner-only, unlike argv
    command = [sys.executable, "-m", "jupyterlab", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
               f"--ServerApp.ip={ip}", f"--ServerApp.root_dir={root}",
               "--ServerApp.contents_manager_class=logmine.lab.contents.ConfinedContentsManager",
               f"--ServerApp.open_browser={open_browser}", "--ServerApp.log_level=WARN",
               "--LabApp.news_url=None",
               "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
               "--LabApp.extension_manager=readonly"]
    if os.geteuid() == 0:  # JupyterLab refuses root unless told (containers often run as root)
        command.append("--allow-root")
    # Its own session: Ctrl-C in the terminal reaches `logmine lab` only, which then stops the server; and a
    # parent-death signal, so that a launcher killed (or hung up on) takes the server with it.
    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                               start_new_session=True, preexec_fn=die_with_parent(os.getpid()))
    lab = Lab(process, port, token, root, ip)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise LabError(f"JupyterLab exited at start (code {process.returncode}); its messages are above")
        try:
            lab.api("status")
            return lab
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    lab.stop()
    raise LabError(f"JupyterLab did not answer on port {port} within {START_TIMEOUT_S} s")


def die_with_parent(launcher: int) -> Callable[[], None]:
    """What the server's process runs before JupyterLab: SIGTERM to it when `launcher` ends (Linux's
    PR_SET_PDEATHSIG); if the launcher ended already, before the signal was set, it exits at once."""
    def arm() -> None:
        if sys.platform.startswith("linux"):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != launcher:
            os._exit(1)

    return arm


def kernel_env(database: Path, selection: dict[str, str]) -> dict[str, str]:
    """The server's environment, which its kernels inherit: this one's, with the database and run chosen
    here (not ones left over in the shell), offline settings, and logmine's Jupyter config folder."""
    inherited = {k: v for k, v in os.environ.items() if k not in (DB_ENV, RUN_ENV, SOURCE_ENV)}
    config_path = os.pathsep.join(filter(None, [str(JUPYTER_CONFIG), os.environ.get("JUPYTER_CONFIG_PATH")]))
    return inherited | OFFLINE_ENV | {DB_ENV: str(database), "JUPYTER_CONFIG_PATH": config_path} | selection
