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
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from . import interrupts
from .file_contents import FileContents
from .parsers.envelopes import TimeContext, detect_format
from .parsers.launch_config import (
    config_from_unit_or_command,
    config_in_process_list,
    parse_launch_command,
    parse_unit_file,
)
from .parsers.log_lines import ColumnBatch, LineParser
from .parsers.shell_commands import config_reads, file_write_from_tool, split_command
from .parsers.transcripts.common import classify_ending
from .parsers.transcripts.detect import read_transcripts
from .parsers.transcripts.model import Message, ParseProblem, Part, Session, ToolCall, UnknownRecord, type_problem
from .parsers.transcripts.record_kinds import session_event
from .redact import Redactor
from .store import create_tables, execute, next_source_id, upsert_source

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
SHELL_TOOLS = {"bash", "shell", "exec_command", "local_shell", "local_shell_call", "run_command", "terminal"}


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
    """Store one transcript file or directory (every session under it); re-ingesting adds nothing."""
    resolved = str(path.resolve())
    fingerprint = _fingerprint(path)
    previous = execute(con, "SELECT source_id, content_hash FROM sources WHERE path = ? AND kind = 'transcript'",
                   [resolved])
    if previous and previous[0][1] == fingerprint:
        return TranscriptReport(str(path), previous[0][0], "unchanged", fmt)
    source_id = previous[0][0] if previous else next_source_id(con)
    report = TranscriptReport(str(path), source_id, "replaced" if previous else "new", fmt)
    known_sessions = {r[0] for r in execute(con, "SELECT id FROM sessions WHERE source_id <> ?", [source_id])}
    # Everything is read before anything is stored, so a file that fails to read leaves its old rows.
    rows = read_rows(path, report, known_sessions)
    if previous:
        for table in TABLES:
            execute(con, f'DELETE FROM "{table}" WHERE source_id = ?', [source_id])
    for table, table_rows in rows.items():
        insert_rows(con, table, table_rows, redactor)
    upsert_source(con, {
        "source_id": source_id, "path": resolved, "display": str(path), "kind": "transcript", "envelope": fmt,
        "compression": None, "size_bytes": _size(path), "bytes_ingested": None, "lines_ingested": None,
        "partial_last_line": False, "head_hash": None, "tail_hash": None, "content_hash": fingerprint,
        "year": None, "utc_offset_s": None, "fallback_date": None, "ingested_at": datetime.now(),
    })
    return report


def read_rows(path: Path, report: TranscriptReport, known_sessions: set[str]) -> dict[str, list[dict]]:
    """The rows of every table for one transcript file or directory, counted into `report`; sessions
    in `known_sessions` (stored from another file) are skipped."""
    rows: dict[str, list[dict]] = {name: [] for name in TABLES}
    skipped_sessions: set[str] = set()
    for record in read_transcripts(path):
        interrupts.check()
        problem = type_problem(record)
        if problem:  # a value of another type than the agent writes, taken as it was by the reader
            record = UnknownRecord(None, str(path), getattr(record, "source_line", None), type(record).__name__,
                                   json.dumps(asdict(record), default=str), problem)
        add_record(record, report.source_id, rows, known_sessions, skipped_sessions, report)
    if skipped_sessions and not report.sessions:
        report.status = "duplicate: its sessions were already stored from another file"
    files = FileContents()
    for call in list(rows["tool_calls"]):
        try:
            enrich_tool_call(call, rows, files)
        except Exception as exc:  # an input of a shape no agent writes: the call is stored, not what it ran
            call.pop("_input", None)
            report.unknown_records += 1
            rows["unknown_records"].append({"source_id": report.source_id, "session_id": call["session_id"],
                                            "path": str(path), "line": None, "record_type": "tool_input",
                                            "raw": call["input"], "reason": f"{type(exc).__name__}: {exc}"})
    return rows


def add_record(record: object, source_id: int, rows: dict[str, list[dict]], known: set[str],
               skipped: set[str], report: TranscriptReport) -> None:
    """Turn one reader record into a row; sessions already stored from another source are skipped."""
    if isinstance(record, ParseProblem):
        rows["transcript_problems"].append({"source_id": source_id, **asdict(record)})
        report.problems.append(f"{record.path}:{record.line}: {record.message}" if record.line is not None
                               else f"{record.path}: {record.message}")
        return
    session_id = getattr(record, "session_id", None) or getattr(record, "id", None)
    if isinstance(record, Session):
        if record.id in known:
            skipped.add(record.id)
            return
        report.sessions += 1
        row = asdict(record)
        row["extra"] = json.dumps(row["extra"], default=str)
        rows["sessions"].append({"source_id": source_id, **_utc(row)})
        return
    if session_id in known:
        skipped.add(session_id)
        return
    if isinstance(record, ToolCall):
        classify_ending(record)
    row = {"source_id": source_id, **_utc(asdict(record))}
    if isinstance(record, Message):
        report.messages += 1
        row["idx"] = row.pop("index")
        rows["messages"].append(row)
    elif isinstance(record, Part):
        row["idx"] = row.pop("index")
        row["data"] = json.dumps(row["data"], default=str)
        rows["parts"].append(row)
    elif isinstance(record, ToolCall):
        report.tool_calls += 1
        row["input"] = json.dumps(row["input"], default=str)
        row["_input"] = record.input
        rows["tool_calls"].append(row)
    elif isinstance(record, UnknownRecord) and (event := session_event(record)) is not None:
        rows["session_events"].append({"source_id": source_id, **_utc(asdict(event))})
    elif isinstance(record, UnknownRecord):
        report.unknown_records += 1
        rows["unknown_records"].append(row)


