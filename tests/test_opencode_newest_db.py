"""opencode.db of the newest releases, built with the tables of opencode's own migrations.

* v1.14.34 - v1.18: `session` (with agent, model, cost, tokens_*, metadata, fork_*), v1 `message`/`part`
  beside the v2 runtime's `session_message`, `session_input`, `event`. A session of the experimental v2
  runtime has its messages in `session_message` only (`isV2Session`: sessions without v1 history).
* opencode 2 (`20260804233008_loose_psylocke`): `session` renamed `session_v2`; v1 tables, where they
  remain, are frozen, and a legacy session is copied into `session_message` under new ids, same times.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from logmine.parsers.transcripts.detect import detect

from logmine import api

SESSION_COLUMNS = """
  `id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text,
  `fork_session_id` text, `fork_boundary` text, `slug` text NOT NULL, `directory` text NOT NULL, `path` text,
  `title` text, `version` text NOT NULL, `share_url` text, `summary_additions` integer,
  `summary_deletions` integer, `summary_files` integer, `summary_diffs` text, `metadata` text,
  `cost` real DEFAULT 0 NOT NULL, `tokens_input` integer DEFAULT 0 NOT NULL,
  `tokens_output` integer DEFAULT 0 NOT NULL, `tokens_reasoning` integer DEFAULT 0 NOT NULL,
  `tokens_cache_read` integer DEFAULT 0 NOT NULL, `tokens_cache_write` integer DEFAULT 0 NOT NULL,
  `revert` text, `permission` text, `agent` text, `model` text, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `time_compacting` integer, `time_archived` integer"""
V1_MESSAGE_TABLES = """
CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);"""
V2_TABLES = """
CREATE TABLE `session_message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `type` text NOT NULL,
  `seq` integer NOT NULL, `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE UNIQUE INDEX `session_message_session_seq_idx` ON `session_message` (`session_id`,`seq`);
CREATE TABLE `event_sequence` (`aggregate_id` text PRIMARY KEY, `seq` integer NOT NULL, `owner_id` text);
CREATE TABLE `event` (`id` text PRIMARY KEY, `aggregate_id` text NOT NULL, `seq` integer NOT NULL,
  `created` integer DEFAULT 0 NOT NULL, `type` text NOT NULL, `data` text NOT NULL);
CREATE TABLE `project` (`id` text PRIMARY KEY, `worktree` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `sandboxes` text NOT NULL);"""
SESSION_INPUT = """
CREATE TABLE `session_input` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `type` text NOT NULL,
  `data` text NOT NULL, `delivery` text, `admitted_seq` integer NOT NULL, `promoted_seq` integer,
  `time_created` integer NOT NULL);"""
T0 = 1_790_000_000_000  # epoch ms
MODEL = {"id": "claude-sonnet-4-5", "providerID": "anthropic"}
TOKENS = {"input": 100, "output": 20, "reasoning": 5, "cache": {"read": 300, "write": 40}}


def create(path: Path, *scripts: str) -> sqlite3.Connection:
    con = sqlite3.connect(path)
    con.executescript("".join(scripts))
    return con


def add_session(con: sqlite3.Connection, table: str, session_id: str, title: str, version: str) -> None:
    con.execute(f"INSERT INTO {table} (id, project_id, slug, directory, title, version, agent, model, cost,"
                " time_created, time_updated) VALUES (?, 'global', 'calm-fox', '/w', ?, ?, 'build', ?, 0.02, ?, ?)",
                (session_id, title, version, json.dumps(MODEL), T0, T0 + 60_000))


def add_v1_message(con: sqlite3.Connection, session_id: str, message_id: str, created: int, info: dict,
                   parts: list[dict]) -> None:
    con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                (message_id, session_id, created, created, json.dumps({**info, "time": {"created": created}})))
    con.executemany("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                    [(f"prt_{message_id}_{i}", message_id, session_id, created, created, json.dumps(part))
                     for i, part in enumerate(parts)])


def add_v2_row(con: sqlite3.Connection, session_id: str, seq: int, kind: str, created: int, data: dict,
               row_id: str | None = None) -> None:
    con.execute("INSERT INTO session_message VALUES (?, ?, ?, ?, ?, ?, ?)",
                (row_id or f"msg_{session_id}_{seq}", session_id, kind, seq, created, created,
                 json.dumps({**data, "time": {"created": created, **data.get("time", {})}})))


def v2_tool(call_id: str, name: str, tool_input: dict, text: str, structured: dict, ran: int) -> dict:
    state = {"status": "completed", "input": tool_input, "content": [{"type": "text", "text": text}],
             "structured": structured}
    return {"type": "tool", "id": call_id, "name": name, "state": state,
            "time": {"created": ran, "ran": ran, "completed": ran + 1500}}


def v2_assistant(created: int, content: list[dict]) -> dict:
    return {"agent": "build", "model": MODEL, "content": content, "finish": "tool-calls", "cost": 0.01,
            "tokens": TOKENS, "time": {"completed": created + 5000}}


def v1_18_db(path: Path) -> Path:
    """A v1.18 database: one session on the v1 runtime, one on the (flagged) v2 runtime."""
    con = create(path, f"CREATE TABLE `session` ({SESSION_COLUMNS});", V1_MESSAGE_TABLES, V2_TABLES, SESSION_INPUT)
    add_session(con, "session", "ses_v1", "v1 runtime", "1.18.3")
    add_v1_message(con, "ses_v1", "msg_a1", T0, {"role": "user", "agent": "build",
                   "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}},
                   [{"type": "text", "text": "restart it"}])
    bash = {"status": "completed", "input": {"command": "systemctl restart sglang"}, "output": "",
            "title": "systemctl restart sglang", "metadata": {"output": "", "exit": 0, "truncated": False},
            "time": {"start": T0 + 2000, "end": T0 + 3000}}
    write = {"status": "completed", "input": {"filePath": "/w/run.sh", "content": "echo hi\n"},
             "output": "Wrote file successfully.", "title": "run.sh", "metadata": {"truncated": False},
             "time": {"start": T0 + 3000, "end": T0 + 3100}}
    add_v1_message(con, "ses_v1", "msg_a2", T0 + 1000, {"role": "assistant", "agent": "build", "mode": "build",
                   "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "cost": 0.03, "tokens": TOKENS},
                   [{"type": "step-start"}, {"type": "text", "text": "Restarting."},
                    {"type": "tool", "callID": "call_b", "tool": "bash", "state": bash},
                    {"type": "tool", "callID": "call_w", "tool": "write", "state": write},
                    {"type": "step-finish", "reason": "tool-calls", "cost": 0.03, "tokens": TOKENS}])
    add_session(con, "session", "ses_v2", "v2 runtime", "1.18.3")
    v2_only_session(con, "ses_v2", T0 + 100_000)
    con.commit()
    return path


def v2_only_session(con: sqlite3.Connection, session_id: str, start: int) -> None:
    """User prompt, a model switch, an assistant step with shell/edit calls, and a user `!` command."""
    add_v2_row(con, session_id, 1, "user", start, {"text": "fix the port"})
    add_v2_row(con, session_id, 2, "model-switched", start + 10, {"model": MODEL})
    add_v2_row(con, session_id, 3, "assistant", start + 1000, v2_assistant(start + 1000, [
        {"type": "reasoning", "id": "rsn_1", "text": "check the port"},
        v2_tool("call_s", "shell", {"command": "ss -ltnp | grep 30000"}, "", {"exit": 1, "truncated": False},
                start + 2000),
        v2_tool("call_e", "edit", {"path": "/w/server.yaml", "oldString": "port: 30000", "newString": "port: 30001"},
                "Edited", {"files": [{"file": "server.yaml", "additions": 1, "deletions": 1}]}, start + 4000),
        {"type": "text", "id": "txt_1", "text": "Port changed."},
    ]))
    add_v2_row(con, session_id, 4, "shell", start + 9000,
               {"callID": "call_u", "command": "ls /w", "output": "server.yaml\n", "time": {"completed": start + 9100}})


def opencode2_db(path: Path) -> Path:
    """opencode 2: `session_v2`; a legacy session frozen in v1 tables, copied into `session_message` and
    continued there; a session born on opencode 2 using the `patch` tool."""
    con = create(path, f"CREATE TABLE `session_v2` ({SESSION_COLUMNS}, `time_suspended` integer);",
                 f"CREATE TABLE `session` ({SESSION_COLUMNS});", V1_MESSAGE_TABLES, V2_TABLES)
    add_session(con, "session", "ses_legacy", "legacy copy", "1.15.10")
    add_session(con, "session_v2", "ses_legacy", "continued on 2.x", "1.15.10")
    add_v1_message(con, "ses_legacy", "msg_l1", T0, {"role": "user"}, [{"type": "text", "text": "hello"}])
    add_v1_message(con, "ses_legacy", "msg_l2", T0 + 1000, {"role": "assistant", "modelID": "m1",
                   "providerID": "p", "cost": 0.5, "tokens": TOKENS},
                   [{"type": "text", "text": "hi"}, {"type": "step-finish", "cost": 0.5, "tokens": TOKENS}])
    # The backfill's copies: new ids, the legacy times.
    add_v2_row(con, "ses_legacy", 1, "user", T0, {"text": "hello"}, row_id="evt_legacy_backfill_m_00000000_a")
    add_v2_row(con, "ses_legacy", 2, "assistant", T0 + 1000, v2_assistant(T0 + 1000, [
        {"type": "text", "id": "c", "text": "hi"}]), row_id="evt_legacy_backfill_m_00000001_b")
    add_v2_row(con, "ses_legacy", 3, "user", T0 + 50_000, {"text": "and now?"})
    add_session(con, "session_v2", "ses_new", "born on 2.x", "2.0.12")
    add_v2_row(con, "ses_new", 1, "user", T0 + 200_000, {"text": "add a file"})
    patch = "*** Begin Patch\n*** Add File: /w/new.txt\n+hello\n*** End Patch"
    add_v2_row(con, "ses_new", 2, "assistant", T0 + 201_000, v2_assistant(T0 + 201_000, [
        v2_tool("call_p", "patch", {"patchText": patch}, "Success. Updated the following files:\nA new.txt",
                {"files": []}, T0 + 202_000)]))
    con.commit()
    return path


def ingest(path: Path, tmp_path: Path) -> duckdb.DuckDBPyConnection:
    db = tmp_path / "t.duckdb"
    api.ingest([str(path)], db=db)
    return duckdb.connect(str(db), read_only=True)


def test_a_v1_18_database_reads_both_runtimes(tmp_path: Path) -> None:
    path = v1_18_db(tmp_path / "opencode.db")
    assert detect(path) == "opencode-sqlite"
    con = ingest(path, tmp_path)
    assert con.execute("SELECT id, title, version FROM sessions ORDER BY id").fetchall() == [
        ("ses_v1", "v1 runtime", "1.18.3"), ("ses_v2", "v2 runtime", "1.18.3")]
    assert con.execute("SELECT session_id, idx, role, model, provider, input_tokens, output_tokens,"
                       " reasoning_tokens, cache_read_tokens, cache_write_tokens, cost_usd, text, agent_id"
                       " FROM messages ORDER BY session_id, idx").fetchall() == [
        ("ses_v1", 0, "user", "claude-sonnet-4-5", "anthropic", 0, 0, 0, 0, 0, None, "restart it", "build"),
        ("ses_v1", 1, "assistant", "claude-sonnet-4-5", "anthropic", 100, 20, 5, 300, 40, 0.03, "Restarting.",
         "build"),
        ("ses_v2", 0, "user", None, None, 0, 0, 0, 0, 0, None, "fix the port", None),
        ("ses_v2", 1, "assistant", "claude-sonnet-4-5", "anthropic", 100, 20, 5, 300, 40, 0.01, "Port changed.",
         "build"),
        ("ses_v2", 2, "user", None, None, 0, 0, 0, 0, 0, None, "", None),
    ]
    assert con.execute("SELECT session_id, call_id, tool, status, exit_code, output, duration_s FROM tool_calls"
                       " ORDER BY session_id, call_id").fetchall() == [
        ("ses_v1", "call_b", "bash", "completed", 0, "", 1.0),
        ("ses_v1", "call_w", "write", "completed", None, "Wrote file successfully.", 0.1),
        ("ses_v2", "call_e", "edit", "completed", None, "Edited", 1.5),
        ("ses_v2", "call_s", "shell", "completed", 1, "", 1.5),
        ("ses_v2", "call_u", "shell", "completed", None, "server.yaml\n", 0.1),
    ]
    assert con.execute("SELECT session_id, call_id, command, exit_code FROM commands ORDER BY call_id").fetchall() == [
        ("ses_v1", "call_b", "systemctl restart sglang", 0),
        ("ses_v2", "call_s", "ss -ltnp | grep 30000", 1),
        ("ses_v2", "call_u", "ls /w", None),
    ]
    assert con.execute("SELECT session_id, path, method, content FROM file_writes ORDER BY path").fetchall() == [
        ("ses_v1", "/w/run.sh", "write_tool", "echo hi\n"),
        ("ses_v2", "/w/server.yaml", "edit_tool", "port: 30001"),
    ]


def test_an_opencode_2_database_reads_session_v2_and_each_message_once(tmp_path: Path) -> None:
    path = opencode2_db(tmp_path / "opencode.db")
    assert detect(path) == "opencode-sqlite"
    con = ingest(path, tmp_path)
    assert con.execute("SELECT id, title, version FROM sessions ORDER BY id").fetchall() == [
        ("ses_legacy", "continued on 2.x", "1.15.10"), ("ses_new", "born on 2.x", "2.0.12")]
    # The legacy rows keep their v1 detail; the backfilled copies are not read again.
    assert con.execute("SELECT session_id, id, role, text, cost_usd FROM messages ORDER BY session_id, idx"
                       ).fetchall() == [
        ("ses_legacy", "msg_l1", "user", "hello", None),
        ("ses_legacy", "msg_l2", "assistant", "hi", 0.5),
        ("ses_legacy", "msg_ses_legacy_3", "user", "and now?", None),
        ("ses_new", "msg_ses_new_1", "user", "add a file", None),
        ("ses_new", "msg_ses_new_2", "assistant", "", 0.01),
    ]
    assert con.execute("SELECT tool, status FROM tool_calls").fetchall() == [("patch", "completed")]
    assert con.execute("SELECT path, content FROM file_writes").fetchall() == [("/w/new.txt", "hello\n")]


def test_a_fresh_opencode_2_database_without_v1_tables_is_read(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    con = create(path, f"CREATE TABLE `session_v2` ({SESSION_COLUMNS});", V2_TABLES)
    add_session(con, "session_v2", "ses_fresh", "fresh", "2.0.25")
    v2_only_session(con, "ses_fresh", T0)
    con.commit()
    assert detect(path) == "opencode-sqlite"
    db = ingest(path, tmp_path)
    assert db.execute("SELECT count(*) FROM messages").fetchone() == (3,)
    assert db.execute("SELECT tool, exit_code FROM tool_calls ORDER BY call_id").fetchall() == [
        ("edit", None), ("shell", 1), ("shell", None)]


@pytest.mark.parametrize("tables", ["CREATE TABLE session (id TEXT);", "CREATE TABLE session_message (id TEXT);"])
def test_a_database_without_sessions_or_messages_is_refused_in_one_line(tmp_path: Path, tables: str) -> None:
    path = tmp_path / "opencode.db"
    create(path, tables).close()
    result = subprocess.run([sys.executable, "-m", "logmine", "ingest", str(path), "--db", str(tmp_path / "t.duckdb")],
                            capture_output=True, text=True, timeout=60)
    assert result.stderr.strip().splitlines() == [
        f"logmine: {path}: a SQLite database without opencode's session and message tables (session or "
        "session_v2; message and part, or session_message), not a log or transcript"]
