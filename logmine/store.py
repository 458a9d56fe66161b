"""DuckDB storage: create tables from column specs, append column batches, track ingested sources.

The store knows table names and column types, never log formats: parsers hand it Arrow tables. A
column is given by its DuckDB type (the tables logmine derives itself) or by the logical Arrow type a
parser declares, which the store maps to a DuckDB type and, where it pays, a compression.
"""

from __future__ import annotations

import re
import stat
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

DEFAULT_DB = "logmine.duckdb"
READ_WAIT_S = 10.0  # how long a reader waits for a writer's commit to end (see `connect`)
ColumnType: TypeAlias = "str | pa.DataType"  # a DuckDB type, or the logical Arrow type a parser declares

SOURCES_COLUMNS: dict[str, str] = {
    "source_id": "INTEGER PRIMARY KEY", "path": "VARCHAR", "display": "VARCHAR", "kind": "VARCHAR",
    "envelope": "VARCHAR", "compression": "VARCHAR", "size_bytes": "BIGINT", "bytes_ingested": "BIGINT",
    "lines_ingested": "BIGINT", "partial_last_line": "BOOLEAN", "head_hash": "VARCHAR",
    "tail_hash": "VARCHAR", "content_hash": "VARCHAR", "year": "INTEGER", "utc_offset_s": "INTEGER",
    "fallback_date": "VARCHAR", "ingested_at": "TIMESTAMP",
}


SETTINGS_COLUMNS: dict[str, str] = {"name": "VARCHAR PRIMARY KEY", "value": "VARCHAR"}


def setting(con: duckdb.DuckDBPyConnection, name: str) -> str | None:
    """A setting the database keeps for every later ingest into it (`redact`)."""
    create_table(con, "settings", SETTINGS_COLUMNS)
    found = execute(con, "SELECT value FROM settings WHERE name = ?", [name])
    return found[0][0] if found else None


def save_setting(con: duckdb.DuckDBPyConnection, name: str, value: str) -> None:
    create_table(con, "settings", SETTINGS_COLUMNS)
    execute(con, "INSERT OR REPLACE INTO settings VALUES (?, ?)", [name, value])


# DuckDB would fetch an extension from the internet to open some files (a SQLite one): logmine never does.
OFFLINE = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
SQLITE_MAGIC = b"SQLite format 3\x00"


class NotALogmineDatabase(ValueError):
    """The file given as the database is another kind of database."""


def connect(db: str | Path = DEFAULT_DB, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) a logmine database."""
    import duckdb  # here: `logmine --help` needs this module's DEFAULT_DB, not DuckDB

    if str(db) != ":memory:":
        _check_file(Path(db), read_only)
    if not read_only:
        return duckdb.connect(str(db), read_only=read_only, config=OFFLINE)
    # A writer that holds the file only while it commits (`logmine follow`, about once a second) is
    # waited for; an ingest that holds it longer is named by the error after READ_WAIT_S.
    deadline = time.monotonic() + READ_WAIT_S
    while True:
        try:
            return duckdb.connect(str(db), read_only=True, config=OFFLINE)
        except duckdb.IOException as exc:
            if lock_holder(exc) is None or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextmanager
def reading(db: str | Path = DEFAULT_DB) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to a logmine database, closed when the block ends."""
    con = connect(db, read_only=True)
    try:
        yield con
    finally:
        con.close()


@contextmanager
def reading_sandboxed(db: str | Path = DEFAULT_DB) -> Iterator[duckdb.DuckDBPyConnection]:
    """`reading`, on a connection that can read nothing but the database: what runs SQL someone else wrote
    (`logmine sql`, the MCP server's tools). `COPY ... TO`, `read_csv` of a path, `ATTACH`, `INSTALL` and
    `LOAD` fail with DuckDB's one-line permission error."""
    with reading(db) as con:
        sandbox(con)
        yield con


def sandbox(con: duckdb.DuckDBPyConnection, allowed_directories: Iterable[str | Path] = ()) -> None:
    """Turn off every file and network access of `con` but the files already attached (and the folders
    `allowed_directories`), then lock its configuration so that the SQL it runs cannot turn them on again
    (nor change any other setting). Set after the database is attached: before, it could not open it."""
    allowed = [str(Path(d).resolve()) + "/" for d in allowed_directories]
    if allowed:
        execute(con, "SET allowed_directories = ?", [allowed])
    execute(con, "SET enable_external_access = false")
    execute(con, "SET lock_configuration = true")


