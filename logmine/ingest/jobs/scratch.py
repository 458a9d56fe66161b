"""The scratch databases of the pool processes: each parses into its own file, which the main process copies
into the ingest's transaction."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ...store import connect, execute

if TYPE_CHECKING:
    import duckdb

# A pool process's scratch database keeps this much in memory and spills beyond.
SCRATCH_MEMORY = "96MB"


@contextlib.contextmanager
def scratch_database(db: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """A pool process's own database, written in one transaction (as the serial ingest writes), on one
    thread (the N processes are the parallelism)."""
    con = connect(db)
    try:
        execute(con, "SET threads = 1")
        execute(con, f"SET memory_limit = '{SCRATCH_MEMORY}'")
        execute(con, "BEGIN TRANSACTION")
        yield con
        execute(con, "COMMIT")
    finally:
        con.close()


def copy_scratch(con: duckdb.DuckDBPyConnection, db: str, tables: list[str], source_id: int) -> None:
    """Copy the tables of a scratch database into `con`, its rows renumbered as source `source_id`."""
    execute(con, f"ATTACH '{db}' AS scratch (READ_ONLY)")
    try:
        for table in tables:
            execute(con, f'INSERT INTO "{table}" SELECT * REPLACE ({source_id} AS source_id) FROM scratch."{table}"')
    finally:
        execute(con, "DETACH scratch")
