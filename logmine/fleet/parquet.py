"""Partitioned open storage: every table of a database as Parquet in a hive layout, and such a folder
opened as a database again.

Layout of `OUT/`: one folder per table. A row that comes from a log line is filed under the host and
day of that line, `OUT/decode_batches/host=node-07/day=2026-03-12/*.parquet` (the `lines` table by its
own `host` and `ts`, the event tables by the line they were parsed from, `runs` by its first line; a
line without a host, such as a journal's header, lends its row the host most lines of its source name).
A table with a time but no log line (sessions, messages, tool calls, agent commands) is filed by
`day=` of its first time column only. The rest (configs, config diffs, templates, settings, facts,
claims, ...) is small and has one folder of plain files. A missing host or day is written as
`__HIVE_DEFAULT_PARTITION__`, which DuckDB, Spark and Trino all read back as NULL.

`OUT/_logmine.json` keeps each table's columns with their DuckDB types and, for other tools, the SQL of
the database's views and macros. A folder is data, never code: `open_folder` reads the manifest's table
and column names only as names (`[a-z0-9_]`), its types only as types (parsed by DuckDB as a type, never
pasted into SQL as written), never runs its SQL, and makes the views and macros (the `<table>_by_run`
views, `untyped_key`, `chosen`) from logmine's own `queries/views/`, as after an ingest, so the named
queries run on it unchanged; the connection it gives reads no file outside the folder. A partition
column that is not a column of the table (`host` of an event table, `day`) is not part of what
`open_folder` shows.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

MANIFEST = "_logmine.json"
LAYOUT_VERSION = 1
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
LINE_COLUMNS = ("line_no", "first_line_no")  # the log line a row was parsed from, in this order of preference


def layout(columns: dict[str, str]) -> tuple[str | None, str | None]:
    """(how the row's host is found, its time column) for a table of these columns: host is `own` (the
    table's `host`, for `lines`), `line:COLUMN` (the host of that log line) or None."""
    time = next((c for c, t in columns.items() if t == "TIMESTAMP"), None)
    line = next((c for c in LINE_COLUMNS if c in columns), None)
    if "line_no" in columns and "host" in columns:
        return "own", time
    if line and "source_id" in columns:
        return f"line:{line}", time
    return None, time


def table_columns(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, str]]:
    """Every base table of the database with its columns and their DuckDB types, in order."""
    from ..store import execute

    found = execute(con, """
        SELECT table_name, list(column_name ORDER BY column_index), list(data_type ORDER BY column_index)
        FROM duckdb_columns() WHERE NOT internal AND schema_name = current_schema()
          AND table_name IN (SELECT table_name FROM duckdb_tables() WHERE schema_name = current_schema())
        GROUP BY table_name ORDER BY table_name""")
    return {name: dict(zip(cols, types, strict=True)) for name, cols, types in found}


def view_statements(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The SQL that makes the database's macros (`untyped_key`) and views again, macros first."""
    from ..store import execute

    macros = execute(con, "SELECT function_name, parameters, function_type, macro_definition FROM duckdb_functions() "
                          "WHERE NOT internal AND function_type IN ('macro', 'table_macro') "
                          "AND schema_name = current_schema() ORDER BY function_oid")
    views = execute(con, "SELECT sql FROM duckdb_views() WHERE NOT internal AND schema_name = current_schema() "
                         "ORDER BY view_oid")
    return ([f"CREATE MACRO {name}({', '.join(params)}) AS {'TABLE ' if kind == 'table_macro' else ''}{body}"
             for name, params, kind, body in macros]
            + [sql for (sql,) in views])


def export(con: duckdb.DuckDBPyConnection, out: str | Path, file_prefix: str = "data",
           append: bool = False) -> dict[str, int]:
    """Write every table of `con` under `out` (see the module's docstring); returns rows per table.

    Without `append`, each table's folder is replaced. With it, files named `file_prefix...` are added
    beside what is there (how several Spark tasks write one layout); the manifest is then written by
    the caller, once.
    """
    from ..store import execute

    out = Path(out)
    if not append and out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).exists():
        # Its table folders are replaced: never in a folder that logmine did not write.
        raise FileExistsError(f"{out}: not empty and not a logmine Parquet folder; give a new or empty one")
    out.mkdir(parents=True, exist_ok=True)
    tables = table_columns(con)
    hosts = source_hosts(con) if "lines" in tables else []
    written: dict[str, int] = {}
    for name, columns in tables.items():
        target = out / name
        if not append and target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True, exist_ok=True)
        select, partition = partition_select(name, columns, hosts)
        (rows,) = execute(con, f"SELECT count(*) FROM ({select})")[0]
        written[name] = rows
        if rows == 0:
            if not append:  # an empty table still has its schema, for every reader
                execute(con, f"COPY ({select}) TO '{target / 'empty.parquet'}' (FORMAT parquet)")
            continue
        options = "FORMAT parquet, COMPRESSION zstd"
        if partition:
            options += f", PARTITION_BY ({', '.join(partition)}), OVERWRITE_OR_IGNORE true"
            options += f", FILENAME_PATTERN '{file_prefix}_{{i}}'"
            execute(con, f"COPY ({select}) TO '{target}' ({options})")
        else:
            execute(con, f"COPY ({select}) TO '{target / (file_prefix + '.parquet')}' ({options})")
    if not append:
        write_manifest(out, tables, view_statements(con))
    return written


