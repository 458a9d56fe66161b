"""Fleet scale: the Parquet layout of `logmine export --parquet`, queried with DuckDB (`--data`)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import date
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from logmine import api, named_queries
from logmine.cli import main

from .conftest import SAMPLE, shared_path

# `tables` lists the catalogue: on a folder the tables are views over its files, so only their names and
# columns are the same.
CATALOGUE_QUERY = "tables"


def normalised(value: object) -> object:
    """A cell as a comparable value: floats to 9 significant digits, JSON text parsed."""
    if isinstance(value, float):
        return None if math.isnan(value) else float(f"{value:.9g}")
    if isinstance(value, dict):
        return {k: normalised(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalised(v) for v in value]
    if hasattr(value, "is_finite"):  # Decimal
        return normalised(float(value))
    return value


def result(con: duckdb.DuckDBPyConnection, name: str) -> tuple[list[str], list[list[object]]]:
    rows = api.query_rows(con, name)
    if name == CATALOGUE_QUERY:
        keep = [rows.columns.index("name"), rows.columns.index("columns")]
        return ["name", "columns"], sorted([row[i] for i in keep] for row in rows.rows)
    return rows.columns, [normalised(list(row)) for row in rows.rows]


@pytest.fixture(scope="module")
def demo_folder(demo_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo-parquet")
    with api.open_db(demo_db) as con:
        api.export_parquet(con, out)
    return out


@pytest.fixture(scope="module")
def sample_folder(ingested: Callable[..., duckdb.DuckDBPyConnection],
                  tmp_path_factory: pytest.TempPathFactory) -> tuple[duckdb.DuckDBPyConnection, Path]:
    shared_path("samples", "kimi-k25")
    con = ingested(SAMPLE / "journal.txt", SAMPLE / "session.opencode.json")
    out = tmp_path_factory.mktemp("sample-parquet")
    api.export_parquet(con, out)
    return con, out


def test_layout_is_hive_partitioned_by_host_and_day(demo_folder: Path) -> None:
    assert (demo_folder / "decode_batches" / "host=gpu-box" / "day=2026-03-12").is_dir()
    assert (demo_folder / "lines" / "host=gpu-box" / "day=2026-03-12").is_dir()
    assert (demo_folder / "tool_calls" / "day=2026-03-12").is_dir()  # no log line: by day only
    assert (demo_folder / "configs" / "data.parquet").is_file()
    manifest = json.loads((demo_folder / "_logmine.json").read_text())
    assert manifest["tables"]["decode_batches"]["extra"] == "MAP(VARCHAR, VARCHAR)"
    # Any Parquet reader sees the partitions as columns.
    found = duckdb.sql(f"SELECT DISTINCT host, day FROM read_parquet('{demo_folder}/runs/**/*.parquet', "
                       "hive_partitioning = true)").fetchall()
    assert found == [("gpu-box", date(2026, 3, 12))]


@pytest.mark.parametrize("name", named_queries.names())
def test_every_named_query_gives_the_same_rows_on_the_folder(demo_db: Path, demo_folder: Path, name: str) -> None:
    with api.open_db(demo_db) as con, api.open_data(demo_folder) as folder:
        assert result(folder, name) == result(con, name)


def test_the_sample_gives_the_same_rows_on_the_folder(sample_folder: tuple[duckdb.DuckDBPyConnection, Path]) -> None:
    con, out = sample_folder
    with api.open_data(out) as folder:
        for name in named_queries.names():
            assert result(folder, name) == result(con, name), name


def test_cli_export_then_query_data(demo_db: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    exported = runner.invoke(main, ["export", "--db", str(demo_db), "--parquet", str(tmp_path / "out")])
    assert exported.exit_code == 0, exported.output
    on_db = runner.invoke(main, ["query", "runs", "--db", str(demo_db), "--format", "json"])
    on_folder = runner.invoke(main, ["query", "runs", "--data", str(tmp_path / "out"), "--format", "json"])
    assert json.loads(on_folder.output) == json.loads(on_db.output)
    assert len(json.loads(on_db.output)) == 3
