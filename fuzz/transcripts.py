"""The transcript readers read as an ingest reads them, and what accounts for every record of their input.

`read_transcript` writes bytes as a file (or a tree, or a database) of one format and reads it into the
rows an ingest stores (`logmine.ingest.transcripts.read_rows`, every reader and every enrichment, no database);
`check_accounted` is the promise every input must keep, shared by the fuzz targets and the property tests
(tests/test_transcript_properties.py): nothing raises, every line that is no JSON object is reported
with its file and line, every record a reader does not model is kept (an unknown record or a session
event, with its line), every opencode message and part is stored or kept with its reason, and the
report counts what was stored.
"""

from __future__ import annotations

import io
import json
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from logmine.parsers.transcripts import claude_code, codex, opencode
from logmine.parsers.transcripts.model import TranscriptUnreadable

from logmine.ingest import transcripts

# A target per reader: JSONL transcripts, an export, cat-ed storage objects, a storage tree (the bytes are
# one message's file) and an opencode.db (the bytes are the `data` column of a message and of a part).
TARGETS = (claude_code.FORMAT, codex.FORMAT, opencode.EXPORT, opencode.CONCAT, opencode.STORAGE, opencode.SQLITE)
T0 = "2026-03-12T10:00:00Z"
SESSION = {"id": "ses_1", "version": "1.1", "directory": "/w", "title": "t", "time": {"created": 1773307852000}}
MESSAGE = {"id": "msg_1", "sessionID": "ses_1", "role": "assistant", "modelID": "m", "providerID": "p",
           "time": {"created": 1773307853000, "completed": 1773307854000}, "cost": 0.1,
           "tokens": {"input": 1, "output": 2, "reasoning": 0, "cache": {"read": 3, "write": 4}}}
PART = {"id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1", "type": "tool", "callID": "c1", "tool": "bash",
        "state": {"status": "completed", "input": {"command": "ssh root@gpu-box 'systemctl restart sglang'"},
                  "output": "", "time": {"start": 1773307853000, "end": 1773307854000}}}
SEEDS: dict[str, list[Any]] = {
    claude_code.FORMAT: [
        {"type": "user", "sessionId": "s1", "uuid": "u1", "timestamp": T0, "cwd": "/w", "version": "2.0",
         "message": {"role": "user", "content": "restart the server"}},
        {"type": "assistant", "sessionId": "s1", "uuid": "a1", "requestId": "r1", "timestamp": T0,
         "message": {"id": "m1", "role": "assistant", "model": "claude", "usage": {"input_tokens": 10},
                     "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}},
        {"type": "user", "sessionId": "s1", "uuid": "u2", "timestamp": T0, "toolUseResult": {"stdout": ""},
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}},
        {"type": "summary", "summary": "Restart", "leafUuid": "a1"},
    ],
    codex.FORMAT: [
        {"timestamp": T0, "type": "session_meta", "payload": {"id": "11111111-1111-4111-8111-111111111111",
                                                              "timestamp": T0, "cwd": "/w", "cli_version": "0.1"}},
        {"timestamp": T0, "type": "turn_context", "payload": {"cwd": "/w", "model": "gpt"}},
        {"timestamp": T0, "type": "response_item",
         "payload": {"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\": \"ls\"}",
                     "call_id": "c1"}},
        {"timestamp": T0, "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": "c1", "output": "Process exited with code 0"}},
        {"timestamp": T0, "type": "event_msg",
         "payload": {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 10}}}},
    ],
}


# ----------------------------------------------------------------------------------- writing


