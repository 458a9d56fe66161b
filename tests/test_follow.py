"""`logmine follow`: real journal files read by the real `journalctl -f`, plain files rotated and truncated,
SIGKILL at random moments, readers beside it; the stored tables equal one ingest of the same lines."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from logmine import api
from logmine.store import connect

from .journal_export import append_entries, available, entries_from_short, journal_json

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "examples" / "demo" / "journal.txt"
LOGMINE = [sys.executable, "-m", "logmine"]
# Columns that say where and when a source was read, not what it holds; and the hashes of its bytes, since
# journalctl orders an entry's JSON fields differently at each run.
VOLATILE = {"sources": {"path", "display", "ingested_at", "head_hash", "tail_hash", "content_hash"}}
needs_journal = pytest.mark.skipif(not available(), reason="systemd-journal-remote and journalctl are needed")


def tables(db: Path, only: set[str] | None = None) -> dict[str, list[tuple]]:
    """Every table of the database, rows sorted, the volatile columns left out."""
    con = connect(db, read_only=True)
    try:
        names = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                           "WHERE table_type = 'BASE TABLE' ORDER BY 1").fetchall()]
        found = {}
        for name in names if only is None else sorted(only):
            columns = [r[0] for r in con.execute(f'DESCRIBE "{name}"').fetchall()
                       if r[0] not in VOLATILE.get(name, set())]
            found[name] = con.execute(f'SELECT {", ".join(map(repr, columns)).replace(chr(39), chr(34))} '
                                      f'FROM "{name}" ORDER BY ALL').fetchall()
        return found
    finally:
        con.close()


def ingested(paths: list[Path], db: Path) -> dict[str, list[tuple]]:
    report = api.ingest([str(p) for p in paths], db=db, jobs=1)
    assert not report.logs.failed, report.logs.failed
    return tables(db)


def start_follow(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([*LOGMINE, "follow", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def wait_for(condition: Callable[[], bool], what: str, process: subprocess.Popen | None = None,
             seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"follow ended ({process.returncode}) before {what}: {process.stderr.read()}")
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def scalar(db: Path, sql: str) -> object:
    if not db.exists():
        return None
    try:
        con = connect(db, read_only=True)
    except (duckdb.Error, FileNotFoundError):
        return None
    try:
        return con.execute(sql).fetchone()[0]
    except duckdb.CatalogException:
        return None
    finally:
        con.close()


def lines_stored(db: Path) -> int:
    return scalar(db, "SELECT count(*) FROM lines") or 0


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as out:
        out.write(data)


def entries_stored(db: Path) -> int:
    return scalar(db, "SELECT coalesce(sum(entries), 0) FROM follow_positions") or 0


def stop(process: subprocess.Popen) -> str:
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    return out


def the_same_without(expected: dict, actual: dict, left_out: set[str]) -> None:
    for name, rows in expected.items():
        assert actual[name] == rows, name
    assert set(actual) - set(expected) <= left_out


FOLLOW_TABLES = {"follow_positions", "alerts"}


@needs_journal
def test_follow_journal_file_equals_an_ingest_of_the_same_entries(tmp_path: Path) -> None:
    entries = entries_from_short(DEMO.read_bytes())
    journal = tmp_path / "gpu-box.journal"
    append_entries(journal, entries[:300])
    db = tmp_path / "live.duckdb"
    process = start_follow("--journal-file", str(journal), "--db", str(db), cwd=tmp_path)
    try:
        wait_for(lambda: entries_stored(db) == 300, "the first 300 entries", process)
        for cut in (945, len(entries)):  # the first cut falls inside the tracebacks of run 2
            done = entries_stored(db)
            append_entries(journal, entries[done:cut])
            wait_for(lambda c=cut: entries_stored(db) == c, f"{cut} entries", process)
        out = stop(process)
    finally:
        process.kill()
    same = tmp_path / "same" / "gpu-box.journal.json"
    same.parent.mkdir()
    same.write_bytes(journal_json(journal))
    spooled = (tmp_path / "live.duckdb.follow" / "gpu-box.journal.json").read_bytes().splitlines()
    assert [json.loads(e) for e in spooled] == [json.loads(e) for e in same.read_bytes().splitlines()]
    the_same_without(ingested([same], tmp_path / "once.duckdb"), tables(db), FOLLOW_TABLES)
    assert "run 3: serving" in out


def test_follow_files_through_rotation_and_truncation(tmp_path: Path) -> None:
    lines = DEMO.read_bytes().splitlines(keepends=True)
    logs = tmp_path / "logs"
    logs.mkdir()
    server = logs / "server.log"
    server.write_bytes(b"".join(lines[:200]))
    db = tmp_path / "live.duckdb"
    process = start_follow(str(server), "--db", str(db), cwd=tmp_path)
    try:
        wait_for(lambda: lines_stored(db) == 200, "200 lines", process)
        append(server, b"".join(lines[200:450]))
        wait_for(lambda: lines_stored(db) == 450, "450 lines", process)
        # Rotation, as logrotate does it: the lines written just before it are read from server.log.1.
        append(server, b"".join(lines[450:500]))
        server.rename(logs / "server.log.1")
        server.write_bytes(b"".join(lines[500:700]))
        wait_for(lambda: lines_stored(db) == 700, "700 lines after the rotation", process)
        # Truncation in place (`> server.log`): what was read stays, the file is read from its start.
        truncated_away = server.read_bytes()
        server.write_bytes(b"".join(lines[700:900]))
        wait_for(lambda: lines_stored(db) == 900, "900 lines after the truncation", process)
        append(server, b"".join(lines[900:]))
        wait_for(lambda: lines_stored(db) == len(lines), "every line", process)
        stop(process)
    finally:
        process.kill()
    once = tmp_path / "once"
    once.mkdir()
    (once / "server.log.1").write_bytes(b"".join(lines[:500]))
    (once / "server.log.a").write_bytes(truncated_away)
    (once / "server.log").write_bytes(b"".join(lines[700:]))
    expected = ingested([once / "server.log.1", once / "server.log.a", once / "server.log"], tmp_path / "once.duckdb")
    actual = tables(db)
    the_same_without(expected, actual, FOLLOW_TABLES)
    paths = [r[0] for r in duckdb.connect(str(db), read_only=True).execute(
        "SELECT path FROM sources ORDER BY source_id").fetchall()]
    assert paths == [str(logs / "server.log.1"), f"{server}@1", str(server)]


def journalctl_processes(journal: Path) -> list[int]:
    """The journalctl processes reading this journal file."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            command = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if command and command[0].endswith(b"journalctl") and str(journal).encode() in command:
            found.append(int(proc.name))
    return found


