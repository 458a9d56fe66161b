"""Ingest coding-agent transcripts: sessions, messages, tool calls, and what the agent ran and wrote.

Readers in `parsers.transcripts` yield normalised records; here they are stored and enriched: shell
commands split into host and remote command, files written (heredoc, tee, write/edit tools), unit
files and launch commands turned into typed server-args snapshots, and journal text the agent saw in
tool outputs parsed by the same SGLang parsers as a journal. Times are stored in UTC.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from functools import cache
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..parsers.envelopes import TimeContext, detect_format
from ..parsers.file_tools import file_writes_from_tool
from ..parsers.launch_config import (
    config_from_unit_or_command,
    config_in_process_list,
    parse_launch_command,
    parse_unit_file,
)
from ..parsers.log_lines import ColumnBatch, LineParser
from ..parsers.sglang_classifier import Classifier
from ..parsers.shell_commands import config_reads, split_command
from ..parsers.transcripts.common import classify_ending
from ..parsers.transcripts.detect import read_transcripts
from ..parsers.transcripts.model import Message, ParseProblem, Part, Session, ToolCall, UnknownRecord, type_problem
from ..parsers.transcripts.record_kinds import session_event
from ..store import SavedRows, append, check_columns, create_tables, execute, next_source_id, upsert_source
from . import interrupts
from .file_contents import FileContents
from .redact import Redactor
from .worker.processes import release_free_memory

TABLES: dict[str, dict[str, str]] = {
    "sessions": {"source_id": "INTEGER", "id": "VARCHAR", "format": "VARCHAR", "parent_id": "VARCHAR",
                 "title": "VARCHAR", "cwd": "VARCHAR", "version": "VARCHAR", "started_at": "TIMESTAMP",
                 "ended_at": "TIMESTAMP", "path": "VARCHAR", "extra": "JSON"},
    "messages": {"source_id": "INTEGER", "session_id": "VARCHAR", "id": "VARCHAR", "idx": "INTEGER",
                 "role": "VARCHAR", "created_at": "TIMESTAMP", "completed_at": "TIMESTAMP", "model": "VARCHAR",
                 "provider": "VARCHAR", "input_tokens": "BIGINT", "output_tokens": "BIGINT",
                 "reasoning_tokens": "BIGINT", "cache_read_tokens": "BIGINT", "cache_write_tokens": "BIGINT",
                 "cost_usd": "DOUBLE", "text": "VARCHAR", "is_sidechain": "BOOLEAN", "agent_id": "VARCHAR",
                 "source_line": "BIGINT"},
    "parts": {"source_id": "INTEGER", "session_id": "VARCHAR", "message_id": "VARCHAR", "id": "VARCHAR",
              "idx": "INTEGER", "type": "VARCHAR", "text": "VARCHAR", "data": "JSON"},
    "tool_calls": {"source_id": "INTEGER", "session_id": "VARCHAR", "message_id": "VARCHAR",
                   "message_index": "INTEGER", "call_id": "VARCHAR", "tool": "VARCHAR", "input": "JSON",
                   "output": "VARCHAR", "status": "VARCHAR", "is_error": "BOOLEAN", "exit_code": "INTEGER",
                   "started_at": "TIMESTAMP", "ended_at": "TIMESTAMP", "duration_s": "DOUBLE",
                   "child_session_id": "VARCHAR", "ended_by": "VARCHAR"},
    "unknown_records": {"source_id": "INTEGER", "session_id": "VARCHAR", "path": "VARCHAR", "line": "BIGINT",
                        "record_type": "VARCHAR", "raw": "VARCHAR", "reason": "VARCHAR"},
    "transcript_problems": {"source_id": "INTEGER", "path": "VARCHAR", "line": "BIGINT", "message": "VARCHAR"},
    "session_events": {"source_id": "INTEGER", "session_id": "VARCHAR", "path": "VARCHAR", "line": "BIGINT",
                       "kind": "VARCHAR", "happened_at": "TIMESTAMP", "data": "JSON"},
    "commands": {"source_id": "INTEGER", "session_id": "VARCHAR", "message_id": "VARCHAR",
                 "message_index": "INTEGER", "call_id": "VARCHAR", "step": "INTEGER", "host": "VARCHAR",
                 "user": "VARCHAR", "command": "VARCHAR", "started_at": "TIMESTAMP", "exit_code": "INTEGER"},
    "file_writes": {"source_id": "INTEGER", "session_id": "VARCHAR", "message_id": "VARCHAR",
                    "message_index": "INTEGER", "call_id": "VARCHAR", "step": "INTEGER", "host": "VARCHAR",
                    "path": "VARCHAR", "method": "VARCHAR", "append": "BOOLEAN", "content": "VARCHAR",
                    "written_at": "TIMESTAMP"},
    "config_snapshots": {"source_id": "INTEGER", "session_id": "VARCHAR", "message_id": "VARCHAR",
                         "message_index": "INTEGER", "call_id": "VARCHAR", "host": "VARCHAR", "path": "VARCHAR",
                         "origin": "VARCHAR", "written_at": "TIMESTAMP", "args": "JSON"},
    "embedded_lines": {"source_id": "INTEGER", "session_id": "VARCHAR", "message_id": "VARCHAR",
                       "message_index": "INTEGER", "call_id": "VARCHAR", "line_in_output": "INTEGER",
                       "kind": "VARCHAR", "log_ts": "TIMESTAMP", "tp": "SMALLINT", "message": "VARCHAR",
                       "seen_at": "TIMESTAMP"},
}
BATCH_ROWS = 1000  # rows of one table held before they are stored
EMBEDDED_BATCH_LINES = 50_000  # tool-output lines held before they are parsed, as one block per envelope
SHELL_TOOLS = {"bash", "shell", "shell_command", "exec_command", "local_shell", "local_shell_call", "run_command",
               "terminal"}


@dataclass
class TranscriptReport:
    path: str
    source_id: int
    status: str
    format: str | None = None
    sessions: int = 0
    messages: int = 0
    tool_calls: int = 0
    unknown_records: int = 0
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    create_tables(con, TABLES)


def ingest_transcript(con: duckdb.DuckDBPyConnection, path: Path, fmt: str | None,
                      redactor: Redactor | None = None) -> TranscriptReport:
    """Store one transcript file or directory (every session under it); re-ingesting adds nothing.

    Records are stored in batches as they are read, so a transcript of any size costs the memory of a
    batch; a file that fails part-way gets its earlier rows back (`SavedRows`)."""
    resolved = str(path.resolve())
    fingerprint = _fingerprint(path)
    previous = execute(con, "SELECT source_id, content_hash FROM sources WHERE path = ? AND kind = 'transcript'",
                   [resolved])
    if previous and previous[0][1] == fingerprint:
        return TranscriptReport(str(path), previous[0][0], "unchanged", fmt)
    source_id = previous[0][0] if previous else next_source_id(con)
    report = TranscriptReport(str(path), source_id, "replaced" if previous else "new", fmt)
    known_sessions = {r[0] for r in execute(con, "SELECT id FROM sessions WHERE source_id <> ?", [source_id])}
    saved = SavedRows(con, TABLES, source_id, from_line=None, keep=bool(previous))
    try:
        store_records(path, report, known_sessions, TableWriter(con, redactor), fmt)
    except duckdb.Error:
        raise  # the transaction itself is in doubt
    except BaseException:
        saved.restore()
        raise
    saved.discard()
    upsert_source(con, {
        "source_id": source_id, "path": resolved, "display": str(path), "kind": "transcript", "envelope": fmt,
        "compression": None, "size_bytes": _size(path), "bytes_ingested": None, "lines_ingested": None,
        "partial_last_line": False, "head_hash": None, "tail_hash": None, "content_hash": fingerprint,
        "year": None, "utc_offset_s": None, "fallback_date": None, "ingested_at": datetime.now(),
    })
    return report


def read_rows(path: Path, report: TranscriptReport, known_sessions: set[str],
              fmt: str | None = None) -> dict[str, list[dict]]:
    """The rows of every table for one transcript file or directory, counted into `report`, in memory
    (embedded journal lines with every value as text, as they are stored); sessions in `known_sessions`
    (stored from another file) are skipped."""
    out = TableWriter()
    store_records(path, report, known_sessions, out, fmt)
    return out.kept


def store_records(path: Path, report: TranscriptReport, known_sessions: set[str], out: TableWriter,
                  fmt: str | None = None) -> None:
    """Read every record of one transcript file (as format `fmt`, or as detected) or directory into `out`,
    enriching each tool call as it comes (in the order the reader yields them, as `FileContents` follows
    a session's writes)."""
    skipped_sessions: set[str] = set()
    files = FileContents()
    embedded = EmbeddedLines(out, report, str(path))
    for record in read_transcripts(path, fmt):
        interrupts.check()
        problem = type_problem(record)
        if problem:  # a value of another type than the agent writes, taken as it was by the reader
            line = getattr(record, "source_line", getattr(record, "line", None))
            record = UnknownRecord(None, str(path), line if isinstance(line, int) else None, type(record).__name__,
                                   json.dumps(_values(record), default=str), problem)
        call = add_record(record, report.source_id, out, known_sessions, skipped_sessions, report)
        if call is None:
            continue
        tool_input = call.pop("_input")
        try:
            enrich_tool_call(call, tool_input, out, files, embedded)
        except Exception as exc:  # an input of a shape no agent writes: the call is stored, not what it ran
            report.unknown_records += 1
            out.add("unknown_records", _unreadable_call(call, str(path), exc))
        out.add("tool_calls", call)
    embedded.flush()
    out.flush()
    if skipped_sessions and not report.sessions:
        report.status = "duplicate: its sessions were already stored from another file"


def _unreadable_call(call: dict, path: str, exc: Exception) -> dict:
    return {"source_id": call["source_id"], "session_id": call["session_id"], "path": path, "line": None,
            "record_type": "tool_input", "raw": call["input"], "reason": f"{type(exc).__name__}: {exc}"}


def add_record(record: object, source_id: int, out: TableWriter, known: set[str], skipped: set[str],
               report: TranscriptReport) -> dict | None:
    """Turn one reader record into a row; sessions already stored from another source are skipped.
    A tool call's row is returned (with its `_input`) instead, for the caller to enrich and store."""
    if isinstance(record, ParseProblem):
        out.add("transcript_problems", {"source_id": source_id, **_values(record)})
        report.problems.append(f"{record.path}:{record.line}: {record.message}" if record.line is not None
                               else f"{record.path}: {record.message}")
        return None
    session_id = getattr(record, "session_id", None) or getattr(record, "id", None)
    if isinstance(record, Session):
        if record.id in known:
            skipped.add(record.id)
            return None
        report.sessions += 1
        row = _values(record)
        row["extra"] = json.dumps(row["extra"], default=str)
        out.add("sessions", {"source_id": source_id, **_utc(row)})
        return None
    if session_id in known:
        skipped.add(session_id)
        return None
    if isinstance(record, ToolCall):
        classify_ending(record)
    row = {"source_id": source_id, **_utc(_values(record))}
    if isinstance(record, Message):
        report.messages += 1
        row["idx"] = row.pop("index")
        out.add("messages", row)
    elif isinstance(record, Part):
        row["idx"] = row.pop("index")
        row["data"] = json.dumps(row["data"], default=str)
        out.add("parts", row)
    elif isinstance(record, ToolCall):
        report.tool_calls += 1
        row["input"] = json.dumps(row["input"], default=str)
        row["_input"] = record.input
        return row
    elif isinstance(record, UnknownRecord) and (event := session_event(record)) is not None:
        out.add("session_events", {"source_id": source_id, **_utc(_values(event))})
    elif isinstance(record, UnknownRecord):
        report.unknown_records += 1
        out.add("unknown_records", row)
    return None


def enrich_tool_call(call: dict, tool_input: dict, out: TableWriter, files: FileContents,
                     embedded: EmbeddedLines) -> None:
    """Commands, file writes, config snapshots and embedded journal lines of one tool call; `files`
    holds what the session's earlier calls wrote or printed."""
    base = {k: call[k] for k in ("source_id", "session_id", "message_id", "message_index", "call_id")}
    when = call.get("started_at")
    writes = []
    command = shell_command_text(call["tool"], tool_input)
    if command:
        for step_no, step in enumerate(split_command(command)):
            out.add("commands", {**base, "step": step_no, "host": step.host, "user": step.user,
                                     "command": step.command, "started_at": when, "exit_code": call["exit_code"]})
            writes.extend((step_no, step.host, w) for w in step.writes)
            launch = parse_launch_command(step.command)
            if launch and "model_path" in launch:  # `launch_server --help` configures nothing
                out.add("config_snapshots", {**base, "host": step.host, "path": None,
                                                 "origin": "launch_command", "written_at": when,
                                                 "args": json.dumps(launch, default=repr)})
            for origin, path in config_reads(step.command) if call.get("output") else ():
                seen = read_config(origin, path, call["output"])
                if seen:
                    if seen[0]:
                        files.remember(call["session_id"], step.host, seen[0], call["output"])
                    out.add("config_snapshots", {**base, "host": step.host, "path": seen[0], "origin": origin,
                                                     "written_at": when, "args": json.dumps(seen[1], default=repr)})
    else:
        writes.extend((0, None, write) for write in file_writes_from_tool(call["tool"], tool_input))
    for step_no, step_host, write in writes:
        host = write.remote_host if write.remote_host is not None else step_host
        content = files.written(call["session_id"], host, write)
        out.add("file_writes", {**base, "step": step_no, "host": host, "path": write.path,
                                    "method": write.method, "append": write.append, "content": content,
                                    "written_at": when})
        if not content:
            continue
        path, unit_text = files.unit_with_drop_in(call["session_id"], host, write.path, content)
        config = config_from_unit_or_command(unit_text)
        if config:
            out.add("config_snapshots", {**base, "host": host, "path": path, "origin": "unit_file",
                                             "written_at": when, "args": json.dumps(config, default=repr)})
    if call.get("output"):
        embedded.add(call["output"], base, call.get("ended_at") or when)


def read_config(origin: str, path: str | None, output: str) -> tuple[str | None, dict] | None:
    """(path, server args) of the configuration a tool's output shows: a unit file or a process list."""
    if origin == "process_args":
        config = config_in_process_list(output)
        return (None, config) if config else None
    config = config_from_unit_or_command(output)
    return (path or parse_unit_file(output).path, config) if config else None


def shell_command_text(tool: str, tool_input: dict) -> str | None:
    """The shell command of a tool call, whatever the agent calls its shell tool."""
    if tool.lower() not in SHELL_TOOLS:
        return None
    command = tool_input.get("command", tool_input.get("cmd"))
    if isinstance(command, list):
        # Codex `shell` passes argv, usually ["bash", "-lc", "script"].
        return command[-1] if len(command) >= 3 and command[1] in ("-c", "-lc") else " ".join(map(str, command))
    return command if isinstance(command, str) else None


class EmbeddedLines:
    """SGLang and systemd lines inside tool outputs, typed by the journal parsers in batches: outputs of
    one envelope are parsed as one block (each read as if alone), since a parse costs mostly per block."""

    def __init__(self, out: TableWriter, report: TranscriptReport, path: str) -> None:
        self.out, self.report, self.path = out, report, path
        self.pending: dict[str, list[tuple[list[str], dict, object]]] = {}  # envelope -> outputs
        self.lines = 0

    def add(self, output: str, base: dict, seen_at: object) -> None:
        lines = output.split("\n")
        self.pending.setdefault(detect_format(lines[:200]), []).append((lines, base, seen_at))
        self.lines += len(lines)
        if self.lines >= EMBEDDED_BATCH_LINES:
            self.flush()

    def flush(self) -> None:
        pending, self.pending, self.lines = self.pending, {}, 0
        release_free_memory()  # what the batch before this one held
        for envelope, outputs in pending.items():
            try:
                self.out.add_text_table("embedded_lines", embedded_journal_lines(envelope, outputs))
            except Exception:  # an output the parsers cannot read: find it, the others are stored
                for output in outputs:
                    try:
                        self.out.add_text_table("embedded_lines", embedded_journal_lines(envelope, [output]))
                    except Exception as exc:
                        self.report.unknown_records += 1
                        self.out.add("unknown_records", {
                            "source_id": self.report.source_id, "session_id": output[1]["session_id"],
                            "path": self.path, "line": None, "record_type": "tool_output",
                            "raw": "\n".join(output[0]), "reason": f"{type(exc).__name__}: {exc}"})


def embedded_journal_lines(envelope: str, outputs: list[tuple[list[str], dict, object]]) -> pa.Table:
    """The typed lines of tool outputs written in `envelope`, given as (lines, the call's columns, time
    seen), each output read as if alone; every column as text, as `TableWriter` stores it."""
    lines = [line for output_lines, _, _ in outputs for line in output_lines]
    starts = np.cumsum([0] + [len(output_lines) for output_lines, _, _ in outputs[:-1]])
    restarts = np.zeros(len(lines), dtype=bool)
    restarts[starts] = True
    parser = LineParser(0, envelope, TimeContext(year=datetime.now().year), "1970-01-01", _classifier())
    batch = ColumnBatch()
    parser.parse_block(1, pa.array(lines, pa.string()), np.zeros(len(lines), dtype=bool), batch, restarts)
    parser.finish(batch)
    parsed = batch.tables()["lines"].select(["line_no", "kind", "log_ts", "tp", "message"])
    parsed = parsed.filter(pc.and_(pc.is_valid(parsed["kind"]), pc.not_equal(parsed["kind"], "blank")))
    row = parsed["line_no"].to_numpy() - 1
    output_of = np.searchsorted(starts, row, side="right") - 1
    taken = pa.array(output_of, pa.int64())

    def per_output(values: list) -> pa.Array:
        return pa.array([_text(value) for value in values], pa.string()).take(taken)

    columns = {name: per_output([base[name] for _, base, _ in outputs])
               for name in ("source_id", "session_id", "message_id", "message_index", "call_id")}
    columns["line_in_output"] = pa.array(row - starts[output_of] + 1).cast(pa.string())
    for name in ("kind", "log_ts", "tp", "message"):
        columns[name] = parsed[name].combine_chunks().cast(pa.string())
    columns["seen_at"] = per_output([seen_at for _, _, seen_at in outputs])
    return pa.table({name: columns[name] for name in TABLES["embedded_lines"]})


@cache
def _classifier() -> Classifier:
    """One classifier for every batch (it keeps no state between blocks; making one takes ~7 ms)."""
    return Classifier()


class TableWriter:
    """The rows of one transcript's tables, stored in batches as they come; without a connection they
    are kept in `kept` (tests, notebooks)."""

    def __init__(self, con: duckdb.DuckDBPyConnection | None = None, redactor: Redactor | None = None) -> None:
        self.con, self.redactor = con, redactor
        self.pending: dict[str, list[dict]] = {name: [] for name in TABLES}
        self.kept: dict[str, list[dict]] = {name: [] for name in TABLES}

    def add(self, table: str, row: dict) -> None:
        pending = self.pending[table]
        pending.append(row)
        if len(pending) >= BATCH_ROWS:
            self.flush(table)

    def add_text_table(self, table: str, data: pa.Table) -> None:
        """Rows whose every column is already text, in the table's column order."""
        if self.con is None:
            self.kept[table].extend(data.to_pylist())
        elif data.num_rows:
            insert_text_table(self.con, table, data, self.redactor)

    def flush(self, table: str | None = None) -> None:
        for name in [table] if table else TABLES:
            rows, self.pending[name] = self.pending[name], []
            if self.con is None:
                self.kept[name].extend(rows)
            elif rows:
                insert_rows(self.con, name, rows, self.redactor)


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict], redactor: Redactor | None = None) -> None:
    """Store rows (every value as text, cast by DuckDB); with a redactor, secrets are replaced in every cell."""
    if not rows:
        return
    columns = TABLES[table]
    check_columns({key for row in rows for key in row}, columns)
    text_rows = {name: [_text(row.get(name)) for row in rows] for name in columns}
    insert_text_table(con, table, pa.table({name: pa.array(values, pa.string()) for name, values in text_rows.items()}),
                      redactor)


