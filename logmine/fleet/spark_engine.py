"""The named queries on Apache Spark SQL, over a folder in the layout of `logmine.fleet.parquet`.

Each query is written once, in DuckDB's dialect, and translated with SQLGlot. Its `$name` parameters
become literals first (Spark SQL has no named parameters in a view-free string). The folder's tables
are registered as temporary views with the columns and types of the manifest, and the database's views
(`<table>_by_run`) are translated the same way, so a query sees what it sees in DuckDB. A query that
SQLGlot cannot translate, or that Spark cannot run once translated, raises `Untranslatable` with one line
saying why.

The result is coerced to the types DuckDB gives the same query on the same folder (it is asked for the
result's columns, not its rows): JSON text becomes Python objects, Spark's decimals become floats where
DuckDB has a DOUBLE, timestamps are naive as in DuckDB. So `--engine spark --format json` prints the same
objects as DuckDB.

Needs the `spark` extra (`pip install logmine[spark]`) and a Java runtime that PySpark supports (17 or 21).
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from ..query import named_queries
from ..query.rows import Rows
from .parquet import MANIFEST, declared_tables, definitions, open_folder, read_manifest

if TYPE_CHECKING:
    import duckdb
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[2]"
LOG_CONFIG = Path(__file__).with_name("spark_log4j2.properties")
# Spark reads the folder with DuckDB's semantics where they differ by default: NULL (not an error) for a
# division by zero or a bad cast, partition values as written (`007` stays text), times in UTC.
SESSION_CONFIG = {
    "spark.sql.ansi.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",  # local mode talks to itself only, on the loopback
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.driver.extraJavaOptions": f"-Duser.timezone=UTC -Dlog4j2.configurationFile={LOG_CONFIG}",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
}


class Untranslatable(Exception):
    """A named query that does not run on Spark: the message says which and why, in one line."""


class SparkUnavailable(Exception):
    """PySpark or Java is missing: the message says what to install."""


def session(master: str = DEFAULT_MASTER, app: str = "logmine") -> SparkSession:
    """A Spark session with logmine's settings (reused if one is running in this process)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise SparkUnavailable("the Spark engine needs PySpark: pip install 'logmine[spark]'") from exc
    import logging
    import warnings

    # PySpark logs each failed statement before raising it; the caller reports it in one line instead.
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL + 1)
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    builder = SparkSession.builder.master(master).appName(app)
    for key, value in SESSION_CONFIG.items():
        builder = builder.config(key, value)
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # PySpark says it as a Java gateway error
        raise SparkUnavailable(f"Spark did not start ({str(exc).splitlines()[0]}); it needs Java 17 or 21 "
                               "(Debian: apt-get install openjdk-17-jre-headless)") from exc
    spark.sparkContext.setLogLevel("OFF")  # failures reach the caller as exceptions; the log would repeat them
    return spark


def _python() -> str:
    import sys

    return sys.executable


def spark_type(duckdb_type: str) -> str:
    """A DuckDB column type as Spark SQL spells it (JSON is text there)."""
    import sqlglot

    if duckdb_type == "JSON":
        return "STRING"
    if duckdb_type == "TIMESTAMP":  # naive, as DuckDB writes it: no time zone is applied on reading
        return "TIMESTAMP_NTZ"
    return sqlglot.exp.DataType.build(duckdb_type, dialect="duckdb").sql("spark")


