"""`logmine ingest --engine spark`: the same parsers and derivation, run by Spark tasks, one input file each.

Design (the simple, honest one): the driver sorts what it was given into log files, numbers them as a serial
ingest would (source ids in the same order, the same display names), and hands Spark one row per file.
Each task (`mapInArrow`, so rows travel as Arrow batches) ingests its file with logmine's own ingest into a
private DuckDB file in its scratch directory: parse, typed tables, and the derivation that is per source
(runs, configs, config diffs, the `_by_run` views). It renumbers the source, then appends its tables to
the shared output in the layout of `logmine.partitioned` (files named after the source, so tasks never write
the same file). A fleet keeps one journal per host, so a host's runs are segmented in one task; 50 hosts
are 50 tasks spread over the cluster's cores. The driver finishes with what spans sources: the tables that are not
per source (configs, settings) kept once per distinct row, and an empty file for a table no task filled.

What does not span hosts: the untyped lines' templates are mined per host (`unparsed` counts within each
host's templates), and agent transcripts are not read here (ingest them with the DuckDB engine).
The output folder must be a path every executor can write (local in `local[N]`, a shared mount on a
cluster); the inputs too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .partitioned import MANIFEST, read_manifest, table_columns, view_statements, write_manifest

if TYPE_CHECKING:
    import pyarrow as pa

RESULT_SCHEMA = "source_id INT, display STRING, lines_read BIGINT, lines_typed BIGINT, failed STRING"


@dataclass
class SparkIngestReport:
    out: str
    sources: list[dict]
    failed: list[str]

    def as_dict(self) -> dict:
        return {"out": self.out, "lines_read": sum(s["lines_read"] for s in self.sources),
                "lines_typed": sum(s["lines_typed"] for s in self.sources), "sources": self.sources,
                "failed": self.failed}


def ingest(paths: list[str], out: str | Path, master: str = "local[2]", envelope: str | None = None,
           redact: bool = False) -> SparkIngestReport:
    """Parse the log files under `paths` on Spark into the Parquet layout at `out` (a folder an earlier
    ingest wrote is replaced; `redact` as for `api.ingest`)."""
    from .sources import classify_inputs
    from .spark_engine import session

    logs, transcripts, skipped = classify_inputs(paths)
    skipped += [f"{path}: an agent transcript: the Spark engine reads logs only (ingest it with the DuckDB engine)"
                for path, _ in transcripts]
    out = Path(out).resolve()
    if out.exists() and any(out.iterdir()):
        if not (out / MANIFEST).exists():  # never remove a folder that logmine did not write
            from .sources import InputError

            raise InputError(f"{out}: not empty and not a logmine Parquet folder; give a new or empty --out")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    spark = session(master, app="logmine-ingest")
    files = spark.createDataFrame([(i + 1, path) for i, path in enumerate(logs)], "source_id INT, path STRING")
    tasks = files.repartition(max(1, len(logs)), "source_id")  # one file per task
    results = tasks.mapInArrow(lambda batches: _ingest_batches(batches, str(out), envelope, redact), RESULT_SCHEMA)
    rows = sorted(results.collect(), key=lambda r: r["source_id"])
    finish(out)
    failed = skipped + [r["failed"] for r in rows if r["failed"]]
    sources = [{"source_id": r["source_id"], "path": r["display"], "lines_read": r["lines_read"],
                "lines_typed": r["lines_typed"]} for r in rows if not r["failed"]]
    return SparkIngestReport(str(out), sources, failed)


def _ingest_batches(batches: Iterator[pa.RecordBatch], out: str, envelope: str | None,
                    redact: bool) -> Iterator[pa.RecordBatch]:
    """The task: each (source_id, path) row of each Arrow batch ingested and appended to `out`."""
    import pyarrow as pa

    for batch in batches:
        results = [ingest_one(int(sid), path, Path(out), envelope, redact)
                   for sid, path in zip(batch.column("source_id").to_pylist(), batch.column("path").to_pylist(),
                                        strict=True)]
        yield pa.RecordBatch.from_pylist(results, schema=pa.schema([
            ("source_id", pa.int32()), ("display", pa.string()), ("lines_read", pa.int64()),
            ("lines_typed", pa.int64()), ("failed", pa.string())]))


def ingest_one(source_id: int, path: str, out: Path, envelope: str | None, redact: bool = False) -> dict:
    """One log file through logmine's ingest into a scratch database, renumbered as source `source_id`,
    appended to the layout at `out`."""
    from . import api
    from .partitioned import export
    from .store import connect, execute

    scratch = Path(tempfile.mkdtemp(prefix="logmine-spark-"))
    try:
        db = scratch / "one.duckdb"
        report = api.ingest([path], db=db, envelope=envelope, redact=redact, jobs=1).logs
        if report.failed:
            return {"source_id": source_id, "display": path, "lines_read": 0, "lines_typed": 0,
                    "failed": report.failed[0]}
        con = connect(db)
        try:
            for table, columns in table_columns(con).items():
                if "source_id" in columns:
                    execute(con, f'UPDATE "{table}" SET source_id = ? WHERE source_id = 1', [source_id])
            export(con, out, file_prefix=f"source{source_id:06d}", append=True)
            # Every task writes the same definitions; a rename makes each write whole.
            _write_manifest_atomically(out, table_columns(con), view_statements(con))
        finally:
            con.close()
        (summary,) = report.sources
        return {"source_id": source_id, "display": summary.path, "lines_read": summary.lines_read,
                "lines_typed": summary.lines_typed, "failed": None}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _write_manifest_atomically(out: Path, tables: dict, views: list[str]) -> None:
    staging = Path(tempfile.mkdtemp(dir=out, prefix=".manifest-"))
    write_manifest(staging, tables, views)
    os.replace(staging / MANIFEST, out / MANIFEST)
    staging.rmdir()


def finish(out: Path) -> None:
    """What spans the tasks: a table that is not per source (configs, settings) once per distinct row (two
    hosts may run one config), and an empty file with its schema for each table that no task filled, so
    that every reader finds each table."""
    import duckdb

    if not (out / MANIFEST).exists():
        from .sources import InputError

        raise InputError(f"{out}: no input could be read, nothing was written")
    manifest = read_manifest(out)
    con = duckdb.connect(":memory:")
    try:
        for table, columns in manifest["tables"].items():
            folder = out / table
            folder.mkdir(exist_ok=True)
            files = sorted(folder.glob("source*.parquet"))  # one per task, beside no partition folder
            if "source_id" not in columns and len(files) > 1:
                merged = out / f".{table}.parquet"
                con.execute(f"COPY (SELECT DISTINCT * FROM read_parquet('{folder}/source*.parquet') ORDER BY ALL) "
                            f"TO '{merged}' (FORMAT parquet, COMPRESSION zstd)")
                for f in files:
                    f.unlink()
                os.replace(merged, folder / "data.parquet")
            if not any(folder.rglob("*.parquet")):
                body = ", ".join(f'CAST(NULL AS {t}) AS "{c}"' for c, t in columns.items())
                con.execute(f"COPY (SELECT {body} LIMIT 0) TO '{folder / 'empty.parquet'}' (FORMAT parquet)")
    finally:
        con.close()
