"""Named SQL queries: the `.sql` documents in `queries/`, run with bound parameters."""

from __future__ import annotations

import re
from importlib import resources

import duckdb
import pandas as pd

PARAMETER = re.compile(r"\$([a-z_]+)")


def names() -> list[str]:
    """Every named query shipped with logmine."""
    files = resources.files("logmine.queries").iterdir()
    return sorted(f.name[:-4] for f in files if f.name.endswith(".sql"))


def text(name: str) -> str:
    path = resources.files("logmine.queries") / f"{name}.sql"
    if not path.is_file():
        raise KeyError(f"no query named {name!r}; known: {', '.join(names())}")
    return path.read_text()


def description(name: str) -> str:
    """The first line of the query's header comment."""
    first = text(name).splitlines()[0]
    return first.removeprefix("--").strip()


def run(con: duckdb.DuckDBPyConnection, name: str, **params: object) -> pd.DataFrame:
    """Run a named query; parameters it does not use are ignored, ones it uses default to NULL."""
    sql = text(name)
    used = {p: params.get(p) for p in PARAMETER.findall(_without_comments(sql))}
    return con.execute(sql, used).df() if used else con.execute(sql).df()


def _without_comments(sql: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())