def _check_file(path: Path, read_only: bool) -> None:
    """Refuse, before DuckDB opens it, what it would fail on badly: a missing database to read, a FIFO (it
    would wait for a writer for ever) or another non-file, and a SQLite file (it would fetch an extension)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        if read_only:
            raise FileNotFoundError(f"{path}: no such database (run `logmine ingest` first)") from None
        return  # a new database
    if not stat.S_ISREG(mode):
        raise NotALogmineDatabase(f"{path}: not a regular file, so not a database")
    if _starts_with(path, SQLITE_MAGIC):
        raise NotALogmineDatabase(f"{path}: a SQLite database, not a logmine one (an opencode database is an "
                                  "input: `logmine ingest` it into a logmine database given with --db)")


def _starts_with(path: Path, magic: bytes) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(len(magic)) == magic
    except OSError:
        return False  # a new file, or one DuckDB will say it cannot open


LOCK_CONFLICT = re.compile(r'Could not set lock on file "(?P<db>[^"]+)": Conflicting lock is held in (?P<program>.+?) '
                           r"\(PID (?P<pid>\d+)\)")


def lock_holder(error: Exception) -> tuple[str, int, str] | None:
    """(database, PID, command line) of the process whose hold on the file made `error`, if that is what it
    is: DuckDB lets one process write a database file or several read it, never both at once."""
    found = LOCK_CONFLICT.search(str(error))
    if not found:
        return None
    pid = int(found["pid"])
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        command = found["program"]
    return found["db"], pid, command


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether the database has a table or view of this name."""
    return bool(execute(con, "SELECT 1 FROM information_schema.tables WHERE table_name = ?", [name]))


def execute(con: duckdb.DuckDBPyConnection, statement: str, params: list | dict | None = None) -> list[tuple]:
    """Execute a statement and drain its result (DuckDB refuses new work while a result is pending)."""
    return con.execute(statement, params or []).fetchall()


# Columns stored with other than DuckDB's default compression. zstd: the text of every line is most of the
# file; the default string compression (dictionary + FSST) took half as long again to write it, into a file
# twice as large (bench/profile_notes.md).
COMPRESSION: dict[tuple[str, str], str] = {("lines", "message"): "zstd"}


def create_table(con: duckdb.DuckDBPyConnection, name: str, columns: Mapping[str, ColumnType]) -> None:
    """Create the table if missing; an existing one must have these columns in this order, since
    appends and inserts fill columns by position."""
    create_tables(con, {name: columns})


def create_tables(con: duckdb.DuckDBPyConnection, tables: Mapping[str, Mapping[str, ColumnType]]) -> None:
    """`create_table` for several tables in two statements, whatever their number: an ingest opens with
    it, and two statements a table cost a small ingest (a journal read again as it grows) most of its time."""
    found: dict[str, list[str]] = {}
    for table, column in execute(con, "SELECT table_name, column_name FROM information_schema.columns "
                                 "WHERE table_schema = current_schema() AND list_contains(?, table_name) "
                                 "ORDER BY table_name, ordinal_position", [list(tables)]):
        found.setdefault(table, []).append(column)
    missing = [name for name in tables if name not in found]
    if missing:
        execute(con, "; ".join(f'CREATE TABLE IF NOT EXISTS "{name}" (' + ", ".join(
            f'"{col}" {column_definition(name, col, typ)}' for col, typ in tables[name].items()) + ")"
            for name in missing))
    for name, columns in tables.items():
        if name in found and found[name] != list(columns):
            import duckdb

            raise duckdb.CatalogException(f"table {name} was made by another logmine version (its columns "
                                          "differ); ingest into a new database")


def column_definition(table: str, column: str, column_type: ColumnType) -> str:
    """A column's type as `CREATE TABLE` takes it: a DuckDB type as given, an Arrow type as the DuckDB type
    that stores it, with its compression."""
    if isinstance(column_type, str):
        return column_type
    compression = COMPRESSION.get((table, column))
    return duckdb_type(column_type) + (f" USING COMPRESSION {compression}" if compression else "")


def ensure_tables(con: duckdb.DuckDBPyConnection, tables: Mapping[str, Mapping[str, ColumnType]]) -> None:
    create_tables(con, {"sources": SOURCES_COLUMNS, **tables})


