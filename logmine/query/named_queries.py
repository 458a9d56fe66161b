"""Named SQL queries: the `.sql` documents in `queries/`, run with bound parameters.

Each document starts with a header comment: `-- name: what it answers.`, details, then
`-- Columns: a, b as label, c` (the columns a terminal shows first, in reading order, each under its label
when it has one), optionally `-- Once: a, b` (columns said once above the table when every row holds the
same value) and `-- Ranks: rank` (the column naming a rank: ranks whose rows are otherwise equal are shown
as one row), then `-- Parameters: ...`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from importlib import resources
from typing import TYPE_CHECKING

from ..terminal.suggestions import did_you_mean
from ..terminal.table_view import TableView
from .rows import RowChunks, Rows

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

PARAMETER = re.compile(r"\$([a-z_]+)")
# A header line goes on in the comment lines indented under it.
KEY_COLUMNS = re.compile(r"^-- Columns:(.*(?:\n--   .*)*)$", re.MULTILINE)
ONCE_COLUMNS = re.compile(r"^-- Once:(.*)$", re.MULTILINE)
RANK_COLUMNS = re.compile(r"^-- Ranks:(.*)$", re.MULTILINE)
CHUNK_ROWS = 10_000  # rows fetched at a time when a result is written as it is read


def names() -> list[str]:
    """Every named query shipped with logmine."""
    files = resources.files("logmine.queries").iterdir()
    return sorted(f.name[:-4] for f in files if f.name.endswith(".sql"))


def text(name: str) -> str:
    # A name, never a path: `../../x` must not run any x.sql on the disk.
    if name not in names():
        hint = did_you_mean(name, names())
        raise KeyError(f"no query named {name!r}; " + (f"{hint} (`logmine query` lists them)" if hint else
                                                        f"known: {', '.join(names())}"))
    return (resources.files("logmine.queries") / f"{name}.sql").read_text()


def parameters(name: str) -> list[str]:
    """The `$name` parameters the query reads, in the order it first reads them."""
    return list(dict.fromkeys(PARAMETER.findall(_without_comments(text(name)))))


def description(name: str) -> str:
    """The first line of the query's header comment."""
    paragraph = []
    for line in text(name).splitlines():
        comment = line.removeprefix("--").strip()
        if not line.startswith("--") or not comment:
            break
        paragraph.append(comment)
    sentence = " ".join(paragraph).removeprefix(f"{name}:").strip()
    return sentence.split(". ")[0].rstrip(".")


def summary(name: str) -> str:
    """The description up to its first colon: a few words for a listing."""
    head, colon, _ = description(name).partition(": ")
    return head if colon else description(name)


def key_columns(name: str) -> list[str]:
    """The columns that matter most in the query's result, from its `-- Columns: a, b, c` header line:
    what a terminal shows first when not every column fits."""
    return list(view(name).labels)


def view(name: str) -> TableView:
    """How a terminal shows the query's result, from its header: the key columns under their labels, the
    columns said once, the column naming a rank."""
    document = text(name)

    def listed(pattern: re.Pattern) -> list[str]:
        found = pattern.search(document)
        entries = found.group(1).replace("\n--", " ").split(",") if found else []
        return [" ".join(c.split()) for c in entries if c.strip()]

    labels = {}
    for entry in listed(KEY_COLUMNS):
        column, _, label = entry.partition(" as ")
        labels[column.strip()] = label.strip() or column.strip()
    return TableView(labels, listed(ONCE_COLUMNS), listed(RANK_COLUMNS))


def execute(con: duckdb.DuckDBPyConnection, name: str, **params: object) -> pd.DataFrame:
    """Run a named query; parameters it does not use are ignored, ones it uses default to NULL."""
    return execute_sql(con, text(name), **params)


def execute_sql(con: duckdb.DuckDBPyConnection, sql: str, **params: object) -> pd.DataFrame:
    """Run SQL with `$name` parameters; JSON columns come back as Python objects."""
    import pandas as pd

    result, json_columns = _execute(con, sql, params)
    df = result.df()
    for column in json_columns:
        # Each value as its own Python object: a column of ints and floats left to pandas becomes float64, and
        # a notebook shows a config's 4.0 as 4.000000e+00 and its seed 1066034123 as 1.066034e+09.
        df[column] = pd.Series([_json_value(v) for v in df[column]], index=df.index, dtype=object)
    return df


