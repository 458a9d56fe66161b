"""A journal that grows between ingests gives the same tables as the whole file ingested at once."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pytest

from logmine.ingest.logs import LOG_TABLES, ingest_logs

JOURNAL = Path(__file__).resolve().parents[1] / "examples" / "demo" / "journal.txt"


def tables(con: duckdb.DuckDBPyConnection, names: Sequence[str] = LOG_TABLES) -> dict[str, list[tuple]]:
    return {t: con.execute(f'SELECT * FROM "{t}" ORDER BY ALL').fetchall() for t in names}


def line_ends(data: bytes) -> list[int]:
    """The byte offset just after each line's newline."""
    return [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]


def ingested(path: Path, con: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
    con = con or duckdb.connect()
    report = ingest_logs(con, [str(path)])
    assert not report.failed, report.failed
    return con


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[tuple]]]:
    path = tmp_path_factory.mktemp("grow") / "journal.txt"
    path.write_bytes(JOURNAL.read_bytes())
    return path, tables(ingested(path))


def cut_points() -> list[int]:
    """Byte offsets to cut at: after every line of the tracebacks (and the lines around them), halfway
    through a few of those lines, and a spread over the rest of the file."""
    data = JOURNAL.read_bytes()
    ends = line_ends(data)
    in_traceback = [n for n, line in enumerate(data.split(b"\n"), start=1)
                    if b"Traceback" in line or line.split(b": ", 1)[-1].startswith((b"  ", b"ValueError"))]
    first, last = min(in_traceback), max(in_traceback)
    cuts = {ends[n - 1] for n in range(first - 1, last + 2)}
    cuts |= {ends[n - 1] - 20 for n in range(first, last + 1, 10)}  # inside a line: an unterminated last line
    cuts |= {ends[n] for n in range(0, len(ends) - 1, 300)}
    return sorted(cuts)


@pytest.mark.parametrize("cut", cut_points())
def test_growth_at_any_point_gives_the_whole_file_tables(whole: tuple[Path, dict], cut: int) -> None:
    path, expected = whole
    data = JOURNAL.read_bytes()
    path.write_bytes(data[:cut])
    con = ingested(path)
    path.write_bytes(data)
    assert tables(ingested(path, con)) == expected


# Each ingest costs about 40 ms whatever it reads (DuckDB statements and appends, a block's vector passes),
# so growing the 1205-line example one line at a time costs 50 s: these stretches are read line by line
# (the start-up, the end of the lines the format is told from, the shutdown with both tracebacks and the
# restart), the rest at the cut points above. LOGMINE_GROWTH_EVERY_LINE=1 grows it at every line.
STRETCHES = [(0, 1205)] if os.environ.get("LOGMINE_GROWTH_EVERY_LINE") else [(0, 45), (192, 206), (900, 1008)]


@pytest.mark.parametrize("first, last", STRETCHES)
def test_growth_line_by_line_gives_the_whole_file_tables(whole: tuple[Path, dict], tmp_path: Path, first: int,
                                                          last: int) -> None:
    """One database, the journal ingested again after each line written, as a cron job on a live
    journal would; then the rest of the file at once."""
    _, expected = whole
    data = JOURNAL.read_bytes()
    ends = [0, *line_ends(data)]
    path = tmp_path / "journal.txt"
    con = duckdb.connect()
    for line in range(first, last + 1):
        path.write_bytes(data[:ends[line]])
        ingested(path, con)
    path.write_bytes(data)
    assert tables(ingested(path, con)) == expected


def test_a_journal_that_grows_across_new_year_keeps_counting_the_year(tmp_path: Path) -> None:
    """journal-short has no year: a January line after a December one is in the next year, also when the
    December line was the last one of the previous ingest."""
    path = tmp_path / "journal.txt"
    december = b"Dec 31 23:59:58 h python3[7]: [2025-12-31 23:59:58] Load weight begin. avail mem=78.64 GB\n"
    january = b"Jan 01 00:00:02 h python3[7]: [2026-01-01 00:00:02] Load weight end. avail mem=20.00 GB\n"
    path.write_bytes(december * 201)  # past the lines the format is told from: the ingest resumes
    con = ingested(path)
    path.write_bytes(december * 201 + january)
    ingested(path, con)
    assert con.execute("SELECT strftime(max(ts), '%Y-%m-%d') FROM lines").fetchone()[0] == "2026-01-01"


DERIVED = ("runs", "configs", "config_diffs", "failure_signs")
PLAIN_LAUNCHES = [Path(__file__).parent / "data" / "why" / name
                  for name in ("oom_low_mem_fraction.log", "cuda_graph_crash.log", "hang_killed.log")]


def derived(db: Path) -> dict[str, list[tuple]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return tables(con, DERIVED)


def even_cuts(data: bytes, parts: int) -> list[int]:
    """Line ends that cut `data` into `parts` runs of about as many lines."""
    ends = line_ends(data)
    return [ends[len(ends) * k // parts] for k in range(1, parts)]


@pytest.mark.parametrize("shape", ["journal", "plain launches"])
def test_an_ingest_of_a_grown_file_derives_the_runs_of_the_whole_file(tmp_path: Path, shape: str) -> None:
    """The grown file's runs are derived again only from its open run on (`derive.rebuild`), and come out
    as an ingest of the whole file derives them all: under systemd, and in a plain file of three launches
    (which is segmented whole)."""
    from logmine import api

    data = JOURNAL.read_bytes() if shape == "journal" else b"".join(p.read_bytes() for p in PLAIN_LAUNCHES)
    path = tmp_path / "server.log"
    path.write_bytes(data)
    api.ingest([str(path)], db=tmp_path / "whole.duckdb")
    expected = derived(tmp_path / "whole.duckdb")
    assert len(expected["runs"]) >= 3
    for n, cut in enumerate(even_cuts(data, 6)):
        db = tmp_path / f"grown{n}.duckdb"
        path.write_bytes(data[:cut])
        api.ingest([str(path)], db=db)
        path.write_bytes(data)
        assert api.ingest([str(path)], db=db).logs.sources[0].status == "grown"
        assert derived(db) == expected, f"cut at byte {cut}"


def test_a_database_derived_by_other_code_is_derived_again_whole(tmp_path: Path) -> None:
    """Closed runs are kept as derived while the code that derived them is this one; a database derived by
    another logmine (its `derived_by` digest differs) has every run derived again at its next ingest."""
    from logmine import api

    data = JOURNAL.read_bytes()
    path, db = tmp_path / "journal.txt", tmp_path / "t.duckdb"
    after_restart, later = even_cuts(data, 12)[9:11]  # the unit restarts at line ~905 of 1205
    stale = "as an older logmine said"

    def first_run_detail() -> list[tuple]:
        with duckdb.connect(str(db), read_only=True) as con:
            return con.execute("SELECT end_detail FROM runs WHERE ordinal = 1").fetchall()

    path.write_bytes(data[:after_restart])
    api.ingest([str(path)], db=db)
    with duckdb.connect(str(db)) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchall()[0][0] >= 2  # the first run is closed
        con.execute("UPDATE runs SET end_detail = ? WHERE ordinal = 1", [stale])
    path.write_bytes(data[:later])
    api.ingest([str(path)], db=db)
    assert first_run_detail() == [(stale,)]
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE settings SET value = 'another logmine' WHERE name = 'derived_by'")
    path.write_bytes(data)
    api.ingest([str(path)], db=db)
    assert first_run_detail() != [(stale,)]
    api.ingest([str(path)], db=tmp_path / "whole.duckdb")
    assert derived(db) == derived(tmp_path / "whole.duckdb")