@cache
def arrow_types() -> dict[str, pa.DataType]:
    """The Arrow type of each DuckDB column type; built on first use so that a read-only command (which
    opens the database through this module) need not import pyarrow."""
    import pyarrow as pa

    return {
        "INTEGER": pa.int32(), "BIGINT": pa.int64(), "SMALLINT": pa.int16(), "DOUBLE": pa.float64(),
        "BOOLEAN": pa.bool_(), "TIMESTAMP": pa.timestamp("us"), "VARCHAR": pa.string(), "JSON": pa.json_(),
        "MAP(VARCHAR, VARCHAR)": pa.map_(pa.string(), pa.string()),
    }


@cache
def duckdb_types() -> dict[pa.DataType, str]:
    return {arrow: duck for duck, arrow in arrow_types().items()}


def base_type(column_spec: str) -> str:
    """`INTEGER PRIMARY KEY` -> `INTEGER`."""
    return re.split(r" (?:PRIMARY|USING) ", column_spec)[0]


def duckdb_type(column_type: ColumnType) -> str:
    """The DuckDB type that stores a column."""
    return base_type(column_type) if isinstance(column_type, str) else duckdb_types()[column_type]


def arrow_type(column_type: ColumnType) -> pa.DataType:
    """The Arrow type a column's values are cast to before they are stored (JSON goes as its text)."""
    import pyarrow as pa

    found = arrow_types()[base_type(column_type)] if isinstance(column_type, str) else column_type
    return found.storage_type if isinstance(found, pa.BaseExtensionType) else found


def typed_table(data: pa.Table, columns: Mapping[str, ColumnType]) -> pa.Table:
    """`data` with exactly `columns` (missing ones null), each cast in Arrow to its column's type.

    A column whose text does not cast (a field SGLang printed oddly) stays text; `append` lets
    DuckDB TRY_CAST it, so one odd value becomes NULL instead of failing the batch. A column that the
    table does not have is an error: a parser and its table disagree about a name, and dropping the
    column would lose the value without a word.
    """
    import pyarrow as pa

    check_columns(data.column_names, columns)
    arrays, fields = [], []
    for name, column_type in columns.items():
        target = arrow_type(column_type)
        if name not in data.column_names:
            column = pa.nulls(data.num_rows, target)
        else:
            column = data.column(name)
            if column.type != target:
                try:
                    column = column.cast(target)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    column = column.cast(pa.string())
        arrays.append(column)
        fields.append(pa.field(name, column.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def check_columns(names: Iterable[str], columns: Mapping[str, ColumnType]) -> None:
    """Refuse a column the table does not have: a parser and its table disagree about a name (`comand`), and
    dropping it would store NULL without a word."""
    unknown = sorted(set(names) - set(columns))
    if unknown:
        raise ValueError(f"columns {unknown} are not in the table (known: {', '.join(columns)})")


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict],
                columns: Mapping[str, ColumnType]) -> None:
    """Store rows given as dicts keyed by column (a key the table lacks is refused), in one append."""
    if not rows:
        return
    import pyarrow as pa

    check_columns({key for row in rows for key in row}, columns)
    data = pa.table({name: _arrow_values([row.get(name) for row in rows]) for name in columns})
    append(con, table, typed_table(data, columns), columns)


def _arrow_values(values: list[object]) -> pa.Array:
    """Python values as an Arrow array; as text when their types differ (DuckDB gives a timestamp before
    year 1 as text), which `append` casts back."""
    import pyarrow as pa

    try:
        return pa.array(values)
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return pa.array([None if v is None else str(v) for v in values], pa.string())


def append(con: duckdb.DuckDBPyConnection, table: str, data: pa.Table, columns: Mapping[str, ColumnType],
           text: bool = False) -> None:
    """Append an Arrow table with exactly the table's columns; every row logmine stores passes here.

    Columns not of their column's Arrow type are TRY_CAST by DuckDB. With `text` (every column given as
    text, as the transcripts are), every column is TRY_CAST, JSON too: a value that is not JSON (a redacted
    tool output cut inside a string) becomes NULL instead of failing the batch.

    A relation, not a registered view: inside a transaction DuckDB keeps dropped views (and the
    Arrow data they hold) until the commit.
    """
    check_columns(data.column_names, columns)
    exprs = []
    for name, column_type in columns.items():
        plain = not text and data.schema.field(name).type == arrow_type(column_type)
        exprs.append(f'"{name}"' if plain else f'TRY_CAST("{name}" AS {duckdb_type(column_type)}) AS "{name}"')
    con.from_arrow(data).project(", ".join(exprs)).insert_into(table)


