"""DuckDB storage: create tables from column specs, append column batches, track ingested sources.

The store knows table names and column types, never log formats: parsers hand it Arrow tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import duckdb
import pyarrow as pa

DEFAULT_DB = "logmine.duckdb"

SOURCES_COLUMNS: dict[str, str] = {
    "source_id": "INTEGER PRIMARY KEY", "path": "VARCHAR", "display": "VARCHAR", "kind": "VARCHAR",
    "envelope": "VARCHAR", "compression": "VARCHAR", "size_bytes": "BIGINT", "bytes_ingested": "BIGINT",
    "lines_ingested": "BIGINT", "partial_last_line": "BOOLEAN", "head_hash": "VARCHAR",
    "tail_hash": "VARCHAR", "content_hash": "VARCHAR", "year": "INTEGER", "utc_offset_s": "INTEGER",
    "fallback_date": "VARCHAR", "ingested_at": "TIMESTAMP",
}


def connect(db: str | Path = DEFAULT_DB, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) a logmine database."""
    if read_only and str(db) != ":memory:" and not Path(db).exists():
        raise FileNotFoundError(f"{db}: no such database (run `logmine ingest` first)")
    return duckdb.connect(str(db), read_only=read_only)


def run(con: duckdb.DuckDBPyConnection, statement: str, params: list | dict | None = None) -> list[tuple]:
    """Execute a statement and drain its result (DuckDB refuses new work while a result is pending)."""
    return con.execute(statement, params or []).fetchall()


def create_table(con: duckdb.DuckDBPyConnection, name: str, columns: Mapping[str, str]) -> None:
    body = ", ".join(f'"{col}" {typ}' for col, typ in columns.items())
    run(con, f'CREATE TABLE IF NOT EXISTS "{name}" ({body})')


def ensure_tables(con: duckdb.DuckDBPyConnection, tables: Mapping[str, Mapping[str, str]]) -> None:
    create_table(con, "sources", SOURCES_COLUMNS)
    for name, columns in tables.items():
        create_table(con, name, columns)


INTEGER_TYPES = ("INTEGER", "BIGINT", "SMALLINT")


def arrow_schema(columns: Mapping[str, str], native: Iterable[str]) -> pa.Schema:
    """Arrow types for a batch: `native` columns arrive as Python ints/bools, the rest as text."""
    native = set(native)
    fields = []
    for name, duck_type in columns.items():
        if duck_type.startswith("MAP"):
            arrow_type = pa.map_(pa.string(), pa.string())
        elif name in native and duck_type.startswith(INTEGER_TYPES):
            arrow_type = pa.int64()
        elif name in native and duck_type == "BOOLEAN":
            arrow_type = pa.bool_()
        else:
            arrow_type = pa.string()
        fields.append(pa.field(name, arrow_type))
    return pa.schema(fields)


def conform(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """`data` with exactly the columns of `schema`: missing ones are null, others cast to its types."""
    columns = []
    for f in schema:
        if f.name in data.column_names:
            column = data.column(f.name)
            columns.append(column if column.type == f.type else column.cast(f.type))
        else:
            columns.append(pa.nulls(data.num_rows, f.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _cast(name: str, duck_type: str, source: str = "b") -> str:
    return f'TRY_CAST({source}."{name}" AS {duck_type.split(" PRIMARY")[0]})'


def append(con: duckdb.DuckDBPyConnection, table: str, data: pa.Table, columns: Mapping[str, str],
           native: Iterable[str], inherit: Iterable[str] = ()) -> None:
    """Append rows; text values are cast to the column types by DuckDB in bulk.

    Columns named in `inherit` that a row leaves empty are taken from the row of the registered
    `_logmine_lines` batch with the same `line_no` (an event's time, pid and ranks are its line's).
    """
    inherit = set(inherit) - {"line_no", "source_id"}
    exprs = []
    for name, duck_type in columns.items():
        if name in inherit:
            exprs.append(f'coalesce({_cast(name, duck_type)}, {_cast(name, duck_type, "l")}) AS "{name}"')
        else:
            exprs.append(f'{_cast(name, duck_type)} AS "{name}"')
    source = "_logmine_batch AS b"
    if inherit:
        source += " LEFT JOIN _logmine_lines AS l ON l.line_no = b.line_no"
    con.register("_logmine_batch", conform(data, arrow_schema(columns, native)))
    try:
        run(con, f'INSERT INTO "{table}" BY NAME SELECT {", ".join(exprs)} FROM {source}')
    finally:
        con.unregister("_logmine_batch")


def register_lines(con: duckdb.DuckDBPyConnection, lines: pa.Table, columns: Mapping[str, str],
                   native: Iterable[str]) -> None:
    """Make a batch of line rows visible as `_logmine_lines`, for `append(..., inherit=...)`."""
    con.register("_logmine_lines", conform(lines, arrow_schema(columns, native)))


def insert_lines(con: duckdb.DuckDBPyConnection, table: str, columns: Mapping[str, str]) -> None:
    exprs = ", ".join(f'{_cast(name, duck_type)} AS "{name}"' for name, duck_type in columns.items())
    run(con, f'INSERT INTO "{table}" BY NAME SELECT {exprs} FROM _logmine_lines AS b')


def delete_rows(con: duckdb.DuckDBPyConnection, tables: Iterable[str], source_id: int,
                from_line: int = 0) -> None:
    """Remove a source's rows from line `from_line` on (a re-read partial line, or a replaced file)."""
    for table in tables:
        run(con, f'DELETE FROM "{table}" WHERE source_id = ? AND line_no >= ?', [source_id, from_line])


def next_source_id(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute("SELECT coalesce(max(source_id), 0) + 1 FROM sources").fetchall()[0][0]


def find_source(con: duckdb.DuckDBPyConnection, path: str) -> dict | None:
    cur = con.execute("SELECT * FROM sources WHERE path = ? ORDER BY source_id DESC LIMIT 1", [path])
    rows = cur.fetchall()
    if not rows:
        return None
    return dict(zip([d[0] for d in cur.description], rows[0], strict=True))


def upsert_source(con: duckdb.DuckDBPyConnection, record: Mapping[str, object]) -> None:
    run(con, "DELETE FROM sources WHERE source_id = ?", [record["source_id"]])
    names = list(record)
    placeholders = ", ".join("?" for _ in names)
    cols = ", ".join(f'"{n}"' for n in names)
    run(con, f"INSERT INTO sources ({cols}) VALUES ({placeholders})", [record[n] for n in names])
