"""What DuckDB alone needs to store a journal's lines: the floor of any ingest that keeps the text in DuckDB.

    python bench/duckdb_floor.py FILE                 # each line's text, as logmine stores it (zstd)
    python bench/duckdb_floor.py FILE --envelope      # and the journal-short envelope split off

No logmine code runs: DuckDB reads the file with its own parallel CSV reader (one column, no quoting) and
stores it in a new database file with every core. `--envelope` also splits each `journalctl` short line
into a typed time, host, identifier, PID and message by DuckDB's string functions, which is about the
least typing an ingest can do. `lnav_compare.py` runs both beside lnav and logmine; alone, this prints
the wall and CPU seconds and the rows stored.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import duckdb


def lines_of(path: Path) -> str:
    # \x01 as the delimiter: no field splitting; strict mode off, so no line is refused
    return (f"read_csv('{path}', columns={{'line': 'VARCHAR'}}, delim='\\x01', quote='', escape='', "
            "header=false, auto_detect=false, strict_mode=false)")


TEXT = "CREATE TABLE lines (line VARCHAR USING COMPRESSION zstd); INSERT INTO lines SELECT line FROM {src}"
ENVELOPE = """
CREATE TABLE lines (ts TIMESTAMP, host VARCHAR, ident VARCHAR, pid INTEGER,
                    message VARCHAR USING COMPRESSION zstd);
INSERT INTO lines
SELECT try_strptime('2026 ' || line[1:15], '%Y %b %d %H:%M:%S'), line[17:host_end - 1],
       line[host_end + 1:pid_start - 1], TRY_CAST(line[pid_start + 1:message_start - 1] AS INTEGER),
       line[message_start + 3:]
FROM (SELECT line, 16 + strpos(line[17:], ' ') AS host_end, strpos(line, '[') AS pid_start,
             strpos(line, ']: ') AS message_start
      FROM {src})
"""


def store(path: Path, db: Path, envelope: bool) -> int:
    """Store the lines of `path` into a new database `db`; the number of rows stored."""
    con = duckdb.connect(str(db))
    try:
        con.execute((ENVELOPE if envelope else TEXT).format(src=lines_of(path)))
        return con.execute("SELECT count(*) FROM lines").fetchone()[0]
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--envelope", action="store_true", help="split the journal-short envelope into columns")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="duckdb-floor-") as scratch:
        started = time.perf_counter()
        rows = store(args.file, Path(scratch) / "floor.duckdb", args.envelope)
        seconds = time.perf_counter() - started
        size = (Path(scratch) / "floor.duckdb").stat().st_size
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"{rows} rows, {seconds:.2f} s wall, {usage.ru_utime + usage.ru_stime:.2f} s CPU, "
          f"{size / 1e6:.0f} MB, {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
