"""Nothing outside the data: a `--data` folder's manifest is never run, and `logmine sql` reaches no file
but the database (issue 32, items 1 and 8). Each case runs the real command in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from logmine import api

from .conftest import REPO


def logmine(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logmine", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)


@pytest.fixture
def folder(demo_db: Path, tmp_path: Path) -> Path:
    """The bundled example exported as Parquet (a folder someone could have sent)."""
    out = tmp_path / "export"
    with api.open_db(demo_db) as con:
        api.export_parquet(con, out)
    return out


def rewrite_manifest(folder: Path, change: callable) -> None:
    path = folder / "_logmine.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


def test_a_folder_whose_definitions_hold_copy_to_runs_nothing(folder: Path, tmp_path: Path) -> None:
    written = tmp_path / "written-by-the-folder.txt"

    def hostile(manifest: dict) -> None:
        manifest["definitions"].insert(0, f"COPY (SELECT 'owned') TO '{written}'")
        # a view that would shadow a table with a file's lines, and a macro that would read one
        manifest["definitions"].append("CREATE OR REPLACE VIEW runs AS SELECT * FROM read_csv('/etc/passwd')")
        manifest["definitions"].append(f"CREATE MACRO chosen(a, b) AS (SELECT count(*) FROM read_text('{written}'))")

    rewrite_manifest(folder, hostile)
    done = logmine("query", "runs", "--data", str(folder), "--format", "json")
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)
    assert [(r["ordinal"], r["end_reason"]) for r in runs] == [(1, "restarted"), (2, "failed"), (3, "running")]
    assert not written.exists()
    budget = json.loads(logmine("query", "memory-budget", "--data", str(folder), "--run", "3", "--format",
                                "json").stdout)
    assert budget[-1]["rank"] == "all ranks" and budget[-1]["host_cache_gb"] == 160.46


@pytest.mark.parametrize(("table", "column", "declared"), [
    ("runs", "ordinal", "INTEGER) AS ordinal FROM read_csv('/etc/passwd') --"),
    ("runs", 'ordinal" FROM read_text(\'/etc/hostname\') --', "INTEGER"),
    ("runs/../../etc", "ordinal", "INTEGER"),
])
def test_a_folder_declaring_code_as_a_name_or_type_is_refused_in_one_line(folder: Path, table: str, column: str,
                                                                          declared: str) -> None:
    def hostile(manifest: dict) -> None:
        columns = manifest["tables"].pop("runs")
        columns = {column if c == "ordinal" else c: declared if c == "ordinal" else t for c, t in columns.items()}
        manifest["tables"][table] = columns

    rewrite_manifest(folder, hostile)
    done = logmine("query", "runs", "--data", str(folder))
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"logmine: {folder / '_logmine.json'}: table ")
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_folder_connection_reads_no_file_outside_the_folder(folder: Path) -> None:
    import duckdb

    with api.open_data(folder) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (3,)
        with pytest.raises(duckdb.PermissionException):
            con.execute("SELECT * FROM read_csv('/etc/passwd')")


@pytest.mark.parametrize("statement", [
    "COPY (SELECT 1 AS a) TO '{target}'",
    "COPY runs TO '{target}' (FORMAT parquet)",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('{journal}')",
    "ATTACH '{target}' AS other",
    "INSTALL httpfs",
    "LOAD httpfs",
])
def test_logmine_sql_refuses_files_in_one_line(demo_db: Path, tmp_path: Path, statement: str) -> None:
    target = tmp_path / "out.csv"
    journal = REPO / "examples" / "demo" / "journal.txt"  # a file beside the data, not the database
    done = logmine("sql", statement.format(target=target, journal=journal), "--db", str(demo_db))
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("logmine: database error: Permission Error: "), line
    assert "disabled" in line and done.stdout == ""
    assert not target.exists()


def test_logmine_sql_still_reads_the_database(demo_db: Path) -> None:
    done = logmine("sql", "SELECT count(*) AS n FROM runs", "--db", str(demo_db), "--format", "json")
    assert done.returncode == 0 and json.loads(done.stdout) == [{"n": 3}]
    refused = logmine("sql", "SET enable_external_access = true", "--db", str(demo_db))
    assert refused.returncode == 2 and "the configuration has been locked" in refused.stderr
