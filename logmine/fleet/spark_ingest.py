"""`logmine ingest --engine spark`: the same parsers and derivation, run by Spark tasks, one input file each.

Design (the simple, honest one): the driver sorts what it was given into log files, numbers them as a serial
ingest would (source ids in the same order, the same display names), and hands Spark one row per file.
Each task (`mapInArrow`, so rows travel as Arrow batches) ingests its file with logmine's own ingest into a
private DuckDB file in its scratch directory: parse, typed tables, and the derivation that is per source
(runs, configs, config diffs, the `_by_run` views). It renumbers the source, then appends its tables to
the shared output in the layout of `logmine.fleet.parquet` (files named after the source, so tasks never write
the same file). A fleet keeps one journal per host, so a host's runs are segmented in one task; 50 hosts
are 50 tasks spread over the cluster's cores. The driver finishes with what spans sources: the tables that are not
per source (configs, settings) kept once per distinct row, and an empty file for a table no task filled.

What does not span hosts: the untyped lines' templates are mined per host (`unparsed` counts within each
host's templates), and agent transcripts are not read here (ingest them with the DuckDB engine).
The output folder must be a path every executor can write (local in `local[N]`, a shared mount on a
cluster): `file://` is taken as a local path, any other URI is refused in one line.

Inputs: a local or mounted path is listed by the driver (`sources.classify_inputs`) and each task opens its
file by that path, so it must be readable by every executor. A path with a URI scheme (`hdfs://`, `s3a://`,
`gs://`, `abfs://`, `file://`, ...) is read by the Hadoop filesystem that Spark is configured with (its
connector jars and credentials are Spark's affair, e.g. `spark.hadoop.*` in spark-defaults): the driver lists
it through that filesystem (a folder recursively, keeping the files with a log suffix, sorted as a local
walk sorts them, so source ids come in the order a serial ingest of the same files would give; empty files
included, which Spark's own file sources drop), and Spark's `binaryFile` source reads each file's bytes,
which reach the task as an Arrow binary value. The task writes them to its scratch folder under the file's
name and mtime (the year of a syslog line without one comes from the mtime) and ingests that copy with
logmine's own ingest, so gzip and zstd are found by their magic as for a local file; the source's `path` and
`display` are the URI, so `sources` and citations name it, not the copy. A URI that does not exist, names a
filesystem Spark has no connector for, or holds no log file, and a file Spark cannot read, costs one line
in `failed`.

Memory: a URI's file is whole in its task's memory, more than once (the JVM's row, the Arrow batch,
Python's bytes; tasks take one file per Arrow batch), and once more on its scratch disk; files are shuffled
to one task each, so their bytes pass through Spark's shuffle too. Spark's `binaryFile` reads files up to
2 GB: a larger one is skipped with a line in `failed` (copy it to a mounted path, or split it). Not
supported on URIs: agent transcripts (a URI is always read as a log: a transcript there is not recognised),
Spark Connect sessions (the listing uses the classic session's Hadoop filesystem), and file names with
glob characters (`[`, `{`, `*`, `?`) are escaped for `binaryFile` but not otherwise tested.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .parquet import MANIFEST, read_manifest, table_columns, view_statements, write_manifest

if TYPE_CHECKING:
    import pyarrow as pa

RESULT_SCHEMA = "source_id INT, display STRING, lines_read BIGINT, lines_typed BIGINT, failed STRING"
TASK_SCHEMA = "source_id INT, path STRING, content BINARY, mtime DOUBLE"
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
BINARY_FILE_LIMIT = 2**31 - 1  # Spark's binaryFile refuses a longer file
GLOB = re.compile(r"([\\\[\]{}*?])")


def is_uri(path: str) -> bool:
    """Whether `path` names a Hadoop filesystem (`scheme://...`) rather than a local or mounted path."""
    return bool(URI.match(path))


@dataclass
class RemoteFile:
    """A file a URI names, as the Hadoop filesystem lists it."""
    hadoop_path: str  # the path as Hadoop (and so `binaryFile`'s `path` column) spells it
    display: str  # what `sources` and the report name it: the URI as given, or listed under a folder
    size: int
    mtime: float  # seconds


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
    ingest wrote is replaced once the new one is complete; `redact` as for `logmine.ingest.transaction.ingest`)."""
    from ..inputs.sources import InputError
    from ..store import written_like
    from .spark_engine import session

    out = local_out(str(out))
    if out.exists() and any(out.iterdir()) and not (out / MANIFEST).exists():
        raise InputError(f"{out}: not empty and not a logmine Parquet folder; give a new or empty --out")
    # PySpark or Java missing: refused here, nothing touched. The export holds what the logs hold: its owner's
    # alone (the umask the Spark processes started here inherit; the staging folder below is 0700).
    with written_like(None):
        spark = session(master, app="logmine-ingest")
    # The new export is written beside the old one, which it replaces only once complete: a failure (no input
    # read, Spark lost, Ctrl-C) leaves the old export as it was.
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    try:
        try:
            report = _ingest_into(spark, paths, staging, envelope, redact)
        except InputError as exc:
            raise InputError(str(exc).replace(str(staging), str(out))) from None
        _swap_in(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    report.out = str(out)
    return report


def _swap_in(staging: Path, out: Path) -> None:
    """`staging` becomes `out`; an old `out` is moved aside first and removed once the new one is in place."""
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.rename(out, old / out.name)
    os.rename(staging, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _ingest_into(spark: object, paths: list[str], out: Path, envelope: str | None, redact: bool) -> SparkIngestReport:
    from itertools import groupby

    from ..inputs.sources import InputError, classify_inputs

    # In the order named: a run of local paths sorted as today, each URI listed by Spark's filesystem.
    inputs: list[str | RemoteFile] = []
    skipped: list[str] = []
    for remote, group in groupby(paths, key=is_uri):
        if remote:
            for uri in group:
                found, problems = list_uri(spark, uri)
                inputs += found
                skipped += problems
            continue
        found = classify_inputs(list(group))
        inputs += found.logs
        skipped += found.skipped + [f"{path}: an agent transcript: the Spark engine reads logs only (ingest it "
                                    "with the DuckDB engine)" for path, _ in found.transcripts]
    out.mkdir(parents=True, exist_ok=True)
    batch_rows = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(batch_rows)
    spark.conf.set(batch_rows, "1")  # a task holds one file's bytes at a time
    try:
        tasks = task_frame(spark, inputs).repartition(max(1, len(inputs)), "source_id")  # one file per task
        results = tasks.mapInArrow(lambda batches: _ingest_batches(batches, str(out), envelope, redact),
                                   RESULT_SCHEMA)
        rows = sorted(results.collect(), key=lambda r: r["source_id"])
    except Exception as exc:
        if not any(isinstance(item, RemoteFile) for item in inputs):
            raise
        # binaryFile refuses a named file that is gone since the listing before it reads any.
        raise InputError(f"Spark could not read the URIs' files: {_java_problem(exc)}") from exc
    finally:
        spark.conf.set(batch_rows, before)
    done = {r["source_id"] for r in rows}
    unread = [f"{item.display}: Spark could not read it" for sid, item in enumerate(inputs, 1)
              if sid not in done and isinstance(item, RemoteFile)]  # skipped by binaryFile's ignore options
    finish(out)
    failed = skipped + [r["failed"] for r in rows if r["failed"]] + unread
    sources = [{"source_id": r["source_id"], "path": r["display"], "lines_read": r["lines_read"],
                "lines_typed": r["lines_typed"]} for r in rows if not r["failed"]]
    return SparkIngestReport(str(out), sources, failed)


def _ingest_batches(batches: Iterator[pa.RecordBatch], out: str, envelope: str | None,
                    redact: bool) -> Iterator[pa.RecordBatch]:
    """The task: each (source_id, path) row of each Arrow batch ingested and appended to `out`."""
    import pyarrow as pa

    for batch in batches:
        results = [ingest_one(int(row["source_id"]), row["path"], Path(out), envelope, redact, row["content"],
                              row["mtime"]) for row in batch.to_pylist()]
        yield pa.RecordBatch.from_pylist(results, schema=pa.schema([
            ("source_id", pa.int32()), ("display", pa.string()), ("lines_read", pa.int64()),
            ("lines_typed", pa.int64()), ("failed", pa.string())]))


def ingest_one(source_id: int, path: str, out: Path, envelope: str | None, redact: bool = False,
               content: bytes | None = None, mtime: float | None = None) -> dict:
    """One log file through logmine's ingest into a scratch database, renumbered as source `source_id`,
    appended to the layout at `out`. Given its `content` (a URI's bytes, read by Spark), the file is that
    content, written to the scratch folder with its `mtime`, and `path` is the URI that `sources` names."""
    from ..ingest.transaction import ingest
    from ..store import connect, execute
    from .parquet import export

    scratch = Path(tempfile.mkdtemp(prefix="logmine-spark-"))
    try:
        db = scratch / "one.duckdb"
        local = path
        if content is not None:
            copy = scratch / "input" / (_file_name(path) or "input")
            copy.parent.mkdir()
            copy.write_bytes(content)
            del content
            if mtime is not None:
                os.utime(copy, (mtime, mtime))
            local = str(copy)
        report = ingest([local], db=db, envelope=envelope, redact=redact, jobs=1).logs
        if report.failed:
            return {"source_id": source_id, "display": path, "lines_read": 0, "lines_typed": 0,
                    "failed": report.failed[0].replace(local, path)}
        con = connect(db)
        try:
            if local != path:  # the URI, not the scratch copy, is the source
                execute(con, "UPDATE sources SET path = ?, display = ? WHERE source_id = 1", [path, path])
            for table, columns in table_columns(con).items():
                for column in ("source_id", "run_source_id"):  # a per-rank event file's run is its own
                    if column in columns:
                        execute(con, f'UPDATE "{table}" SET {column} = ? WHERE {column} = 1', [source_id])
            export(con, out, file_prefix=f"source{source_id:06d}", append=True)
            # Every task writes the same definitions; a rename makes each write whole.
            _write_manifest_atomically(out, table_columns(con), view_statements(con))
        finally:
            con.close()
        (summary,) = report.sources
        return {"source_id": source_id, "display": path if local != path else summary.path,
                "lines_read": summary.lines_read,
                "lines_typed": summary.lines_typed, "failed": None}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _file_name(uri: str) -> str:
    """The last part of a URI's path, decoded, as a local file name."""
    from urllib.parse import unquote

    name = unquote(uri.rstrip("/").rsplit("/", 1)[-1])
    return "".join(c if c not in "\\/\0" else "_" for c in name).lstrip(".")[:200]


def local_out(out: str) -> Path:
    """The output folder as a local path: `file://` is one; another URI is refused (DuckDB writes the files)."""
    from urllib.parse import unquote, urlparse

    if is_uri(out) or out.startswith("file:/"):
        parsed = urlparse(out)
        if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
            from ..inputs.sources import InputError

            raise InputError(f"--out {out}: must be a local or mounted path (each task writes its Parquet files "
                             "with DuckDB), not a URI")
        out = unquote(parsed.path)
    return Path(out).resolve()


def list_uri(spark: object, given: str) -> tuple[list[RemoteFile], list[str]]:
    """([the files `given` names, as a serial ingest would order them], [a line saying why it gave none]),
    listed by the Hadoop filesystem Spark is configured with: a file as it is, a folder's files with a log's
    name (rotated copies too), recursively."""
    from ..inputs.sources import LOG_SUFFIXES, named_like_a_log

    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return [], [f"{given}: URIs need a classic Spark session (not Spark Connect) to list them"]
    try:
        root = jvm.org.apache.hadoop.fs.Path(given)
        fs = root.getFileSystem(spark._jsc.hadoopConfiguration())  # type: ignore[attr-defined]
        status = fs.getFileStatus(root)
        if not status.isDirectory():
            return _remote([(status, given)], given)
        prefix = status.getPath().toString().rstrip("/") + "/"
        found = []
        listing = fs.listFiles(root, True)
        while listing.hasNext():
            child = listing.next()
            name = child.getPath().toString()
            if named_like_a_log(child.getPath().getName()):
                found.append((child, _uri_display(name)))
    except Exception as exc:  # noqa: BLE001 - Hadoop's errors reach Python as Py4JJavaError
        return [], [f"{given}: {_java_problem(exc)}"]
    if not found:
        return [], [f"{given}: no log files ({', '.join(LOG_SUFFIXES)}) in it"]
    # As `walk_directory` sorts: by the names of the folders on the way, then the file's.
    found.sort(key=lambda f: f[0].getPath().toString()[len(prefix):].split("/"))
    return _remote(found, given)


def _remote(found: list, given: str) -> tuple[list[RemoteFile], list[str]]:
    files, problems = [], []
    for status, display in found:
        if status.getLen() > BINARY_FILE_LIMIT:
            problems.append(f"{display}: {status.getLen():,} bytes: Spark reads a URI's file up to 2 GB "
                            "(copy it to a mounted path, or split it)")
            continue
        files.append(RemoteFile(status.getPath().toString(), display, status.getLen(),
                                status.getModificationTime() / 1000))
    return files, problems


def _uri_display(hadoop_path: str) -> str:
    """Hadoop's `file:/x` as `file:///x` (a URI without authority, as users write it)."""
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*):/(?!/)", r"\1:///", hadoop_path)


def _java_problem(exc: Exception) -> str:
    """One line for an error of the Hadoop filesystem, without Py4J's wrapping."""
    java = getattr(exc, "java_exception", None)
    if java is None:
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    if java.getClass().getName() == "java.io.FileNotFoundException":
        return "no such file or directory"
    message = java.getMessage() or java.getClass().getName()
    return message.strip().splitlines()[0][:300]


def task_frame(spark: object, inputs: list[str | RemoteFile]) -> object:
    """One row per input, numbered as a serial ingest numbers them: (source_id, path, content, mtime); a local
    path has no content (its task opens it), a URI's file has its bytes, read by Spark's `binaryFile`."""
    from pyspark.sql import functions as F  # noqa: N812 - as PySpark writes it

    given = [(sid, item, None, None) if isinstance(item, str) else
             (sid, item.display, b"", item.mtime) for sid, item in enumerate(inputs, 1)
             if isinstance(item, str) or item.size == 0]  # Spark's file sources skip empty files
    frame = spark.createDataFrame(given, TASK_SCHEMA)  # type: ignore[attr-defined]
    remote = [(sid, item.display, item.hadoop_path, item.mtime) for sid, item in enumerate(inputs, 1)
              if isinstance(item, RemoteFile) and item.size > 0]
    if not remote:
        return frame
    ids = spark.createDataFrame(remote, "source_id INT, path STRING, hadoop_path STRING, mtime DOUBLE")  # type: ignore[attr-defined]
    # A file Spark cannot read (gone, refused) is dropped instead of failing the job; the driver names it.
    content = (spark.read.format("binaryFile").option("ignoreMissingFiles", "true")  # type: ignore[attr-defined]
               .option("ignoreCorruptFiles", "true")
               .load([GLOB.sub(r"\\\1", path) for path in sorted({r[2] for r in remote})])
               .select(F.col("path").alias("hadoop_path"), "content"))
    read = content.join(F.broadcast(ids), "hadoop_path").select("source_id", "path", "content", "mtime")
    return frame.unionByName(read)


def _write_manifest_atomically(out: Path, tables: dict, views: list[str]) -> None:
    staging = Path(tempfile.mkdtemp(dir=out, prefix=".manifest-"))
    write_manifest(staging, tables, views)
    os.replace(staging / MANIFEST, out / MANIFEST)
    staging.rmdir()


def finish(out: Path) -> None:
    """What spans the tasks: a table that is not per source (configs, settings) once per distinct row (two
    hosts may run one config), and an empty file with its schema for each table that no task filled, so
    that every reader finds each table."""
    from ..store import connect

    if not (out / MANIFEST).exists():
        from ..inputs.sources import InputError

        raise InputError(f"{out}: no input could be read, nothing was written")
    manifest = read_manifest(out)
    con = connect(":memory:")
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
