"""Transcript records with one field of the wrong type: kept as unknown records with a reason, never raised.

Each fixture is a small, well-formed transcript of one format; every leaf of every record is replaced in turn
by values of other types (and a timestamp far out of range), and the file is read into rows. Tool outputs
are empty, so that what each case costs is the reader's (a mutation gives one a value).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path

from logmine.parsers.transcripts.detect import CLAUDE_CODE, CODEX, OPENCODE_CONCAT, OPENCODE_EXPORT, OPENCODE_SQLITE

from fuzz.transcripts import opencode_db
from logmine.ingest import transcripts

WRONG = ["x", 1e20, -1, [], {}, None, True]
T0 = "2026-03-12T10:00:00Z"
COMMAND = "ssh root@gpu-box 'systemctl restart sglang'"

CLAUDE = [
    {"type": "user", "sessionId": "s1", "uuid": "u1", "timestamp": T0, "cwd": "/w", "version": "2.0",
     "message": {"role": "user", "content": "restart the server"}},
    {"type": "assistant", "sessionId": "s1", "uuid": "a1", "requestId": "r1", "timestamp": T0, "costUSD": 0.01,
     "message": {"id": "m1", "role": "assistant", "model": "claude", "usage": {"input_tokens": 10, "output_tokens": 5},
                 "content": [{"type": "text", "text": "ok"},
                             {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": COMMAND}}]}},
    {"type": "user", "sessionId": "s1", "uuid": "u2", "timestamp": T0, "toolUseResult": {"stdout": ""},
     "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": ""}]}},
    {"type": "summary", "summary": "Restart", "leafUuid": "a1"},
]
CODEX_LINES = [
    {"timestamp": T0, "type": "session_meta", "payload": {"id": "11111111-1111-4111-8111-111111111111",
                                                          "timestamp": T0, "cwd": "/w", "cli_version": "0.1"}},
    {"timestamp": T0, "type": "turn_context", "payload": {"cwd": "/w", "model": "gpt"}},
    {"timestamp": T0, "type": "event_msg", "payload": {"type": "user_message", "message": "restart it"}},
    {"timestamp": T0, "type": "response_item",
     "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "restart it"}]}},
    {"timestamp": T0, "type": "response_item",
     "payload": {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": COMMAND}),
                 "call_id": "c1"}},
    {"timestamp": T0, "type": "response_item",
     "payload": {"type": "function_call_output", "call_id": "c1", "output": ""}},
    {"timestamp": T0, "type": "event_msg",
     "payload": {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 10, "output_tokens": 3}}}},
]
OPENCODE = {
    "info": {"id": "ses_1", "version": "1.1", "directory": "/w", "title": "t", "time": {"created": 1773307852000}},
    "messages": [
        {"info": {"id": "msg_1", "sessionID": "ses_1", "role": "user", "time": {"created": 1773307852000}},
         "parts": [{"id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1", "type": "text", "text": "restart"}]},
        {"info": {"id": "msg_2", "sessionID": "ses_1", "role": "assistant", "modelID": "m", "providerID": "p",
                  "time": {"created": 1773307853000, "completed": 1773307854000}, "cost": 0.1,
                  "tokens": {"input": 1, "output": 2, "reasoning": 0, "cache": {"read": 3, "write": 4}}},
         "parts": [{"id": "prt_2", "sessionID": "ses_1", "messageID": "msg_2", "type": "tool", "callID": "c1",
                    "tool": "bash", "state": {"status": "completed", "input": {"command": COMMAND},
                                              "output": "", "time": {"start": 1773307853000,
                                                                         "end": 1773307854000}}}]},
    ],
}


# Storage objects `cat`-ed together, pretty-printed as opencode writes them.
CONCAT = [OPENCODE["info"], *[m["info"] for m in OPENCODE["messages"]],
          *[p for m in OPENCODE["messages"] for p in m["parts"]]]


def mutations(record: object) -> Iterator[object]:
    """`record` with one leaf (or one whole branch) replaced by a value of another type."""
    if isinstance(record, dict):
        items = list(record.items())
    elif isinstance(record, list):
        items = list(enumerate(record))
    else:
        return
    for key, value in items:
        for wrong in WRONG:
            if type(wrong) is not type(value):
                changed = copy.copy(record)
                changed[key] = wrong
                yield changed
        for inner in mutations(value):
            changed = copy.copy(record)
            changed[key] = inner
            yield changed


def jsonl_cases(lines: list[dict]) -> list[list[dict]]:
    return [lines[:i] + [changed] + lines[i + 1:] for i, line in enumerate(lines) for changed in mutations(line)]


def write_sqlite(path: Path, messages: list) -> None:
    con = opencode_db(path)
    for n, message in enumerate(messages):  # the `data` column holds what the export's objects hold
        message_id = f"msg_{n}"
        info, parts = (message.get("info"), message.get("parts")) if isinstance(message, dict) else (message, [])
        con.execute("INSERT INTO message VALUES (?, 'ses_1', ?, ?)", [message_id, n, json.dumps(info)])
        for i, part in enumerate(parts if isinstance(parts, list) else [parts]):
            con.execute("INSERT INTO part VALUES (?, ?, 'ses_1', ?)", [f"prt_{n}_{i}", message_id, json.dumps(part)])
    con.execute("INSERT INTO part VALUES ('prt_bad', 'msg_0', 'ses_1', '{\"type\": \"text\", \"te')")
    con.commit()
    con.close()


def read(path: Path, fmt: str) -> dict[str, list[dict]]:
    return transcripts.read_rows(path, transcripts.TranscriptReport(str(path), 1, "new", fmt), set())


def cases() -> Iterator[tuple[str, str, object]]:
    for i, lines in enumerate(jsonl_cases(CLAUDE)):
        yield f"claude-{i}", CLAUDE_CODE, lines
    for i, lines in enumerate(jsonl_cases(CODEX_LINES)):
        yield f"codex-{i}", CODEX, lines
    for i, export in enumerate(mutations(OPENCODE)):
        yield f"opencode-{i}", OPENCODE_EXPORT, export
    for i, export in enumerate(mutations(OPENCODE["messages"])):
        yield f"sqlite-{i}", OPENCODE_SQLITE, export
    for i, objects in enumerate(jsonl_cases(CONCAT)):
        yield f"concat-{i}", OPENCODE_CONCAT, objects


def test_every_one_field_type_mutation_is_stored_or_kept_with_its_reason(tmp_path: Path) -> None:
    failures = []
    count = 0
    for name, fmt, data in cases():
        count += 1
        path = tmp_path / f"{name}.{'db' if fmt == OPENCODE_SQLITE else 'jsonl'}"
        if fmt == OPENCODE_SQLITE:
            write_sqlite(path, data)
        elif fmt == OPENCODE_EXPORT:
            path.write_text(json.dumps(data))
        elif fmt == OPENCODE_CONCAT:
            path.write_text("\n".join(json.dumps(obj, indent=2) for obj in data) + "\n")
        else:
            path.write_text("".join(json.dumps(line) + "\n" for line in data))
        try:
            read(path, fmt)
        except Exception as exc:  # noqa: BLE001 - every failure is listed at the end
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
    assert not failures, f"{len(failures)} of {count}:\n" + "\n".join(failures)


def test_unreadable_records_are_kept_with_their_reason_beside_the_rest(tmp_path: Path) -> None:
    claude = copy.deepcopy(CLAUDE)
    claude[0]["message"] = "restart the server"  # a string where Claude Code writes an object
    claude[1]["timestamp"] = 1e20
    path = tmp_path / "claude.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in claude))
    rows = read(path, CLAUDE_CODE)
    assert [(r["line"], r["record_type"], r["reason"]) for r in rows["unknown_records"] if r["reason"]] == [
        (1, "user", "AttributeError: 'str' object has no attribute 'get'")]
    assert [(m["id"], m["role"]) for m in rows["messages"]] == [("m1", "assistant"), ("u2", "tool")]
    assert rows["sessions"][0]["id"] == "s1" and rows["commands"][0]["host"] == "gpu-box"

    database = tmp_path / "opencode.db"
    write_sqlite(database, OPENCODE["messages"])
    rows = read(database, OPENCODE_SQLITE)
    assert [(r["record_type"], r["reason"].split(":")[0]) for r in rows["unknown_records"]] == [
        ("part", "JSONDecodeError")]
    assert len(rows["messages"]) == 2 and len(rows["tool_calls"]) == 1
