"""Inputs that hung the ingest or got a misleading message: each gets one true line, the rest is stored."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import duckdb
import zstandard

REPO = Path(__file__).resolve().parents[1]
JOURNAL = REPO / "examples" / "demo" / "journal.txt"
CLAUDE_LINE = ('{"type":"user","sessionId":"s1","uuid":"u%d","timestamp":"2026-03-12T10:00:00Z",'
               '"message":{"role":"user","content":"hello %d"}}\n')


def opencode_db(path: Path) -> None:
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE session (id TEXT); CREATE TABLE message (id TEXT, session_id TEXT, data TEXT);"
                      "CREATE TABLE part (id TEXT, message_id TEXT, session_id TEXT, data TEXT);")
    con.executemany("INSERT INTO session VALUES (?)", [(f"ses_{i:05d}" + "x" * 200,) for i in range(2000)])
    con.commit()
    con.close()


def test_fifos_devices_loops_and_broken_transcripts(tmp_path: Path) -> None:
    walked = tmp_path / "logs"
    walked.mkdir()
    shutil.copy(JOURNAL, walked / "journal.txt")
    os.mkfifo(walked / "pipe.log")
    (walked / "here").symlink_to(".")
    (walked / "again").symlink_to(".")
    os.mkfifo(tmp_path / "named.fifo")
    opencode_db(tmp_path / "corrupt.db")
    data = bytearray((tmp_path / "corrupt.db").read_bytes())
    data[8192:len(data) - 4096] = b"\xff" * (len(data) - 8192 - 4096)
    (tmp_path / "corrupt.db").write_bytes(bytes(data))
    (tmp_path / "truncated.db").write_bytes(bytes(data[:3000]))
    transcript = zstandard.ZstdCompressor().compress("".join(CLAUDE_LINE % (i, i) for i in range(3000)).encode())
    (tmp_path / "cut.jsonl.zst").write_bytes(transcript[:len(transcript) // 2])
    names = [str(walked), str(tmp_path / "named.fifo"), "/dev/null", str(tmp_path / "corrupt.db"),
             str(tmp_path / "truncated.db"), str(tmp_path / "cut.jsonl.zst")]
    result = subprocess.run([sys.executable, "-m", "logmine", "ingest", *names, "--db", str(tmp_path / "t.duckdb")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "journal.txt: new, journal-short, 1,205 lines, 0 untyped" in result.stdout
    errors = sorted(result.stderr.strip().splitlines())
    assert errors == sorted([
        f"logmine: {walked}/pipe.log: not a regular file (a FIFO), skipped",
        f"logmine: {tmp_path}/named.fifo: not a regular file (a FIFO), skipped",
        "logmine: /dev/null: not a regular file (a character device), skipped",
        f"logmine: {tmp_path}/corrupt.db: the opencode database cannot be read, corrupt? "
        "(database disk image is malformed)",
        f"logmine: {tmp_path}/truncated.db: a SQLite database that cannot be read, truncated or corrupt? "
        "(database disk image is malformed)",
        f"logmine: {tmp_path}/cut.jsonl.zst: unreadable after line 1009, corrupt or truncated? "
        "(zstd data ends inside a frame)",
    ]), result.stderr


def test_a_transcript_on_standard_input_is_refused_not_read_as_a_crashing_server(tmp_path: Path) -> None:
    """An opencode export piped in was stored as a plain log whose JSON strings made up a failed run."""
    db = tmp_path / "t.duckdb"
    export = (REPO / "examples" / "demo" / "session.opencode.json").read_bytes()
    done = subprocess.run([sys.executable, "-m", "logmine", "ingest", "-", "--db", str(db)], input=export,
                          capture_output=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [
        "logmine: -: an agent transcript (opencode-export) on standard input, not a log: save it to a file and "
        "ingest the file"]
    assert not db.exists()  # nothing was stored: no database was made


def test_a_utf16_log_is_named_for_what_it_is_and_costs_no_other_input(tmp_path: Path) -> None:
    """PowerShell's `docker logs sglang > server.log` writes UTF-16: it was "binary data, not a log"."""
    text = JOURNAL.read_text()
    (tmp_path / "bom.log").write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    (tmp_path / "plain.log").write_bytes(text.encode("utf-16-be"))
    result = subprocess.run([sys.executable, "-m", "logmine", "ingest", str(JOURNAL), str(tmp_path / "bom.log"),
                             str(tmp_path / "plain.log"), "--db", str(tmp_path / "t.duckdb")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "journal.txt: new, journal-short, 1,205 lines, 0 untyped" in result.stdout
    assert sorted(result.stderr.strip().splitlines()) == [
        f"logmine: {tmp_path}/{name}:1: UTF-16 text (as PowerShell's `>` writes it), not UTF-8: convert it first, "
        f"e.g. `iconv -f UTF-16 -t UTF-8 {tmp_path}/{name} > {tmp_path}/{name}.utf8`"
        for name in ("bom.log", "plain.log")]


def test_the_hole_a_copytruncate_rotation_leaves_is_dropped_and_said(tmp_path: Path) -> None:
    """logrotate's `copytruncate` empties the file while the server writes on at its old offset: the file begins
    with that many NUL bytes. It was refused as "UTF-16 text", and inside a large file the NULs joined the first
    line, which was then untyped."""
    from logmine import api

    text = JOURNAL.read_bytes()
    (tmp_path / "rotated.log").write_bytes(b"\x00" * (5 << 20) + text)  # more than one block of holes
    head = b"".join(text.splitlines(keepends=True)[:10])
    (tmp_path / "small.log").write_bytes(b"\x00" * 65536 + head)
    # A machine that lost power: the file's last blocks were allocated, never written.
    (tmp_path / "crashed.log").write_bytes(text + b"\x00" * 40000)
    # Rotated twice while logmine was away: a hole between two lines, inside one block of the read.
    (tmp_path / "twice.log").write_bytes(head + b"\x00" * 5000 + head)
    report = api.ingest([str(tmp_path / name) for name in ("rotated.log", "small.log", "crashed.log", "twice.log")],
                        db=tmp_path / "t.duckdb").as_dict()
    assert [(s["format"], s["lines_untyped"], s["hole_bytes"]) for s in report["sources"]] == [
        ("journal-short", 0, 5 << 20), ("journal-short", 0, 65536), ("journal-short", 0, 40000),
        ("journal-short", 0, 5000)]
    con = duckdb.connect(str(tmp_path / "t.duckdb"), read_only=True)
    first = con.execute("SELECT message FROM lines WHERE line_no = 1 ORDER BY source_id").fetchall()
    assert [m.encode() for (m,) in first] == [text.split(b"\n")[0]] * 4
    # The crashed file's NULs are its unfinished last line, read again when the file grows.
    assert con.execute("SELECT lines_ingested, size_bytes - bytes_ingested FROM sources ORDER BY source_id"
                       ).fetchall() == [(1205, 0), (10, 0), (1205, 40000), (20, 0)]


def test_a_40_mb_line_costs_no_other_input(tmp_path: Path) -> None:
    """Runs and templates are found over whole values: a 40 MB line ran DuckDB out of the appends' memory
    bound there, and the whole ingest, the other journal included, was lost."""
    from logmine import api

    huge = tmp_path / "huge.log"
    huge.write_bytes(b"[2026-03-12 10:00:00 TP0] " + b"A" * (40 << 20) + b"\n")
    report = api.ingest([str(huge), str(JOURNAL)], db=tmp_path / "t.duckdb")
    assert [s.lines_read for s in report.logs.sources] == [1, 1205] and report.logs.failed == []


def test_a_claude_session_whose_first_line_outruns_the_sniff_is_known_on_stdin_too(tmp_path: Path) -> None:
    """It was stored as a plain log of two untyped lines."""
    first = CLAUDE_LINE.replace('"hello %d"', '"' + "P" * 100_000 + '"') % (0,)
    done = subprocess.run([sys.executable, "-m", "logmine", "ingest", "-", "--db", str(tmp_path / "t.duckdb")],
                          input=(first + CLAUDE_LINE % (1, 1)).encode(), capture_output=True, timeout=120)
    assert done.returncode == 1 and b"an agent transcript (claude-code) on standard input" in done.stderr
