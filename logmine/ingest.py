"""`ingest`: read inputs, parse them in batches and append the rows to DuckDB in one transaction.

Data flow: sources (bytes → lines) → parsers.envelopes (envelope → message) → parsers.sglang
(message → kind + fields) → ColumnBatch → store (DuckDB). Re-ingesting a file adds nothing; a file
that grew is read from where the last ingest stopped.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from .parsers.envelopes import FORMATS, TimeContext, detect_format, infer_context
from .parsers.events import COMMON_COLUMNS, EVENT_TABLES
from .parsers.log_lines import LINE_COLUMNS, NATIVE_COLUMNS, ColumnBatch, LineParser, table_columns
from .sources import (
    BLOCK_BYTES,
    SNIFF_BYTES,
    Input,
    InputError,
    LineBlock,
    PeekableStream,
    expand_paths,
    file_size,
    fingerprint,
    iter_line_blocks,
    looks_binary,
    open_bytes,
    read_range,
)
from .store import (
    append,
    connect,
    delete_rows,
    ensure_tables,
    find_source,
    insert_lines,
    next_source_id,
    register_lines,
    run,
    upsert_source,
)

BATCH_LINES = 50_000
TAIL_BYTES = 4096
LOG_TABLES = ["lines"] + [t.name for t in EVENT_TABLES]
Progress = Callable[[str, int, int | None], None]  # (input name, bytes done, bytes total)


@dataclass
class SourceReport:
    path: str
    source_id: int
    status: str  # new, grown, unchanged, replaced
    envelope: str | None = None
    lines_read: int = 0
    lines_typed: int = 0
    lines_untyped: int = 0
    by_kind: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict:
        return {"path": self.path, "source_id": self.source_id, "status": self.status, "format": self.envelope,
                "lines_read": self.lines_read, "lines_typed": self.lines_typed,
                "lines_untyped": self.lines_untyped, "by_kind": dict(self.by_kind.most_common())}


@dataclass
class IngestReport:
    db: str
    sources: list[SourceReport] = field(default_factory=list)

    def as_dict(self) -> dict:
        by_kind: Counter = Counter()
        for s in self.sources:
            by_kind.update(s.by_kind)
        return {
            "db": self.db,
            "lines_read": sum(s.lines_read for s in self.sources),
            "lines_typed": sum(s.lines_typed for s in self.sources),
            "lines_untyped": sum(s.lines_untyped for s in self.sources),
            "by_kind": dict(by_kind.most_common()),
            "sources": [s.as_dict() for s in self.sources],
        }


def ingest(paths: list[str], db: str | Path = "logmine.duckdb", envelope: str | None = None,
           progress: Progress | None = None) -> IngestReport:
    """Ingest log files (or `-` for stdin, or directories) into the DuckDB file `db`.

    All inputs are ingested in one transaction: if anything fails, the database is left as it was.
    """
    if envelope is not None and envelope not in FORMATS:
        raise InputError(f"unknown format {envelope!r}; choose one of {', '.join(FORMATS)}")
    inputs = expand_paths(paths)
    con = connect(db)
    report = IngestReport(str(db))
    try:
        ensure_tables(con, {name: table_columns(name) for name in LOG_TABLES})
        run(con, "BEGIN TRANSACTION")
        for inp in inputs:
            report.sources.append(ingest_log(con, inp, envelope, progress))
        run(con, "COMMIT")
    except BaseException:
        rollback(con)
        raise
    finally:
        con.close()
    return report


def rollback(con: duckdb.DuckDBPyConnection) -> None:
    with contextlib.suppress(duckdb.Error):  # the transaction may not have started
        run(con, "ROLLBACK")


def ingest_log(con: duckdb.DuckDBPyConnection, inp: Input, envelope: str | None,
               progress: Progress | None = None) -> SourceReport:
    previous = find_source(con, inp.path) if inp.path != "-" else None
    start_offset, first_line, status = plan_resume(con, inp, previous)
    source_id = previous["source_id"] if previous else next_source_id(con)
    report = SourceReport(inp.display, source_id, status)
    if status == "unchanged":
        report.envelope = previous["envelope"]
        return report

    stream = PeekableStream(open_bytes(inp, start_offset))
    try:
        if start_offset == 0 and envelope is None and looks_binary(stream.head):
            raise InputError(f"{inp.display}:1: binary data, not a log (use --format plain to force)")
        sample = [line for line, _ in _sample_lines(stream.head)]
        if previous and status == "grown":
            fmt = previous["envelope"]
            time = TimeContext(previous["year"], _seconds(previous["utc_offset_s"]))
            fallback_date = previous["fallback_date"]
        else:
            fmt = envelope or detect_format(sample[:200])
            fallback_date = datetime.fromtimestamp(inp.mtime or datetime.now().timestamp()).strftime("%Y-%m-%d")
            time = infer_context(fmt, sample, int(fallback_date[:4]))
        report.envelope = fmt
        parser = LineParser(source_id, fmt, time, fallback_date)
        hasher = hashlib.blake2b(digest_size=16)
        line_no = first_line - 1
        batch = ColumnBatch()
        partial = False
        consumed = 0
        for block in iter_line_blocks(stream, hasher):
            lines, bad = block.columns()
            parser.parse_block(line_no + 1, lines, bad, batch)
            line_no += len(lines)
            partial = block.partial_last
            consumed = block.end_offset
            if len(batch) >= BATCH_LINES:
                flush(con, batch, report)
                batch = ColumnBatch()
            if progress:
                progress(inp.display, start_offset + consumed, inp.size)
        parser.finish(batch)
        flush(con, batch, report)
    finally:
        if inp.path != "-":
            stream.close()

    bytes_done = start_offset + consumed
    lines_done = line_no
    if partial:
        # Keep the unterminated last line, but re-read it if the file grows.
        last_len = len(_last_line_bytes(inp, bytes_done)) if inp.resumable else 0
        bytes_done -= last_len
        lines_done -= 1
    upsert_source(con, {
        "source_id": source_id, "path": inp.path, "display": inp.display, "kind": "log", "envelope": fmt,
        "compression": inp.compression, "size_bytes": inp.size, "bytes_ingested": bytes_done,
        "lines_ingested": lines_done, "partial_last_line": partial,
        "head_hash": _head_hash(inp, bytes_done), "tail_hash": _tail_hash(inp, bytes_done),
        "content_hash": hasher.hexdigest() if start_offset == 0 else (previous or {}).get("content_hash"),
        "year": time.year, "utc_offset_s": int(time.utc_offset.total_seconds()),
        "fallback_date": fallback_date, "ingested_at": datetime.now(),
    })
    if inp.path == "-":
        dedupe_stdin(con, report, hasher.hexdigest())
    return report


def plan_resume(con: duckdb.DuckDBPyConnection, inp: Input, previous: dict | None) -> tuple[int, int, str]:
    """(byte offset, first line number, status) for this input given what was ingested before."""
    if previous is None:
        return 0, 1, "new"
    if inp.resumable:
        done = previous["bytes_ingested"]
        size = file_size(inp.path)
        same_prefix = size >= done and _head_hash(inp, done) == previous["head_hash"] \
            and _tail_hash(inp, done) == previous["tail_hash"]
        if same_prefix:
            if size == done and not previous["partial_last_line"]:
                return 0, 1, "unchanged"
            if size == done + len(_last_line_bytes(inp, size)) and previous["partial_last_line"] \
                    and size == previous["size_bytes"]:
                return 0, 1, "unchanged"
            delete_rows(con, LOG_TABLES, previous["source_id"], previous["lines_ingested"] + 1)
            return done, previous["lines_ingested"] + 1, "grown"
    elif inp.size == previous["size_bytes"] and _head_hash(inp, SNIFF_BYTES) == previous["head_hash"]:
        return 0, 1, "unchanged"
    delete_rows(con, LOG_TABLES, previous["source_id"])
    return 0, 1, "replaced"


def flush(con: duckdb.DuckDBPyConnection, batch: ColumnBatch, report: SourceReport) -> None:
    tables = batch.tables()
    lines = tables.pop("lines", None)
    if lines is None:
        lines = pa.table({name: pa.array([], pa.string()) for name in LINE_COLUMNS})
    register_lines(con, lines, LINE_COLUMNS, NATIVE_COLUMNS)
    try:
        insert_lines(con, "lines", LINE_COLUMNS)
        for table, data in tables.items():
            append(con, table, data, table_columns(table), NATIVE_COLUMNS, inherit=COMMON_COLUMNS)
    finally:
        con.unregister("_logmine_lines")
    kinds = Counter({row["values"]: row["counts"] for row in pc.value_counts(lines.column("kind")).to_pylist()})
    untyped = kinds.pop(None, 0)
    report.lines_read += lines.num_rows
    report.lines_untyped += untyped
    report.lines_typed += lines.num_rows - untyped
    report.by_kind.update(kinds)


def dedupe_stdin(con: duckdb.DuckDBPyConnection, report: SourceReport, content_hash: str) -> None:
    """stdin has no path: the same bytes piped twice are recognised by their hash."""
    earlier = con.execute("SELECT min(source_id) FROM sources WHERE content_hash = ? AND source_id <> ?",
                          [content_hash, report.source_id]).fetchall()[0][0]
    if earlier is not None:
        delete_rows(con, LOG_TABLES, report.source_id)
        run(con, "DELETE FROM sources WHERE source_id = ?", [report.source_id])
        report.source_id, report.status = earlier, "unchanged"
        report.lines_read = report.lines_typed = report.lines_untyped = 0
        report.by_kind.clear()


def _sample_lines(head: bytes) -> list[tuple[str, bool]]:
    cut = head.rfind(b"\n")
    data = head[:cut] if cut >= 0 else head
    return LineBlock(data, len(data), False).lines()


def _head_hash(inp: Input, upto: int) -> str | None:
    if not inp.resumable and inp.path == "-":
        return None
    if not inp.resumable:
        with open_bytes(inp) as stream:
            return fingerprint(stream.read(SNIFF_BYTES))
    return fingerprint(read_range(inp.path, 0, min(upto, SNIFF_BYTES)))


def _tail_hash(inp: Input, upto: int) -> str | None:
    if not inp.resumable:
        return None
    return fingerprint(read_range(inp.path, upto - TAIL_BYTES, min(upto, TAIL_BYTES)))


def _last_line_bytes(inp: Input, end: int) -> bytes:
    """The bytes after the last newline before `end` (an unterminated final line)."""
    start = max(0, end - BLOCK_BYTES)
    data = read_range(inp.path, start, end - start)
    return data[data.rfind(b"\n") + 1:]


def _seconds(value: int | None) -> timedelta:
    return timedelta(seconds=value or 0)
