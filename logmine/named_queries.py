"""Named SQL queries: the `.sql` documents in `queries/`, run with bound parameters."""

from __future__ import annotations

import json
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
    # A name, never a path: `../../x` must not run any x.sql on the disk.
    if name not in names():
        raise KeyError(f"no query named {name!r}; known: {', '.join(names())}")
    return (resources.files("logmine.queries") / f"{name}.sql").read_text()


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


def run(con: duckdb.DuckDBPyConnection, name: str, **params: object) -> pd.DataFrame:
    """Run a named query; parameters it does not use are ignored, ones it uses default to NULL."""
    return run_sql(con, text(name), **params)


def run_sql(con: duckdb.DuckDBPyConnection, sql: str, **params: object) -> pd.DataFrame:
    """Run SQL with `$name` parameters; JSON columns come back as Python objects."""
    used = {p: params.get(p) for p in PARAMETER.findall(_without_comments(sql))}
    result = con.execute(sql, used) if used else con.execute(sql)
    json_columns = [d[0] for d in result.description if str(d[1]).upper() == "JSON"]
    df = result.df()
    for column in json_columns:
        df[column] = df[column].map(lambda v: json.loads(v) if isinstance(v, str) else v)
    return df


def _without_comments(sql: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())
