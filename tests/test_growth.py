"""A journal that grows between ingests gives the same tables as the whole file ingested at once."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from logmine.ingest import LOG_TABLES, ingest_logs

JOURNAL = Path(__file__).resolve().parents[1] / "examples" / "demo" / "journal.txt"


def tables(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
    return {t: con.execute(f'SELECT * FROM "{t}" ORDER BY ALL').fetchall() for t in LOG_TABLES}


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
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
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