@needs_journal
def test_sigkill_at_random_moments_loses_and_repeats_nothing(tmp_path: Path) -> None:
    """Entries arrive while follow is killed (SIGKILL) and restarted at seeded random moments: in the
    middle of a commit, between commits, before the first; the tables are those of one ingest of all."""
    rng = random.Random(27)
    entries = entries_from_short(DEMO.read_bytes())
    journal = tmp_path / "gpu-box.journal"
    append_entries(journal, entries[:100])
    written = 100
    db = tmp_path / "live.duckdb"
    kills = 0
    while written < len(entries) or kills < 5:
        process = start_follow("--journal-file", str(journal), "--db", str(db), cwd=tmp_path)
        deadline = time.monotonic() + rng.uniform(0.3, 3.0)
        while time.monotonic() < deadline:
            if written < len(entries):
                step = rng.randint(20, 120)
                append_entries(journal, entries[written:written + step])
                written = min(len(entries), written + step)
            time.sleep(rng.uniform(0.05, 0.3))
        process.kill()
        process.wait()
        kills += 1
    process = start_follow("--journal-file", str(journal), "--db", str(db), cwd=tmp_path)
    try:
        wait_for(lambda: entries_stored(db) == len(entries), "every entry after the kills", process)
        # Stopped only once it runs (its journalctl started): a Ctrl-C while Python still starts tests nothing.
        wait_for(lambda: Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().strip() != "",
                 "the last follow's journalctl", process)
        stop(process)
    finally:
        process.kill()
    wait_for(lambda: not journalctl_processes(journal), "journalctl to end with follow", seconds=10)
    con = connect(db, read_only=True)
    # Each condition was raised once whatever the kills, and every alert stored was sent.
    assert con.execute("SELECT rule, key, delivered FROM alerts ORDER BY ALL").fetchall() == [
        ("child-sigquit", "1:2", True), ("hicache-host-memory", "1:2", True)]
    con.close()
    same = tmp_path / "same" / "gpu-box.journal.json"
    same.parent.mkdir()
    same.write_bytes(journal_json(journal))
    the_same_without(ingested([same], tmp_path / "once.duckdb"), tables(db), FOLLOW_TABLES)