def insert_text_table(con: duckdb.DuckDBPyConnection, table: str, data: pa.Table,
                      redactor: Redactor | None = None) -> None:
    """Store an Arrow table of text columns, cast by DuckDB to the table's types; with a redactor, secrets
    are replaced in every cell."""
    columns = TABLES[table]
    if redactor:
        data = pa.table({name: redactor.cells(data[name].combine_chunks()) for name in data.column_names})
    append(con, table, data, columns, text=True)


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return str(value)


def _values(record: object) -> dict:
    """A record's fields by name, as `asdict` gives them but without copying the dicts inside (every
    one becomes JSON text or is read only), which took a tenth of a transcript's ingest."""
    return {spec.name: getattr(record, spec.name) for spec in fields(record)}  # type: ignore[arg-type]


def _utc(row: dict) -> dict:
    """Aware datetimes become naive UTC (the database stores transcript times in UTC)."""
    return {k: v.astimezone(timezone.utc).replace(tzinfo=None) if isinstance(v, datetime) and v.tzinfo else v
            for k, v in row.items()}


def _files(path: Path) -> Iterable[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]


def _fingerprint(path: Path) -> str:
    """Sizes and modification times of every file, so an unchanged transcript is skipped cheaply."""
    digest = hashlib.blake2b(digest_size=16)
    for f in _files(path):
        stat = f.stat()
        digest.update(f"{f}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in _files(path))