def delete_rows(con: duckdb.DuckDBPyConnection, tables: Iterable[str], source_id: int,
                from_line: int | None = 0) -> None:
    """Remove a source's rows from line `from_line` on (a re-read partial line, or a replaced file); all
    of them when `from_line` is None (tables without lines, such as a transcript's)."""
    where, params = _source_rows(source_id, from_line)
    for table in tables:
        execute(con, f'DELETE FROM "{table}" WHERE {where}', params)


def _source_rows(source_id: int, from_line: int | None) -> tuple[str, list[int]]:
    if from_line is None:
        return "source_id = $1", [source_id]
    return "source_id = $1 AND line_no >= $2", [source_id, from_line]


class SavedRows:
    """A source's rows from line `from_line` on, removed before they are re-read and put back if that fails.

    DuckDB has no savepoints: inside the ingest's one transaction, one input's failure is undone by hand,
    so that a bad input costs only itself. A new source (`keep=False`) has nothing to put back.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, tables: Iterable[str], source_id: int,
                 from_line: int | None = 0, keep: bool = True) -> None:
        self.con, self.tables, self.source_id, self.from_line = con, list(tables), source_id, from_line
        self.kept: dict[str, str] = {}  # table -> its temporary copy
        if not keep:
            return
        # One query says which tables hold such rows: most hold none, and each statement costs milliseconds.
        where, params = _source_rows(source_id, from_line)
        having = execute(con, " UNION ALL ".join(
            f"SELECT '{table}' WHERE EXISTS (SELECT 1 FROM \"{table}\" WHERE {where})"
            for table in self.tables), params)
        for (table,) in having:
            copy = self.kept[table] = f"_logmine_saved_{table}"
            execute(con, f'CREATE OR REPLACE TEMP TABLE "{copy}" AS SELECT * FROM "{table}" WHERE {where}', params)
        delete_rows(con, self.kept, source_id, from_line)

    def restore(self) -> None:
        """Remove what was stored since, and put the saved rows back."""
        delete_rows(self.con, self.tables, self.source_id, self.from_line)
        for table, copy in self.kept.items():
            execute(self.con, f'INSERT INTO "{table}" SELECT * FROM "{copy}"')
        self.discard()

    def discard(self) -> None:
        for copy in self.kept.values():
            execute(self.con, f'DROP TABLE "{copy}"')
        self.kept = {}


def next_source_id(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute("SELECT coalesce(max(source_id), 0) + 1 FROM sources").fetchall()[0][0]


def find_source(con: duckdb.DuckDBPyConnection, path: str) -> dict | None:
    cur = con.execute("SELECT * FROM sources WHERE path = ? ORDER BY source_id DESC LIMIT 1", [path])
    rows = cur.fetchall()
    if not rows:
        return None
    return dict(zip([d[0] for d in cur.description], rows[0], strict=True))


def upsert_source(con: duckdb.DuckDBPyConnection, record: Mapping[str, object]) -> None:
    execute(con, "DELETE FROM sources WHERE source_id = ?", [record["source_id"]])
    names = list(record)
    placeholders = ", ".join("?" for _ in names)
    cols = ", ".join(f'"{n}"' for n in names)
    execute(con, f"INSERT INTO sources ({cols}) VALUES ({placeholders})", [record[n] for n in names])


# ---------------------------------------------------------------- files written beside the database


def database_file(con: duckdb.DuckDBPyConnection) -> Path | None:
    """The file `con` has open (None in memory)."""
    found = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    return Path(found[0]) if found and found[0] else None


def umask_like(database: Path | None) -> int:
    """The umask under which what logmine writes from a database (exports, reports) gets its access: a
    group or others that cannot read the database read none of it (folders lose their x too); with no
    database file, the owner's alone, as a database logmine creates."""
    try:
        mode = database.stat().st_mode if database else 0o600
    except OSError:
        mode = 0o600
    umask = 0
    for read, write, every in ((stat.S_IRGRP, stat.S_IWGRP, 0o070), (stat.S_IROTH, stat.S_IWOTH, 0o007)):
        umask |= every if not mode & read else (0 if mode & write else write)
    return umask


@contextmanager
def written_like(database: Path | None) -> Iterator[None]:
    """Files and folders made inside get the database's access (`umask_like`)."""
    import os

    previous = os.umask(umask_like(database))
    try:
        yield
    finally:
        os.umask(previous)


def write_text_like(database: Path | None, output: Path, text: str) -> None:
    """`output` written with `text`, readable by whoever may read the database and no one else (a file
    already there included)."""
    import os

    with written_like(database):
        fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    os.fchmod(fd, 0o666 & ~umask_like(database))
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