def test_query_and_report_read_the_database_while_follow_writes_it(tmp_path: Path) -> None:
    lines = DEMO.read_bytes().splitlines(keepends=True)
    server = tmp_path / "journal.txt"
    server.write_bytes(b"".join(lines[:120]))
    db = tmp_path / "live.duckdb"
    process = start_follow(str(server), "--db", str(db), cwd=tmp_path)
    try:
        wait_for(lambda: (scalar(db, "SELECT count(*) FROM lines") or 0) > 0, "the first lines", process)
        written, runs_seen = 120, []
        for _ in range(3):
            append(server, b"".join(lines[written:written + 350]))
            written += 350
            runs = subprocess.run([*LOGMINE, "query", "runs", "--db", str(db), "--format", "json"],
                                  capture_output=True, text=True, timeout=60)
            assert runs.returncode == 0, runs.stderr
            runs_seen.append(len(json.loads(runs.stdout)))
        assert runs_seen[0] >= 1 and runs_seen == sorted(runs_seen)
        report = subprocess.run([*LOGMINE, "report", "--db", str(db), "-o", "-", "--format", "markdown"],
                                capture_output=True, text=True, timeout=120)
        assert report.returncode == 0, report.stderr
        assert "run 1" in report.stdout.lower()
        # A reader that keeps the database open (a notebook) holds the writer back, which waits and says so.
        append(server, b"".join(lines[written:]))
        reader = connect(db, read_only=True)
        time.sleep(2)
        reader.close()
        wait_for(lambda: scalar(db, "SELECT count(*) FROM lines") == len(lines), "every line", process)
        out = stop(process)
    finally:
        process.kill()
    assert "waiting: process" in out and "has the database open" in out
    assert scalar(db, "SELECT count(*) FROM runs") == 3


def test_follow_a_folder_of_per_rank_files_through_hourly_rotation(tmp_path: Path) -> None:
    """SGLang's `<host>_<rank>.log` files, rotated every hour to `<host>_<rank>.log.YYYY-MM-DD_HH`."""
    lines = DEMO.read_bytes().splitlines(keepends=True)
    logs = tmp_path / "requests"
    logs.mkdir()
    rank0, rank1 = logs / "gpu-box_0.log", logs / "gpu-box_1.log"
    rank0.write_bytes(b"".join(lines[:300]))
    rank1.write_bytes(b"".join(lines[300:400]))
    db = tmp_path / "live.duckdb"
    process = start_follow(str(logs), "--db", str(db), cwd=tmp_path)
    try:
        wait_for(lambda: lines_stored(db) == 400, "both ranks' files", process)
        append(rank0, b"".join(lines[400:450]))
        rotated = logs / "gpu-box_0.log.2026-03-12_10"
        rank0.rename(rotated)
        rank0.write_bytes(b"".join(lines[450:600]))
        wait_for(lambda: lines_stored(db) == 600, "the rotated hour and the new one", process)
        stop(process)
    finally:
        process.kill()
    once = tmp_path / "once"
    once.mkdir()
    for path in (rotated, rank1, rank0):
        (once / path.name).write_bytes(path.read_bytes())
    expected = ingested([once / rotated.name, once / rank1.name, once / rank0.name], tmp_path / "once.duckdb")
    the_same_without(expected, tables(db), FOLLOW_TABLES)


def test_follow_rank_event_files_through_their_rotation_as_one_run(tmp_path: Path) -> None:
    """SGLang's own per-rank event files (tests/rank_fixtures.py): each file renamed to its hour's copy and
    begun again under follow keeps the rows of both, and the ranks' files stay one run with two ranks."""
    from .rank_fixtures import RANKS, launch, write_rank_files

    written = tmp_path / "written"
    write_rank_files(written, launch())
    logs = tmp_path / "requests"
    logs.mkdir()
    live = sorted(p for p in written.iterdir() if p.suffix == ".log")
    for path in live:  # the first hour, before the rollover
        (logs / path.name).write_bytes((written / f"{path.name}.2026-03-01_22").read_bytes())
    db = tmp_path / "live.duckdb"
    process = start_follow(str(logs), "--db", str(db), cwd=tmp_path)
    try:
        first_hour = sum(len((logs / p.name).read_bytes().splitlines()) for p in live)
        wait_for(lambda: lines_stored(db) == first_hour, "the first hour of both ranks", process)
        for path in live:
            (logs / path.name).rename(logs / f"{path.name}.2026-03-01_22")
            (logs / path.name).write_bytes(path.read_bytes())
        total = sum(len(p.read_bytes().splitlines()) for p in written.iterdir())
        wait_for(lambda: lines_stored(db) == total, "the copies and the new files", process)
        stop(process)
    finally:
        process.kill()
    assert scalar(db, "SELECT count(*) FROM runs") == 1
    con = connect(db, read_only=True)
    try:
        assert api.runs(con)[["ordinal", "ranks"]].values.tolist() == [[1, RANKS]]
    finally:
        con.close()
    the_same_without(ingested([logs], tmp_path / "once.duckdb"), tables(db), FOLLOW_TABLES)
