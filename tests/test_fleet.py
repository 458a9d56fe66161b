"""Fleet scale: the Parquet layout of `logmine export --parquet`, queried with DuckDB (`--data`)."""

from __future__ import annotations

import gzip
import json
import math
import os
import shutil
from collections.abc import Callable
from datetime import date
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from logmine import api
from logmine.cli import main
from logmine.ingest import logs as ingest_module
from logmine.query import named_queries

from .conftest import REPO, SAMPLE, shared_path

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
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("not logmine's")
    refused = runner.invoke(main, ["export", "--db", str(demo_db), "--parquet", str(tmp_path / "mine")])
    assert refused.exit_code == 2 and (tmp_path / "mine" / "notes.txt").exists()


# Spark starts in 5-15 s and plans each query in seconds on 2 cores: the suite runs one Spark ingest (two
# hosts' journals), `runs` through the CLI (the output contract) and a few queries more;
# LOGMINE_SPARK_ALL=1 compares every named query (on 2026-12-01, 17 of 22 give DuckDB's rows;
# config-changes, requests, serving-trend, sessions and tables do not run on Spark, and say so).
SPARK_CHECKED = ["config-diff", "errors"]


@pytest.fixture(scope="module")
def spark_fleet(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - pyspark is an optional extra
    """(Spark session, the journals of two hosts, the folder `ingest --engine spark` made of them)."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("no Java runtime")
    from logmine.fleet import spark_engine

    tmp = tmp_path_factory.mktemp("fleet")
    journal = (REPO / "examples" / "demo" / "journal.txt").read_text()
    inputs = tmp / "journals"
    inputs.mkdir()
    (inputs / "gpu-box.txt").write_text(journal)
    (inputs / "gpu-two.txt").write_text(journal.replace("gpu-box", "gpu-two"))
    ingested = CliRunner().invoke(main, ["ingest", "--engine", "spark", "--master", "local[2]", str(inputs),
                                         "--out", str(tmp / "out")])
    assert ingested.exit_code == 0, ingested.output
    assert "total: 2,410 lines read" in ingested.output
    session = spark_engine.session("local[2]")
    spark_engine.register_folder(session, tmp / "out")
    yield session, inputs, tmp / "out"
    session.stop()


def spark_checked() -> list[str]:
    return named_queries.names() if os.environ.get("LOGMINE_SPARK_ALL") else SPARK_CHECKED


def test_spark_ingest_then_spark_query_gives_duckdbs_runs(spark_fleet, tmp_path: Path) -> None:  # noqa: ANN001
    """The output contract: `ingest --engine spark` then `query runs --engine spark --data OUT --format json`
    prints the objects that a DuckDB ingest and `query runs --format json` print."""
    _, inputs, out = spark_fleet
    assert (out / "runs" / "host=gpu-two" / "day=2026-03-12").is_dir()
    runner = CliRunner()
    on_spark = runner.invoke(main, ["query", "runs", "--engine", "spark", "--data", str(out), "--format", "json"])
    assert on_spark.exit_code == 0, on_spark.output
    db = tmp_path / "serial.duckdb"
    api.ingest([str(inputs)], db=db)
    on_db = runner.invoke(main, ["query", "runs", "--db", str(db), "--format", "json"])
    assert json.loads(on_spark.output) == json.loads(on_db.output)
    assert len(json.loads(on_db.output)) == 6


def test_spark_gives_the_rows_duckdb_gives(spark_fleet) -> None:  # noqa: ANN001
    from logmine.fleet import spark_engine

    spark, _, out = spark_fleet
    untranslatable = []
    with api.open_data(out) as con:
        for name in spark_checked():
            try:
                rows = spark_engine.query_rows(spark, out, name)
            except spark_engine.Untranslatable as exc:
                assert "\n" not in str(exc) and str(exc).startswith(f"query {name} ")
                untranslatable.append(name)
                continue
            expected = api.query_rows(con, name)
            assert rows.columns == expected.columns, name
            assert [normalised(list(r)) for r in rows.rows] == [normalised(list(r)) for r in expected.rows], name
    assert not set(untranslatable) & set(SPARK_CHECKED)


def test_spark_query_that_cannot_run_says_so_in_one_line(spark_fleet) -> None:  # noqa: ANN001
    from logmine.fleet import spark_engine

    spark, _, out = spark_fleet
    with pytest.raises(spark_engine.Untranslatable, match=r"^query tables does not run on Spark: .*information_sch"):
        spark_engine.query_rows(spark, out, "tables")


def folder_tables(out: Path) -> dict[str, list]:
    """What a Spark ingest's folder says of its sources: `runs` (its `source` column left out) per source
    name, the kinds of `lines` counted, the sources' paths."""
    with api.open_data(out) as con:
        runs = api.query_rows(con, "runs")
        at = runs.columns.index("source")
        by_source: dict[str, list] = {}
        for row in runs.rows:
            by_source.setdefault(row[at], []).append(normalised([v for i, v in enumerate(row) if i != at]))
        kinds = con.execute("SELECT source_id, kind, count(*) FROM lines GROUP BY ALL ORDER BY ALL").fetchall()
        sources = con.execute("SELECT source_id, path, display, compression FROM sources ORDER BY 1").fetchall()
    return {"runs": by_source, "kinds": kinds, "sources": sources}


def test_spark_ingest_reads_a_file_uri_as_it_reads_the_local_path(spark_fleet, tmp_path: Path) -> None:  # noqa: ANN001
    """`file://` goes the Hadoop way (listed by Spark's filesystem, read by `binaryFile`, the bytes ingested
    in the task) and gives the local path's tables, the URI naming the source."""
    from logmine.fleet import spark_ingest

    journal = REPO / "examples" / "demo" / "journal.txt"
    local = spark_ingest.ingest([str(journal)], tmp_path / "local")
    uri = journal.as_uri()
    remote = spark_ingest.ingest([uri], tmp_path / "uri")
    assert remote.failed == local.failed == []
    assert [(s["source_id"], s["path"], s["lines_read"]) for s in remote.sources] == [(1, uri, 1205)]
    on_path, on_uri = folder_tables(tmp_path / "local"), folder_tables(tmp_path / "uri")
    # A run's evidence names its source (`start_evidence`, `cause_line`): the URI there, the path here.
    as_uri = [[v.replace(str(journal), uri) if isinstance(v, str) else v for v in row]
              for row in on_path["runs"][str(journal)]]
    named = [[v.replace(journal.name, uri) if isinstance(v, str) and v.startswith(journal.name + ":") else v
              for v in row] for row in as_uri]
    assert on_uri["runs"][uri] in (as_uri, named) and len(on_uri["runs"][uri]) == 3
    assert on_uri["kinds"] == on_path["kinds"]
    assert on_uri["sources"] == [(1, uri, uri, None)]


def test_spark_ingest_reads_a_folder_uri_in_a_serial_ingests_order(spark_fleet, tmp_path: Path) -> None:  # noqa: ANN001
    """A folder URI: its log files recursively, numbered in a local walk's order (an empty file included,
    a gzip'd journal found by its magic); a bad URI, an unknown filesystem and a binary file cost one line
    each in `failed`; `--out` may be a `file://` URI."""
    import gzip

    from logmine.fleet import spark_ingest

    journal = (REPO / "examples" / "demo" / "journal.txt").read_bytes()
    folder = tmp_path / "fleet"
    (folder / "sub").mkdir(parents=True)
    (folder / "a-box.txt.gz").write_bytes(gzip.compress(journal))
    (folder / "b-empty.log").write_bytes(b"")
    (folder / "c-binary.log").write_bytes(bytes(range(256)) * 8)
    (folder / "notes.md").write_text("not a log: left out of a folder")
    (folder / "sub" / "d-two.log").write_bytes(journal.replace(b"gpu-box", b"gpu-two"))
    report = spark_ingest.ingest([folder.as_uri() + "/", "file:///no/such/journal.log", "nofs://host/x.log"],
                                 (tmp_path / "out").as_uri())
    base = folder.as_uri()
    assert [(s["source_id"], s["path"], s["lines_read"]) for s in report.sources] == [
        (1, f"{base}/a-box.txt.gz", 1205), (2, f"{base}/b-empty.log", 0), (4, f"{base}/sub/d-two.log", 1205)]
    assert report.failed == ["file:///no/such/journal.log: no such file or directory",
                             'nofs://host/x.log: No FileSystem for scheme "nofs"',
                             f"{base}/c-binary.log:1: binary data, not a log (use --format plain to force)"]
    tables = folder_tables(tmp_path / "out")
    assert [(sid, compression) for sid, _, _, compression in tables["sources"]] == [(1, "gzip"), (2, None), (4, None)]
    assert len(tables["runs"][f"{base}/a-box.txt.gz"]) == len(tables["runs"][f"{base}/sub/d-two.log"]) == 3


def test_spark_ingest_says_in_one_line_that_a_listed_file_is_gone(spark_fleet, tmp_path: Path,  # noqa: ANN001
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from logmine.fleet import spark_ingest
    from logmine.inputs.sources import InputError

    (tmp_path / "in").mkdir()
    gone = tmp_path / "in" / "gone.log"
    gone.write_text("a line\n")
    listed = spark_ingest.list_uri

    def list_then_remove(spark, uri: str):  # noqa: ANN001, ANN202
        found = listed(spark, uri)
        gone.unlink()
        return found

    monkeypatch.setattr(spark_ingest, "list_uri", list_then_remove)
    with pytest.raises(InputError, match=r"^Spark could not read the URIs' files: .*PATH_NOT_FOUND[^\n]*gone\.log"):
        spark_ingest.ingest([(tmp_path / "in").as_uri()], tmp_path / "out")


def test_spark_ingest_refuses_an_out_uri_in_one_line(tmp_path: Path) -> None:
    refused = CliRunner().invoke(main, ["ingest", "--engine", "spark", str(tmp_path), "--out", "s3a://bucket/out"])
    assert refused.exit_code == 2
    assert refused.output.strip().splitlines() == [
        "logmine: --out s3a://bucket/out: must be a local or mounted path (each task writes its Parquet files "
        "with DuckDB), not a URI"]


def table_fingerprints(db: Path) -> dict[str, list]:
    """Every table's rows, sorted (ingest times and the miner's binary state left out)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        found = {}
        for table, columns in con.execute("""SELECT table_name, list(column_name ORDER BY column_index)
                FROM duckdb_columns() WHERE data_type <> 'BLOB' AND column_name <> 'ingested_at'
                  AND table_name IN (SELECT table_name FROM duckdb_tables()) GROUP BY ALL""").fetchall():
            rows = con.execute(f'SELECT {", ".join(chr(34) + c + chr(34) for c in columns)} FROM "{table}"').fetchall()
            found[table] = sorted(map(repr, rows))
        return found
    finally:
        con.close()


@pytest.mark.parametrize("jobs", [2, 3])
def test_jobs_ingest_equals_a_serial_one_row_for_row(tmp_path: Path, jobs: int, monkeypatch) -> None:  # noqa: ANN001
    """With 2, each file's parse runs in a worker and the next file's starts beside it (read ahead); with 3,
    files are parsed in a pool. A file failing inside its worker must leave its source id to the next file,
    whose parse had started under the id after it, and a copy read ahead as new must still be a copy."""
    journal = (REPO / "examples" / "demo" / "journal.txt").read_text()
    inputs = tmp_path / "fleet"
    inputs.mkdir()
    (inputs / "0-node-a.log").write_text(journal.replace("gpu-box", "node-a"))
    (inputs / "1-broken.log.gz").write_bytes(b"\x1f\x8b\x08\x00not gzip at all")  # fails before its parse
    whole = gzip.compress(journal.replace("gpu-box", "node-x").encode())
    (inputs / "2-truncated.log.gz").write_bytes(whole[:len(whole) * 2 // 3])  # fails in the middle of its parse
    for n, host in [(3, "node-b"), (4, "node-c")]:
        (inputs / f"{n}-{host}.log").write_text(journal.replace("gpu-box", host))
    (inputs / "5-copy.log").write_text(journal.replace("gpu-box", "node-a"))  # a copy of 0-node-a: skipped
    session = REPO / "examples" / "demo" / "session.opencode.json"
    serial = api.ingest([str(inputs), str(session)], db=tmp_path / "serial.duckdb", jobs=1)
    monkeypatch.setattr(ingest_module, "WORKER_MIN_BYTES", 1)  # every file through a worker
    parallel = api.ingest([str(inputs), str(session)], db=tmp_path / "parallel.duckdb", jobs=jobs)
    assert [(s.source_id, s.status) for s in parallel.logs.sources] == \
        [(s.source_id, s.status) for s in serial.logs.sources] == [(1, "new"), (2, "new"), (3, "new"), (1, "copy")]
    assert [line.split(":")[0] for line in parallel.logs.failed] == \
        [line.split(":")[0] for line in serial.logs.failed] == \
        [str(inputs / "1-broken.log.gz"), str(inputs / "2-truncated.log.gz")]
    assert table_fingerprints(tmp_path / "parallel.duckdb") == table_fingerprints(tmp_path / "serial.duckdb")
    # Again: every file is known now, so the main process reads them (nothing new), as a serial ingest would.
    again = api.ingest([str(inputs)], db=tmp_path / "parallel.duckdb", jobs=jobs)
    assert {s.status for s in again.logs.sources} == {"unchanged", "copy"}
