"""Shared fixtures: where ../shared is, and databases ingested once per test session."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest

from logmine import api

REPO = Path(__file__).resolve().parents[1]
# LOGMINE_SHARED points at the shared data where the checkout has no ../shared beside it (a worktree).
SHARED = Path(os.environ.get("LOGMINE_SHARED") or REPO.parent / "shared")
SAMPLE = SHARED / "samples" / "kimi-k25"
CORPUS = SHARED / "corpus" / "sglang"
# The tests of --jobs run pools of more processes than this machine has cores (ingests cap them at the cores).
os.environ.setdefault("LOGMINE_MAX_JOBS", "64")


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or a clean skip when that folder is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent")
    return path


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database of the bundled example (journal and transcript), built once; open it read-only."""
    db = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    demo = REPO / "examples" / "demo"
    api.ingest([str(demo / "journal.txt"), str(demo / "session.opencode.json")], db=db)
    return db


@pytest.fixture(scope="session")
def kimi_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database of the kimi-k25 sample (journal and opencode session), built once; open it read-only."""
    sample = shared_path("samples", "kimi-k25")
    db = tmp_path_factory.mktemp("kimi") / "kimi.duckdb"
    api.ingest([str(sample / "journal.txt"), str(sample / "session.opencode.json")], db=db)
    return db


@pytest.fixture(scope="session")
def two_journals_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two servers' journals, both named journal.txt, in one database (built once; open it read-only):
    gpu-a/ holds the bundled example's three runs; gpu-b/ its first two, of a model renamed qwen3-8b, so
    that a figure of one server cannot pass for the other's."""
    root = tmp_path_factory.mktemp("two-journals")
    demo = (REPO / "examples" / "demo" / "journal.txt").read_text().splitlines(keepends=True)
    # Line 967 ends run 2 (its systemd verdicts); the restart that begins run 3 is left out.
    journals = {"gpu-a": "".join(demo), "gpu-b": "".join(demo[:967]).replace("qwen3-32b", "qwen3-8b")}
    for host, text in journals.items():
        (root / host).mkdir()
        (root / host / "journal.txt").write_text(text)
    db = root / "two.duckdb"
    api.ingest([str(root / host / "journal.txt") for host in journals], db=db)
    return db


@pytest.fixture(scope="session")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., duckdb.DuckDBPyConnection]:
    """ingested(path, ...) -> read-only connection to a database holding those inputs (cached)."""
    cache: dict[tuple[str, ...], Path] = {}

    def make(*paths: Path | str) -> duckdb.DuckDBPyConnection:
        key = tuple(str(p) for p in paths)
        if key not in cache:
            db = tmp_path_factory.mktemp("db") / "logmine.duckdb"
            api.ingest(list(key), db=db)
            cache[key] = db
        return duckdb.connect(str(cache[key]), read_only=True)

    return make


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder every local user may enter (pytest's own are the owner's alone), so that what keeps a second
    user out of a file logmine writes is the file's own mode."""
    folder = Path(tempfile.mkdtemp(prefix="logmine-open-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def as_second_user(*command: str) -> subprocess.CompletedProcess:
    """`command` run as the local user `nobody` (setpriv); a clean skip unless this is root with setpriv."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("a second local user needs root and setpriv")
    return subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command],
                          capture_output=True, timeout=30)