def fetch(con: duckdb.DuckDBPyConnection, sql: str, *, at_most: int | None = None, **params: object) -> Rows:
    """`execute_sql` as plain Python rows, without pandas (whose import would double a command's time).

    With `at_most`, a result of more rows is counted by DuckDB and only its first `at_most` rows are
    fetched (`Rows.total` says how many it has): what a terminal table shows. Made into Python objects
    whole, the 2M-row timeline of a 2M-line journal took 15 s and 2 GB for a table of 1,000 rows.
    """
    if at_most is not None:
        first = _first_rows(con, sql, at_most, params)
        if first is not None:
            return first
    result, columns, json_positions = _result(con, sql, params)
    return Rows(columns, _decoded(result.fetchall(), json_positions) if columns else [])


def fetch_chunks(con: duckdb.DuckDBPyConnection, sql: str, *, rows_per_chunk: int = CHUNK_ROWS,
                 **params: object) -> RowChunks:
    """`fetch` as lists of `rows_per_chunk` rows, fetched as they are read, so that writing a result of
    millions of rows never holds it whole."""
    result, columns, json_positions = _result(con, sql, params)

    def chunks() -> Iterator[list[tuple]]:
        while columns and (rows := result.fetchmany(rows_per_chunk)):
            yield _decoded(rows, json_positions)

    return RowChunks(columns, chunks())


def _result(con: duckdb.DuckDBPyConnection, sql: str,
            params: dict[str, object]) -> tuple[duckdb.DuckDBPyConnection, list[str], set[int]]:
    """The statement run: its result, its columns (none for a statement that returns nothing) and where
    its JSON columns are."""
    result, json_columns = _execute(con, sql, params)
    columns = [d[0] for d in result.description or []]
    return result, columns, {columns.index(c) for c in json_columns}


def _decoded(rows: list[tuple], json_positions: set[int]) -> list[tuple]:
    """The rows with their JSON values parsed."""
    if not json_positions:
        return rows
    return [tuple(_json_value(v) if i in json_positions else v for i, v in enumerate(row)) for row in rows]


def _first_rows(con: duckdb.DuckDBPyConnection, sql: str, at_most: int, params: dict[str, object]) -> Rows | None:
    """The first `at_most` rows of a longer result, and its count; None when the result is no longer, or
    when the statement is not a query that can be read as a subquery (then it runs as it is)."""
    import duckdb

    inner = _as_subquery(sql)
    try:
        total = _execute(con, f"SELECT count(*) FROM (\n{inner}\n)", params)[0].fetchone()[0]
    except duckdb.InterruptException:
        raise  # stopped (Ctrl-C, a time limit): not a statement to run again as it is
    except duckdb.Error:
        return None
    if total <= at_most:
        return None
    first = fetch(con, f"SELECT * FROM (\n{inner}\n) LIMIT {int(at_most)}", **params)
    return Rows(first.columns, first.rows, total=total)


def _as_subquery(sql: str) -> str:
    """The statement without its closing `;` (and the comments after it), to be put in parentheses."""
    lines = sql.strip().splitlines()
    while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith("--")):
        lines.pop()
    if lines:
        lines[-1] = lines[-1].rstrip().removesuffix(";")
    return "\n".join(lines)


def _execute(con: duckdb.DuckDBPyConnection, sql: str,
             params: dict[str, object]) -> tuple[duckdb.DuckDBPyConnection, list[str]]:
    used = {p: params.get(p) for p in PARAMETER.findall(_without_comments(sql))}
    result = con.execute(sql, used) if used else con.execute(sql)
    return result, [d[0] for d in result.description or [] if str(d[1]).upper() == "JSON"]


def _json_value(value: object) -> object:
    return json.loads(value) if isinstance(value, str) else value


def _without_comments(sql: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())
