"""What the user named, and nothing beyond: walks that stay in their folder, the kernel's files never read,
options that take only what they say (`--tz`, `--jobs`). Each case: the reproduction, the one line, and the
rows of the other inputs of the same command."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest

from logmine import api
from logmine.ingest import transaction
from logmine.inputs.sources import InputError, classify_inputs
from tests.conftest import REPO

JOURNAL = (REPO / "examples" / "demo" / "journal.txt").read_text().splitlines(keepends=True)[:50]
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"


def logmine(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logmine", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def stored(db: Path) -> tuple[list[str], str]:
    """The sources' display names and every stored message, joined."""
    with duckdb.connect(str(db), read_only=True) as con:
        names = [r[0] for r in con.execute("SELECT display FROM sources ORDER BY display").fetchall()]
        text = "\n".join(r[0] for r in con.execute("SELECT message FROM lines").fetchall())
    return names, text


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """logs/ with a journal, a link to a key outside it named like a log, a link to /proc/self, and a FIFO."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "server.log").write_text("".join(JOURNAL))
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    (tmp_path / "home" / ".ssh" / "id_ed25519").write_text(KEY)
    (tmp_path / "logs" / "stolen.log").symlink_to(tmp_path / "home" / ".ssh" / "id_ed25519")
    (tmp_path / "logs" / "self").symlink_to("/proc/self")
    (tmp_path / "logs" / "inside.log").symlink_to("server.log")  # inside the tree: followed
    os.mkfifo(tmp_path / "logs" / "pipe.log")
    return tmp_path


def test_a_walk_follows_no_link_out_of_its_folder(planted: Path) -> None:
    done = logmine("ingest", "logs", "--db", "x.duckdb", cwd=planted)
    assert done.returncode == 1, done.stderr  # the FIFO
    assert done.stderr == "logmine: logs/pipe.log: not a regular file (a FIFO), skipped\n"
    assert ("logs: 2 symlinks leading outside it not followed (such as logs/self -> /proc/self; --follow-links "
            "follows them)\n") in done.stdout
    names, text = stored(planted / "x.duckdb")
    # inside.log is server.log under another name, read first: one source, the other a copy of it.
    assert names == ["logs/inside.log"]
    assert "PRIVATE KEY" not in text and len(text.splitlines()) == 50


def test_follow_links_follows_them_but_never_into_the_kernel(planted: Path) -> None:
    done = logmine("ingest", "logs", "--db", "x.duckdb", "--follow-links", cwd=planted)
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["logmine: logs/pipe.log: not a regular file (a FIFO), skipped",
                                        "logmine: logs/self: a file of the kernel (/proc), not a log: skipped"]
    names, text = stored(planted / "x.duckdb")
    assert names == ["logs/inside.log", "logs/stolen.log"]
    assert "BEGIN OPENSSH PRIVATE KEY" in text  # asked for


def test_the_kernels_files_are_never_read_even_named(tmp_path: Path) -> None:
    (tmp_path / "server.log").write_text("".join(JOURNAL))
    done = logmine("ingest", "/proc/self/environ", "/sys/kernel", "server.log", "--db", "x.duckdb", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "logmine: /proc/self/environ: a file of the kernel (/proc), not a log: skipped",
        "logmine: /sys/kernel: a file of the kernel (/sys), not a log: skipped"]
    assert stored(tmp_path / "x.duckdb")[0] == ["server.log"]


def test_a_link_to_proc_self_does_not_walk_the_root(tmp_path: Path) -> None:
    """Followed or not, /proc/self (whose `root` is /) is never entered: the walk sees the folder alone."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "self").symlink_to("/proc/self")
    for follow in (False, True):
        found = classify_inputs([str(tmp_path / "logs")], follow_links=follow)
        assert found.logs == [] and found.transcripts == []


@pytest.mark.parametrize("tz", ["+1:3", "+13", "1:00", "+25:00", "+01:75", "+14:30", "UTC+1", "+0100x", "++01:00"])
def test_tz_takes_only_an_offset(tz: str) -> None:
    if tz == "+13":
        assert api.parse_offset(tz) == timedelta(hours=13)  # ±HH alone is an offset
        return
    with pytest.raises(InputError, match=r"expected an offset from UTC as ±HH:MM"):
        api.parse_offset(tz)


@pytest.mark.parametrize(("tz", "offset"), [("+01:00", 60), ("-0530", -330), ("UTC", 0), ("utc-03:00", -180),
                                            ("+14:00", 840)])
def test_tz_offsets(tz: str, offset: int) -> None:
    assert api.parse_offset(tz) == timedelta(minutes=offset)


def test_tz_refused_in_one_line_before_anything(tmp_path: Path) -> None:
    (tmp_path / "server.log").write_text("".join(JOURNAL))
    done = logmine("ingest", "server.log", "--db", "x.duckdb", "--tz", "+1:3", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("logmine: --tz '+1:3': expected an offset from UTC as ±HH:MM, from -14:00 to +14:00, "
                           "e.g. +01:00\n")
    assert not (tmp_path / "x.duckdb").exists()


def test_jobs_are_capped_at_the_cores_and_the_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOGMINE_MAX_JOBS", raising=False)  # the tests' own raise of the bound
    cores = len(os.sched_getaffinity(0))
    assert transaction.usable_jobs(64) == cores
    assert transaction.usable_jobs(None) == cores
    assert transaction.usable_jobs(1) == 1
    monkeypatch.setattr(transaction, "available_memory", lambda: transaction.JOB_MEMORY_BYTES * 1 + 5)
    assert transaction.usable_jobs(64) == 1
    monkeypatch.setattr(transaction, "available_memory", lambda: 0)
    assert transaction.usable_jobs(64) == 1  # one process, this one, always
    monkeypatch.setattr(transaction, "available_memory", lambda: 1 << 40)
    monkeypatch.setenv("LOGMINE_MAX_JOBS", "6")
    assert transaction.usable_jobs(64) == 6
