"""Per-input limits (parsers/limits.py): each oversized input costs only itself, with one line, and the other
inputs of the same command are stored whole. The limits are made small through their environment variables,
so that the files stay small."""

from __future__ import annotations

import gzip
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest
import zstandard
from logmine.parsers import bounded_json
from logmine.parsers.limits import CUT_MARK

from logmine.inputs.sources import cut_long_lines
from tests.conftest import REPO

DEMO = (REPO / "examples" / "demo" / "journal.txt").read_text().splitlines(keepends=True)
STAMP = "Mar 12 10:40:00 gpu-box python[25133]: "
SESSION_START = 1773309000000


def ingest(*args: str, cwd: Path, **limits: int) -> subprocess.CompletedProcess:
    env = os.environ | {name: str(value) for name, value in limits.items()}
    return subprocess.run([sys.executable, "-m", "logmine", "ingest", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


def rows(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


@pytest.fixture
def good(tmp_path: Path) -> Path:
    """The journal beside every bad input: it must be stored whole."""
    (tmp_path / "good.log").write_text("".join(DEMO[:60]))
    return tmp_path


def good_is_whole(db: Path) -> None:
    assert rows(db, "SELECT count(*) FROM lines JOIN sources USING (source_id) WHERE display = 'good.log'") == [(60,)]


def test_a_line_over_the_limit_is_stored_cut_and_said(good: Path) -> None:
    long_line = STAMP + "x" * 50_000 + "\n"
    (good / "long.log").write_text("".join(DEMO[:5]) + long_line + "".join(DEMO[5:20]) + "y" * 30_000)  # no \n
    done = ingest("good.log", "long.log", "--db", "x.duckdb", cwd=good, LOGMINE_MAX_LINE_BYTES=20_000)
    assert done.returncode == 0, done.stderr
    assert ("long.log: new, journal-short, 22 lines, 2 untyped\n  2 lines longer than 20,000 bytes stored cut to it "
            "(they end in `…[logmine: line cut, N bytes]`)\n") in done.stdout
    stored = rows(good / "x.duckdb", "SELECT line_no, message FROM lines JOIN sources USING (source_id) "
                                     "WHERE display = 'long.log' ORDER BY line_no")
    assert [n for n, _ in stored] == list(range(1, 23))  # every line, numbered as in the file
    assert stored[5][1].startswith("x" * 19_900) and stored[5][1].endswith(CUT_MARK.format(size=50_039))
    assert stored[21][1].startswith("y" * 19_900) and stored[21][1].endswith(CUT_MARK.format(size=30_000))
    assert all(len(message.encode()) <= 20_000 for _, message in stored)
    good_is_whole(good / "x.duckdb")


def test_a_cut_keeps_utf8_characters_whole_and_counts_bytes_never_held() -> None:
    data = ("é" * 600).encode() + b"\nshort\n" + b"z" * 10
    cut, count = cut_long_lines(data, 100, first_dropped=0)
    first, second, third = cut.split(b"\n")
    assert count == 1 and first.decode().endswith(CUT_MARK.format(size=1200)) and len(first) <= 100
    assert (second, third) == (b"short", b"z" * 10)
    cut, count = cut_long_lines(b"a" * 101, 100, first_dropped=10_000)  # the rest of the line was read past
    assert count == 1 and cut.decode().endswith(CUT_MARK.format(size=10_101))


def claude(*contents: object) -> str:
    return "".join(json.dumps({"type": "user", "sessionId": "s1", "uuid": f"u{i}",
                               "timestamp": f"2026-03-12T09:30:0{i}Z", "message": {"role": "user", "content": c}})
                   + "\n" for i, c in enumerate(contents))


def test_json_deeper_than_the_limit_costs_its_record(good: Path) -> None:
    """1,000 levels: a RecursionError traceback, nothing stored, before the limit."""
    text = claude("before", [{"type": "text", "text": "x"}], "after").replace('"x"', '"x", "nested": ' + "[" * 1000
                                                                             + "]" * 1000)
    (good / "deep.jsonl").write_text(text)
    done = ingest("good.log", "deep.jsonl", "--db", "x.duckdb", cwd=good)
    assert done.returncode == 0, done.stderr
    assert ("  skipped malformed input: deep.jsonl:2: malformed JSON line: nested 1,004 levels deep, over the limit "
            "of 256 (LOGMINE_MAX_JSON_DEPTH)") in done.stdout
    assert rows(good / "x.duckdb", "SELECT text FROM messages ORDER BY idx") == [("before",), ("after",)]
    good_is_whole(good / "x.duckdb")


def test_depth_counts_brackets_outside_strings_only() -> None:
    assert bounded_json.depth('{"a": [[1, "[[[[["], {"b": "}}}"}]]}') == 3
    assert bounded_json.loads('{"a": "' + "[" * 10_000 + '"}') == {"a": "[" * 10_000}
    with pytest.raises(bounded_json.TooDeep):
        bounded_json.loads("[" * 300 + "]" * 300)


@pytest.mark.parametrize("kind", ["zst", "gz"])
def test_a_decompression_bomb_is_refused(good: Path, kind: str) -> None:
    data = (STAMP + "[2026-03-12 10:40:00 TP0] Decode batch. #running-req: 1, #token: 1\n").encode() * 20_000
    packed = zstandard.ZstdCompressor(level=19).compress(data) if kind == "zst" else gzip.compress(data, 9)
    (good / f"bomb.log.{kind}").write_bytes(packed)
    done = ingest("good.log", f"bomb.log.{kind}", "--db", "x.duckdb", cwd=good, LOGMINE_MAX_EXPANSION=20,
                  LOGMINE_EXPANSION_FLOOR_BYTES=100_000)
    assert done.returncode == 1
    line, = done.stderr.splitlines()
    assert line.startswith(f"logmine: bomb.log.{kind}: expands more than 20 times its size (")
    assert line.endswith("): refused as a decompression bomb (LOGMINE_MAX_EXPANSION)")
    assert rows(good / "x.duckdb", "SELECT display FROM sources") == [("good.log",)]
    good_is_whole(good / "x.duckdb")
    # Below the bound, the same file is read whole.
    done = ingest(f"bomb.log.{kind}", "--db", "y.duckdb", cwd=good)
    assert done.returncode == 0 and "20,000 lines" in done.stdout


def opencode_db(path: Path, part_data: str, parts: int = 3, orphans: int = 0) -> None:
    """A v1 opencode database of one session and one message, whose parts' `data` is the SQL `part_data` (a
    generated column, as a crafted file has it)."""
    con = sqlite3.connect(path)
    con.executescript(f"""
        CREATE TABLE session (id TEXT PRIMARY KEY, title TEXT, directory TEXT, version TEXT, time_created INTEGER,
                              time_updated INTEGER);
        CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, data TEXT);
        CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, seed TEXT,
                           data TEXT GENERATED ALWAYS AS ({part_data}) VIRTUAL);""")
    con.execute("INSERT INTO session VALUES ('ses_1', 't', '/w', '1.2.0', ?, ?)", (SESSION_START, SESSION_START))
    con.execute("INSERT INTO message VALUES ('msg_1', 'ses_1', ?, ?)",
                (SESSION_START, json.dumps({"role": "user", "time": {"created": SESSION_START}})))
    con.executemany("INSERT INTO part (id, message_id, session_id, seed) VALUES (?, 'msg_1', 'ses_1', 'hi')",
                    [(f"prt_{i}",) for i in range(parts)])
    con.executemany("INSERT INTO part (id, message_id, session_id, seed) VALUES (?, ?, ?, 'lost')",
                    [(f"prt_o{i}", f"msg_gone{i % 3}", "ses_1" if i % 2 else "ses_gone") for i in range(orphans)])
    con.commit()
    con.close()


INFLATED = """'{"type": "text", "text": "' || replace(hex(zeroblob(2500000)), '00', 'xy') || '"}'"""


def test_a_transcript_row_over_the_limit_costs_its_input(good: Path) -> None:
    """Parts that a generated column inflates to 10 MB each (900 MB in the hostile round's file)."""
    opencode_db(good / "opencode.db", INFLATED)
    assert (good / "opencode.db").stat().st_size < 100_000
    done = ingest("good.log", "opencode.db", "--db", "x.duckdb", cwd=good, LOGMINE_MAX_RECORD_BYTES=1_000_000)
    assert done.returncode == 1
    assert done.stderr == ("logmine: opencode.db: a row larger than 1,000,000 bytes (string or blob too big): "
                           "refused (LOGMINE_MAX_RECORD_BYTES)\n")
    assert rows(good / "x.duckdb", "SELECT count(*) FROM sessions") == [(0,)]
    good_is_whole(good / "x.duckdb")


def test_a_sessions_parts_are_held_within_a_bound(good: Path) -> None:
    opencode_db(good / "opencode.db", INFLATED, parts=4)
    done = ingest("good.log", "opencode.db", "--db", "x.duckdb", cwd=good, LOGMINE_MAX_HELD_BYTES=12_000_000)
    assert done.returncode == 1
    assert done.stderr == ("logmine: opencode.db: session ses_1's parts take over 12,000,000 bytes: refused "
                           "(LOGMINE_MAX_HELD_BYTES)\n")
    good_is_whole(good / "x.duckdb")


def test_orphan_parts_are_counted_and_said(good: Path) -> None:
    opencode_db(good / "opencode.db", """'{"type": "text", "text": "' || seed || '"}'""", parts=1, orphans=1000)
    done = ingest("opencode.db", "--db", "x.duckdb", cwd=good)
    assert done.returncode == 0, done.stderr
    assert ("  skipped malformed input: opencode.db: 1,000 parts belong to no message in the database (orphans): "
            "not stored") in done.stdout
    assert rows(good / "x.duckdb", "SELECT text FROM parts") == [("hi",)]


def test_a_jsonl_line_over_the_record_limit_costs_its_line(good: Path) -> None:
    (good / "big.jsonl").write_text(claude("hello", "x" * 50_000, "after"))
    done = ingest("good.log", "big.jsonl", "--db", "x.duckdb", cwd=good, LOGMINE_MAX_RECORD_BYTES=10_000)
    assert done.returncode == 0, done.stderr
    assert ("  skipped malformed input: big.jsonl:2: a line of over 10,000 characters: not read "
            "(LOGMINE_MAX_RECORD_BYTES)") in done.stdout
    assert rows(good / "x.duckdb", "SELECT text FROM messages ORDER BY idx") == [("hello",), ("after",)]
    good_is_whole(good / "x.duckdb")


def interrupted_within(process: subprocess.Popen, seconds: float) -> tuple[int, str]:
    """Ctrl-C, then wait at most `seconds` for the process: its exit code and stderr."""
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=seconds)
    return process.returncode, err


def test_ctrl_c_while_stdin_waits(tmp_path: Path) -> None:
    ingest_stdin = subprocess.Popen([sys.executable, "-m", "logmine", "ingest", "-", "--db", "x.duckdb"], cwd=tmp_path,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ingest_stdin.stdin.write("".join(DEMO[:10]))
    ingest_stdin.stdin.flush()  # some lines, then a writer that says nothing more
    time.sleep(3)  # started and waiting
    code, err = interrupted_within(ingest_stdin, 5)
    assert (code, err) == (130, "logmine: interrupted: nothing was stored, the database is as it was\n")
    assert not (tmp_path / "x.duckdb").exists()


def test_ctrl_c_inside_a_line_without_end(tmp_path: Path) -> None:
    """A writer that sends one line for ever: the ingest reads it past its cut and answers Ctrl-C."""
    ingest_stdin = subprocess.Popen([sys.executable, "-m", "logmine", "ingest", "-", "--db", "x.duckdb"], cwd=tmp_path,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=os.environ | {"LOGMINE_MAX_LINE_BYTES": "100000"})
    stop = threading.Event()

    def write() -> None:
        ingest_stdin.stdin.write(STAMP.encode())
        while not stop.is_set():
            try:
                ingest_stdin.stdin.write(b"x" * (1 << 16))
            except (BrokenPipeError, ValueError):
                return

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    time.sleep(3)
    ingest_stdin.send_signal(signal.SIGINT)
    try:
        ingest_stdin.wait(timeout=5)
    finally:
        stop.set()
    err = ingest_stdin.stderr.read().decode()
    assert (ingest_stdin.returncode, err) == (130, "logmine: interrupted: nothing was stored, the database is as "
                                                   "it was\n")