def jsonl(lines: list[Any]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def export(info: Any = SESSION, messages: Any = None) -> bytes:
    entries = [{"info": MESSAGE, "parts": [PART]}] if messages is None else messages
    return json.dumps({"info": info, "messages": entries}).encode()


def concat(objects: list[Any]) -> bytes:
    return ("\n".join(json.dumps(obj, indent=2) for obj in objects) + "\n").encode()


def opencode_db(path: Path) -> sqlite3.Connection:
    """A new opencode.db with opencode's three tables and one session, `ses_1`, for messages to join."""
    con = sqlite3.connect(path)
    con.executescript("""
        PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
        CREATE TABLE session (id TEXT, parent_id TEXT, project_id TEXT, slug TEXT, directory TEXT, title TEXT,
                              version TEXT, time_created INTEGER, time_updated INTEGER);
        CREATE TABLE message (id TEXT, session_id TEXT, time_created INTEGER, data TEXT);
        CREATE TABLE part (id TEXT, message_id TEXT, session_id TEXT, data TEXT);""")
    con.execute("INSERT INTO session VALUES ('ses_1', NULL, 'p', 's', '/w', 't', '1.2', 1773307852000, NULL)")
    return con


def seed_bytes(fmt: str) -> bytes:
    """A small, well-formed input of the target `fmt`."""
    if fmt in SEEDS:
        return jsonl(SEEDS[fmt])
    if fmt == opencode.EXPORT:
        return export()
    if fmt == opencode.CONCAT:
        return concat([SESSION, MESSAGE, PART])
    if fmt == opencode.STORAGE:
        return json.dumps(MESSAGE, indent=2).encode()
    return json.dumps(MESSAGE).encode()  # SQLite: a row's `data`


def write_input(data: bytes, fmt: str, folder: Path) -> Path:
    """`data` as the file, tree or database a reader of `fmt` reads."""
    if fmt == opencode.STORAGE:  # data is a message file beside a well-formed session and part
        root = folder / "storage"
        for relative, content in ((f"session/proj/{SESSION['id']}.json", json.dumps(SESSION).encode()),
                                  ("message/ses_1/msg_1.json", data),
                                  ("part/msg_1/prt_1.json", json.dumps(PART).encode())):
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_bytes(content)
        return root
    if fmt == opencode.SQLITE:  # data is the `data` column of a message and of its part
        path = folder / "opencode.db"
        path.unlink(missing_ok=True)
        con = opencode_db(path)
        # As text whatever its bytes: SQLite stores what it is given, valid UTF-8 or not.
        con.execute("INSERT INTO message VALUES ('msg_1', 'ses_1', 1, CAST(? AS TEXT))", [data])
        con.execute("INSERT INTO message VALUES ('msg_2', 'ses_1', 2, ?)", [json.dumps(MESSAGE)])
        con.execute("INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_1', CAST(? AS TEXT))", [data])
        con.commit()
        con.close()
        return path
    path = folder / ("session.json" if fmt == opencode.EXPORT else "session.jsonl")
    path.write_bytes(data)
    return path


# ----------------------------------------------------------------------------------- reading


def read_transcript(path: Path, fmt: str) -> tuple[dict[str, list[dict]], transcripts.TranscriptReport]:
    """The rows an ingest stores of `path`, read as the reader of `fmt` reads it."""
    report = transcripts.TranscriptReport(str(path), 1, "new", fmt)
    return transcripts.read_rows(path, report, set(), fmt), report


def check_accounted(data: bytes, fmt: str, path: Path) -> dict[str, list[dict]]:
    """Read `path` (holding `data` as `fmt`) and raise AssertionError where a promise is broken."""
    from logmine.parsers.transcripts.detect import recognise  # noqa: F401 - the readers registered

    try:
        rows, report = read_transcript(path, fmt)
    except TranscriptUnreadable as exc:  # a file that cannot be read at all is named, nothing stored
        assert str(path) in str(exc), exc
        return {}
    counted = {"sessions": report.sessions, "messages": report.messages, "tool_calls": report.tool_calls}
    assert counted == {table: len(rows[table]) for table in counted}, (counted, report)
    kept = [r for r in rows["unknown_records"] if r.get("record_type") not in ("tool_input", "tool_output")]
    assert report.unknown_records >= len(kept)
    for row in rows["unknown_records"] + rows["transcript_problems"]:
        assert row.get("path"), row
    for row in rows["transcript_problems"]:
        assert row.get("message"), row
    if fmt in SEEDS:
        _check_jsonl(data, fmt, rows)
    elif fmt in (opencode.EXPORT, opencode.SQLITE):
        _check_messages_kept(data, fmt, rows)
    return rows


def _check_jsonl(data: bytes, fmt: str, rows: dict[str, list[dict]]) -> None:
    """Every line that is no JSON object is a problem at its line; every line of a kind the reader does not
    model is kept with its line (an unknown record or a session event)."""
    bad, unmodelled = set(), set()
    with io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                obj = None
            if not isinstance(obj, dict):
                bad.add(line_no)
            elif not MODELLED[fmt](obj):
                unmodelled.add(line_no)
    problems = {r["line"] for r in rows["transcript_problems"]}
    assert problems == bad, (problems, bad)
    kept = {r["line"] for r in rows["unknown_records"]} | {r["line"] for r in rows["session_events"]}
    assert unmodelled <= kept, (unmodelled - kept, rows["unknown_records"])


def _claude_models(line: dict[str, Any]) -> bool:
    message = line.get("message")
    return (line.get("type") or (message.get("role") if isinstance(message, dict) else None)) in ("user", "assistant")


def _codex_models(line: dict[str, Any]) -> bool:
    kind = line.get("type") if isinstance(line.get("type"), str) else None  # another type: kept with its reason
    return (kind in codex.ENVELOPE_TYPES or "payload" in line or line.get("record_type") == "state"
            or kind in codex.RESPONSE_ITEM_TYPES or ("id" in line and "type" not in line))


MODELLED: dict[str, Callable[[dict[str, Any]], bool]] = {claude_code.FORMAT: _claude_models,
                                                         codex.FORMAT: _codex_models}


def _check_messages_kept(data: bytes, fmt: str, rows: dict[str, list[dict]]) -> None:
    """Every opencode message is a message row or kept with its reason."""
    if fmt == opencode.SQLITE:
        expected = 2
    else:
        try:
            exported = json.loads(data.decode("utf-8", errors="replace"))  # as the reader decodes it
        except ValueError:
            assert rows["transcript_problems"], "a malformed export is reported"
            return
        entries = exported.get("messages") if isinstance(exported, dict) else None
        if not isinstance(exported, dict):
            assert rows["transcript_problems"], "an export that is no object is reported"
            return
        expected = len(entries) if isinstance(entries, list) else 0
    unread = [r for r in rows["unknown_records"] if r["record_type"] in ("message", "Message") and r.get("reason")]
    assert len(rows["messages"]) + len(unread) >= expected, (len(rows["messages"]), len(unread), expected)


# ----------------------------------------------------------------------------------- fuzzing


def target(name: str) -> Callable[[bytes], None]:
    def one_input(data: bytes) -> None:
        with tempfile.TemporaryDirectory(prefix="logmine-fuzz-") as folder:
            check_accounted(data, name, write_input(data, name, Path(folder)))

    return one_input


def seeds(name: str) -> list[bytes]:
    return [seed_bytes(name)]