def enrich_tool_call(call: dict, rows: dict[str, list[dict]], files: FileContents) -> None:
    """Commands, file writes, config snapshots and embedded journal lines of one tool call; `files`
    holds what the session's earlier calls wrote or printed."""
    tool_input = call.pop("_input")
    base = {k: call[k] for k in ("source_id", "session_id", "message_id", "message_index", "call_id")}
    when = call.get("started_at")
    writes = []
    command = shell_command_text(call["tool"], tool_input)
    if command:
        for step_no, step in enumerate(split_command(command)):
            rows["commands"].append({**base, "step": step_no, "host": step.host, "user": step.user,
                                     "command": step.command, "started_at": when, "exit_code": call["exit_code"]})
            writes.extend((step_no, step.host, w) for w in step.writes)
            launch = parse_launch_command(step.command)
            if launch and "model_path" in launch:  # `launch_server --help` configures nothing
                rows["config_snapshots"].append({**base, "host": step.host, "path": None,
                                                 "origin": "launch_command", "written_at": when,
                                                 "args": json.dumps(launch, default=repr)})
            for origin, path in config_reads(step.command) if call.get("output") else ():
                seen = read_config(origin, path, call["output"])
                if seen:
                    if seen[0]:
                        files.remember(call["session_id"], step.host, seen[0], call["output"])
                    rows["config_snapshots"].append({**base, "host": step.host, "path": seen[0], "origin": origin,
                                                     "written_at": when, "args": json.dumps(seen[1], default=repr)})
    else:
        tool_write = file_write_from_tool(call["tool"], tool_input)
        if tool_write is not None:
            writes.append((0, None, tool_write))
    for step_no, step_host, write in writes:
        host = write.remote_host if write.remote_host is not None else step_host
        content = files.written(call["session_id"], host, write)
        rows["file_writes"].append({**base, "step": step_no, "host": host, "path": write.path,
                                    "method": write.method, "append": write.append, "content": content,
                                    "written_at": when})
        if not content:
            continue
        path, unit_text = files.unit_with_drop_in(call["session_id"], host, write.path, content)
        config = config_from_unit_or_command(unit_text)
        if config:
            rows["config_snapshots"].append({**base, "host": host, "path": path, "origin": "unit_file",
                                             "written_at": when, "args": json.dumps(config, default=repr)})
    if call.get("output"):
        rows["embedded_lines"].extend(embedded_journal_lines(call["output"], base, call.get("ended_at") or when))


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


def embedded_journal_lines(output: str, base: dict, seen_at: object) -> list[dict]:
    """SGLang and systemd lines inside a tool's output, typed by the journal parsers."""
    lines = output.split("\n")
    envelope = detect_format(lines[:200])
    parser = LineParser(0, envelope, TimeContext(year=datetime.now().year), "1970-01-01")
    batch = ColumnBatch()
    parser.parse_block(1, pa.array(lines, pa.string()), np.zeros(len(lines), dtype=bool), batch)
    parser.finish(batch)
    found = []
    for row in batch.tables()["lines"].to_pylist():
        if row.get("kind") in (None, "blank"):
            continue
        found.append({**base, "line_in_output": row["line_no"], "kind": row["kind"], "log_ts": row.get("log_ts"),
                      "tp": row.get("tp"), "message": row["message"], "seen_at": seen_at})
    return found


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict], redactor: Redactor | None = None) -> None:
    """Store rows (every value as text, cast by DuckDB); with a redactor, secrets are replaced in every cell."""
    if not rows:
        return
    columns = TABLES[table]
    text_rows = [{name: _text(row.get(name)) for name in columns} for row in rows]
    if redactor:
        text_rows = [{name: value and redactor.text(value) for name, value in row.items()} for row in text_rows]
    batch = pa.Table.from_pylist(text_rows, schema=pa.schema([(name, pa.string()) for name in columns]))
    exprs = ", ".join(f'TRY_CAST("{name}" AS {kind}) AS "{name}"' for name, kind in columns.items())
    con.register("_logmine_transcript_rows", batch)
    try:
        execute(con, f'INSERT INTO "{table}" BY NAME SELECT {exprs} FROM _logmine_transcript_rows')
    finally:
        con.unregister("_logmine_transcript_rows")


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return str(value)


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
