"""A log truncated by a restart (`> server.log`, what a unit's `StandardOutput=file:` does) or rewritten since
its last ingest: the database may hold the only copy of what it said, so its rows and runs are kept as an
earlier generation and the new content is a source beside them; `--replace` drops them as before."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb

from tests.conftest import REPO

DEMO = (REPO / "examples" / "demo" / "journal.txt").read_text().splitlines(keepends=True)
FIRST, SECOND = DEMO[:901], DEMO[901:]  # the log before and after a restart that truncated it


def ingest(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logmine", "ingest", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def stored(db: Path) -> tuple[list[tuple], list[tuple]]:
    """(display, lines) per source, and (display, run, started_at) per run."""
    with duckdb.connect(str(db), read_only=True) as con:
        sources = con.execute("SELECT display, count(*) FROM lines JOIN sources USING (source_id) GROUP BY ALL "
                              "ORDER BY display").fetchall()
        runs = con.execute("SELECT display, ordinal, CAST(started_at AS VARCHAR) FROM runs JOIN sources "
                           "USING (source_id) ORDER BY display, ordinal").fetchall()
    return sources, runs


def test_a_truncated_log_keeps_its_history(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("".join(FIRST))
    (tmp_path / "other.log").write_text("".join(DEMO[:50]))
    assert ingest("server.log", "--db", "x.duckdb", cwd=tmp_path).returncode == 0
    before = stored(tmp_path / "x.duckdb")
    assert before[0] == [("server.log", 901)]
    log.write_text("")  # the restart truncates it, then the server writes anew
    log.write_text("".join(SECOND))
    done = ingest("server.log", "other.log", "--db", "x.duckdb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        f"server.log: generation, journal-short, {len(SECOND)} lines, 0 untyped\n"
        "  truncated or rewritten: a new generation; the earlier 901 lines and their runs kept as server.log@1 "
        "(source 1)\n")
    sources, runs = stored(tmp_path / "x.duckdb")
    assert sources == [("other.log", 50), ("server.log", len(SECOND)), ("server.log@1", 901)]
    earlier = [(run, started) for display, run, started in runs if display == "server.log@1"]
    assert earlier == [(run, started) for _, run, started in before[1]]  # its runs as they were
    (tmp_path / "fresh").mkdir()
    (tmp_path / "fresh" / "server.log").write_text("".join(SECOND))
    assert ingest("server.log", "--db", "fresh.duckdb", cwd=tmp_path / "fresh").returncode == 0
    assert [r for r in runs if r[0] == "server.log"] == stored(tmp_path / "fresh" / "fresh.duckdb")[1]  # as if new
    # Truncated again: the second generation is numbered on.
    log.write_text("".join(DEMO[100:130]))
    done = ingest("server.log", "--db", "x.duckdb", cwd=tmp_path)
    assert "kept as server.log@2 (source 2)" in done.stdout
    assert [s for s, _ in stored(tmp_path / "x.duckdb")[0]] == ["other.log", "server.log", "server.log@1",
                                                                 "server.log@2"]


def test_replace_asks_for_the_rows_to_be_replaced(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("".join(FIRST))
    assert ingest("server.log", "--db", "x.duckdb", cwd=tmp_path).returncode == 0
    log.write_text("".join(SECOND))
    done = ingest("server.log", "--db", "x.duckdb", "--replace", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith(f"server.log: replaced, journal-short, {len(SECOND)} lines")
    assert stored(tmp_path / "x.duckdb")[0] == [("server.log", len(SECOND))]


def test_a_new_generation_that_cannot_be_read_leaves_the_earlier_as_it_was(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("".join(FIRST))
    assert ingest("server.log", "--db", "x.duckdb", cwd=tmp_path).returncode == 0
    before = stored(tmp_path / "x.duckdb")
    log.write_bytes(b"\x00\x01\x02" * 5000)  # rewritten as binary data
    done = ingest("server.log", "--db", "x.duckdb", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == "logmine: server.log:1: binary data, not a log (use --format plain to force)\n"
    assert stored(tmp_path / "x.duckdb") == before
    with duckdb.connect(str(tmp_path / "x.duckdb"), read_only=True) as con:
        assert con.execute("SELECT path FROM sources").fetchall() == [(str(log),)]


def test_a_follow_batch_that_finds_its_log_truncated_derives_the_new_generations_runs(tmp_path: Path) -> None:
    """A follow derives only the open runs after its first commit (`open_runs_only`); the new generation is
    a source read from its start, and its runs are derived whole, as an ingest of it alone gives them."""
    from logmine import api

    log = tmp_path / "server.log"
    log.write_text("".join(FIRST))
    api.ingest([str(log)], db=tmp_path / "x.duckdb")
    log.write_text("".join(SECOND))
    report = api.ingest([str(log)], db=tmp_path / "x.duckdb", open_runs_only=True)
    assert [s.status for s in report.logs.sources] == ["generation"]
    (tmp_path / "alone").mkdir()
    (tmp_path / "alone" / "server.log").write_text("".join(SECOND))
    api.ingest([str(tmp_path / "alone" / "server.log")], db=tmp_path / "alone.duckdb")
    runs_of_new = [r[1:] for r in stored(tmp_path / "x.duckdb")[1] if r[0] == str(log)]
    assert runs_of_new and runs_of_new == [r[1:] for r in stored(tmp_path / "alone.duckdb")[1]]