def register_folder(spark: SparkSession, folder: str | Path) -> None:
    """Each table of the folder as a temporary view with its manifest's columns, then the database's views.

    The files are read with the manifest's schema, so Spark starts no job to infer one per table. A folder
    already registered in this session, unchanged since, is not registered again."""
    manifest = read_manifest(folder)
    root = Path(folder).resolve()
    stamp = (str(root), (root / MANIFEST).stat().st_mtime_ns)
    if _registered.get(id(spark)) == stamp:
        return
    for name, columns in declared_tables(root, manifest).items():  # names and types checked, never run
        path = str(root / name)
        layout_columns = {"host": "VARCHAR", "day": "VARCHAR"}  # the partition columns a folder may have
        read_schema = ", ".join(f"`{c}` {spark_type(t)}" for c, t in {**layout_columns, **columns}.items())
        frame = spark.read.schema(read_schema).option("basePath", path).parquet(path)
        frame.select(*[f"`{c}`" for c in columns]).createOrReplaceTempView(name)
    macros, views = _definitions(definitions(folder))  # logmine's own views, not the folder's SQL
    schema = folder_schema(folder)
    pending = views
    while pending:  # dependencies first: a view is made once the views it reads exist
        failed = []
        for view, select in pending:
            try:
                spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{view}` AS {translate(select, macros, schema)}")
            except Exception:  # noqa: BLE001 - tried again once the views it reads exist
                failed.append((view, select))
        if len(failed) == len(pending):
            break  # the queries that read such a view say so when they run
        pending = failed
    _registered[id(spark)] = stamp


_registered: dict[int, tuple[str, int]] = {}  # Spark session -> the folder its views read


def folder_schema(folder: str | Path) -> dict[str, dict[str, str]]:
    """Every table's and view's columns and DuckDB types, as DuckDB sees the folder."""
    with _duckdb_folder(folder) as con:
        found = con.execute("SELECT table_name, list(column_name ORDER BY column_index), "
                            "list(data_type ORDER BY column_index) FROM duckdb_columns() "
                            "WHERE schema_name = current_schema() GROUP BY ALL").fetchall()
    return {name: dict(zip(cols, types, strict=True)) for name, cols, types in found}


Macro = tuple[list[str], str, bool]  # parameters, body, whether it is a table macro


def _definitions(statements: list[str]) -> tuple[dict[str, Macro], list[tuple[str, str]]]:
    """({macro: (parameters, body, is a table macro)}, [(view, its SELECT)]) from the manifest's SQL."""
    import sqlglot

    macros, views = {}, []
    for statement in statements:
        found = re.match(r"CREATE MACRO (\w+)\(([^)]*)\) AS (TABLE )?(.*)", statement, re.DOTALL)
        if found:
            macros[found[1]] = ([p.strip() for p in found[2].split(",") if p.strip()], found[4], bool(found[3]))
            continue
        tree = sqlglot.parse_one(statement, read="duckdb")
        views.append((tree.this.name, tree.expression.sql("duckdb")))
    return macros, views


def _table_macro_body(params: list[str], body: str, arguments: list[str]) -> str:
    """A table macro's SELECT for these literal arguments: `query_table(p)` becomes the table p names."""
    for param, argument in zip(params, arguments, strict=False):
        body = re.sub(rf"\bquery_table\(\s*{param}\s*\)", argument.strip("'"), body)
        body = re.sub(rf"\b{param}\b", argument, body)
    return body


# DuckDB functions that Spark has under another shape: `_1`, `_2` stand for the call's arguments.
SPARK_SHAPES = {
    "to_seconds": "MAKE_DT_INTERVAL(0, 0, 0, _1)",
    "json_group_object": "TO_JSON(MAP_FROM_ENTRIES(COLLECT_LIST(STRUCT(_1, _2))))",
}
# DuckDB's epoch() keeps the microseconds that Spark's UNIX_TIMESTAMP drops; times are UTC in the session.
EPOCH = "UNIX_MICROS(CAST(_1 AS TIMESTAMP)) / 1e6"


def translate(sql: str, macros: dict[str, Macro] | None = None,
              schema: dict[str, dict[str, str]] | None = None) -> str:
    """DuckDB SQL as Spark SQL. Calls of the database's macros are expanded first, and, given the tables'
    and views' columns, `*` and `* EXCEPT (...)` become column lists (Spark has no EXCEPT there)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.optimizer.qualify import qualify

    tree = sqlglot.parse_one(sql, read="duckdb", error_level=sqlglot.ErrorLevel.RAISE)
    tables = {name: m for name, m in (macros or {}).items() if m[2]}

    def inline_tables(node: exp.Expression) -> exp.Expression:
        # `FROM events_by_run('errors')`: Spark has no table macros; the call becomes its SELECT.
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Anonymous) and node.this.name.lower() in tables:
            params, body, _ = tables[node.this.name.lower()]
            select = sqlglot.parse_one(_table_macro_body(params, body, [a.sql("duckdb") for a in
                                                                       node.this.expressions]), read="duckdb")
            alias = exp.TableAlias(this=exp.to_identifier(node.alias or node.this.name.lower()))
            return exp.Subquery(this=select.transform(inline_tables), alias=alias)
        return node

    tree = tree.transform(inline_tables)
    for name, (params, body, is_table) in (macros or {}).items():
        if not is_table:
            tree = tree.transform(_expander(name, params, sqlglot.parse_one(body, read="duckdb")))
    if schema:
        tree = qualify(tree, schema=schema, dialect="duckdb", expand_stars=True, validate_qualify_columns=False,
                       quote_identifiers=True, identify=False)

    def reshape(node: exp.Expression) -> exp.Expression | None:
        if isinstance(node, exp.Anonymous) and node.name.lower() in SPARK_SHAPES:
            return _shaped(SPARK_SHAPES[node.name.lower()], node.expressions)
        if isinstance(node, exp.TimeToUnix):
            return _shaped(EPOCH, [node.this])
        if isinstance(node, exp.PercentileCont) and node.expression is not None:  # quantile_cont(x, q)
            return _shaped("PERCENTILE(_1, _2)", [node.this, node.expression])
        if isinstance(node, exp.Limit) and isinstance(node.expression, exp.Null):
            return None  # DuckDB's LIMIT NULL: every row
        return node

    return tree.transform(reshape).sql(dialect="spark", unsupported_level=sqlglot.ErrorLevel.RAISE)


def _shaped(template: str, arguments: list) -> object:
    import sqlglot
    from sqlglot import exp

    given = {f"_{i + 1}": a for i, a in enumerate(arguments)}
    return sqlglot.parse_one(template, read="spark").transform(
        lambda n: given[n.name].copy() if isinstance(n, exp.Column) and n.name in given else n)


def _expander(name: str, params: list[str], template: object) -> object:
    from sqlglot import exp

    def expand(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Anonymous) and node.name.lower() == name:
            given = dict(zip(params, node.expressions, strict=False))
            return template.copy().transform(
                lambda n: given[n.name].copy() if isinstance(n, exp.Column) and n.name in given else n)
        return node

    return expand


def literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def with_literals(sql: str, params: dict[str, object]) -> str:
    """The query with each `$name` replaced by its value as a SQL literal (NULL when not given)."""
    return named_queries.PARAMETER.sub(lambda m: literal(params.get(m[1])), sql)


def query_rows(spark: SparkSession, folder: str | Path, name: str, **params: object) -> Rows:
    """A named query run by Spark on a registered folder, as the rows DuckDB gives for it."""
    from ..query.selection import check_selection

    with _duckdb_folder(folder) as con:
        params = check_selection(con, **params)
        sql = with_literals(named_queries.text(name), params)
        types = _result_types(con, sql)
    try:
        spark_sql = translate(sql, _definitions(definitions(folder))[0], folder_schema(folder))
    except Exception as exc:  # noqa: BLE001 - SQLGlot's parse and unsupported errors have no common base
        raise Untranslatable(f"query {name} cannot be translated to Spark SQL: {_first_line(exc)}") from exc
    try:
        table = spark.sql(spark_sql).toArrow()
    except Exception as exc:  # noqa: BLE001 - Spark's analysis errors come as several Java-backed classes
        raise Untranslatable(f"query {name} does not run on Spark: {_first_line(exc)}") from exc
    columns = [c for c, _ in types]
    rows = [tuple(_as_duckdb(v, t) for v, (_, t) in zip(row.values(), types, strict=True))
            for row in table.to_pylist()]
    return Rows(columns, rows)


class _duckdb_folder:  # noqa: N801 - used as a context manager like api.open_data
    def __init__(self, folder: str | Path) -> None:
        self.con = open_folder(folder)

    def __enter__(self) -> duckdb.DuckDBPyConnection:
        return self.con

    def __exit__(self, *exc: object) -> None:
        self.con.close()


def _result_types(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[str, str]]:
    """The result's columns and their DuckDB types, without computing its rows."""
    body = sql.strip().rstrip(";")
    found = con.execute(f"SELECT * FROM ({body}) LIMIT 0").description
    return [(d[0], str(d[1]).upper()) for d in found]


def _as_duckdb(value: object, duckdb_type: str) -> object:
    """A value Spark gave as DuckDB gives it for that column type."""
    if value is None:
        return None
    if duckdb_type == "JSON" and isinstance(value, str):
        return json.loads(value)
    if duckdb_type in ("DOUBLE", "FLOAT") and isinstance(value, (Decimal, int)):
        return float(value)
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(timezone.utc).replace(tzinfo=None)
    if isinstance(value, list) and duckdb_type.startswith("MAP"):
        return dict(value)
    return value


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:300]