def source_hosts(con: duckdb.DuckDBPyConnection) -> list[tuple[int, str]]:
    """(source_id, the host most of its lines name): where a row goes whose own line names none."""
    from ..store import execute

    return execute(con, "SELECT source_id, mode(host) FROM lines WHERE host IS NOT NULL GROUP BY ALL ORDER BY 1")


def partition_select(name: str, columns: dict[str, str], hosts: list[tuple[int, str]]) -> tuple[str, list[str]]:
    """The SELECT that adds a table's partition columns, and their names."""
    host, time = layout(columns)
    partition, extra = [], []
    source = f'"{name}" AS t'
    if host == "own":
        partition.append("host")
    elif host:
        line = host.split(":", 1)[1]
        source += f" LEFT JOIN lines AS l ON l.source_id = t.source_id AND l.line_no = t.{line}"
        if hosts:
            values = ", ".join(f"({sid}, '{h.replace(chr(39), chr(39) * 2)}')" for sid, h in hosts)
            source += f" LEFT JOIN (VALUES {values}) AS s(source_id, host) ON s.source_id = t.source_id"
            extra.append("coalesce(l.host, s.host) AS host")
        else:
            extra.append("l.host AS host")
        partition.append("host")
    if time:
        extra.append(f"strftime(t.\"{time}\", '%Y-%m-%d') AS day")
        partition.append("day")
    return f"SELECT {', '.join(['t.*', *extra])} FROM {source}", partition


def write_manifest(out: Path, tables: dict[str, dict[str, str]], views: list[str]) -> None:
    manifest = {"logmine_layout": LAYOUT_VERSION, "tables": tables, "definitions": views}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))


def read_manifest(folder: str | Path) -> dict:
    path = Path(folder) / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"{folder}: no {MANIFEST} in it (write one with `logmine export --parquet`)")
    manifest = json.loads(path.read_text())
    if manifest.get("logmine_layout") != LAYOUT_VERSION:
        raise LookupError(f"{path}: layout version {manifest.get('logmine_layout')}, this logmine reads "
                          f"{LAYOUT_VERSION}: export it again")
    return manifest


NAME = re.compile(r"[a-z][a-z0-9_]*")  # a table or column name of logmine's: nothing to quote


def open_folder(folder: str | Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB whose tables are views over the Parquet files of `folder`, with the same
    columns and types as the database they were exported from, the views of logmine's own `queries/views/`
    on top, and no access to any file outside `folder` (`store.sandbox`)."""
    from ..derive.line_templates import UNTYPED_KEY
    from ..derive.rebuild import create_views
    from ..store import connect, execute, sandbox

    root = Path(folder).resolve()
    manifest = read_manifest(root)
    con = connect(":memory:")
    for name, columns in declared_tables(root, manifest).items():
        files = str(root / name / "**" / "*.parquet").replace("'", "''")
        body = ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' for c, t in columns.items())
        execute(con, f"""CREATE VIEW "{name}" AS SELECT {body} FROM read_parquet('{files}',
                 hive_partitioning = true, hive_types_autocast = false, union_by_name = true)""")
    execute(con, UNTYPED_KEY)
    create_views(con)
    sandbox(con, allowed_directories=[root])
    return con


def declared_tables(root: Path, manifest: dict) -> dict[str, dict[str, str]]:
    """The manifest's tables and columns, each type as DuckDB reads it back: LookupError naming the
    manifest for a name or a type that is not one (a folder of Parquet files declares data, not code)."""
    import duckdb

    where = root / MANIFEST
    tables = manifest.get("tables")
    if not isinstance(tables, dict):
        raise LookupError(f"{where}: no `tables` object")
    declared: dict[str, dict[str, str]] = {}
    for name, columns in tables.items():
        if not NAME.fullmatch(name) or not isinstance(columns, dict) or not columns:
            raise LookupError(f"{where}: table {name!r}: not a table name with columns")
        declared[name] = {}
        for column, type_text in columns.items():
            if not NAME.fullmatch(column) or not isinstance(type_text, str):
                raise LookupError(f"{where}: table {name}, column {column!r}: not a column name and type")
            try:
                declared[name][column] = str(duckdb.sqltype(type_text))
            except (duckdb.Error, TypeError, ValueError):
                raise LookupError(f"{where}: table {name}, column {column}: {type_text!r} is not a type") from None
    return declared


def definitions(folder: str | Path) -> list[str]:
    """The SQL of the views and macros logmine makes over the folder's tables (from its own files, never
    the manifest's): what another engine translates (`spark_engine`)."""
    con = open_folder(folder)
    try:
        return view_statements(con)
    finally:
        con.close()
