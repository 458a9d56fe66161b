"""Transcript readers: figures read by hand from the shared corpus, plus small inline fixtures."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import zstandard
from logmine.parsers.transcripts import claude_code, codex, opencode
from logmine.parsers.transcripts.detect import detect, read_transcripts
from logmine.parsers.transcripts.model import Message, ParseProblem, Part, Session, ToolCall, UnknownRecord
from logmine.parsers.transcripts.record_kinds import session_event

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus" / "transcripts"
KIMI = SHARED / "samples" / "kimi-k25"
KIMI_SESSION = "ses_36bb54d4cffeCUMRexORWlTu4t"


def shared_path(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared data not available: {path}")
    return path


def corpus_file(name_fragment: str) -> Path:
    matches = sorted(CORPUS.glob(f"*{name_fragment}")) if CORPUS.is_dir() else []
    if len(matches) != 1:
        pytest.skip(f"corpus file *{name_fragment} not available")
    return matches[0]


@dataclass
class Summary:
    sessions: list[Session]
    messages: list[Message]
    tool_calls: list[ToolCall]
    unknown: list[UnknownRecord]
    problems: list[ParseProblem]

    @property
    def tools(self) -> dict[str, int]:
        return dict(Counter(call.tool for call in self.tool_calls))

    @property
    def user_messages(self) -> int:
        return sum(message.role == "user" for message in self.messages)

    @property
    def tokens(self) -> tuple[int, int, int, int, int]:
        """(non-cached input, output, reasoning, cache read, cache write) summed over messages."""
        names = (
            "input_tokens",
            "output_tokens",
            "reasoning_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
        )
        return tuple(sum(getattr(message, name) for message in self.messages) for name in names)


def summarise(records) -> Summary:
    records = list(records)

    def of(kind):
        return [record for record in records if isinstance(record, kind)]

    return Summary(of(Session), of(Message), of(ToolCall), of(UnknownRecord), of(ParseProblem))


# ------------------------------------------------------------------------ corpus figures

# (file suffix, format, sessions, messages, user messages, tool calls by tool,
#  (input, output, reasoning, cache read, cache write), unknown records)
CORPUS_FIGURES = [
    (
        "opencode-gpt-5-2.jsonl", "opencode-concat", 4, 127, 4,
        {"apply_patch": 3, "bash": 20, "edit": 3, "glob": 3, "grep": 43, "read": 47, "webfetch": 3},
        (548711, 89287, 80566, 6690072, 47907), 12,
    ),
    (
        "opencode-claude-opus-4-6.jsonl", "opencode-concat", 10, 209, 10,
        {"apply_patch": 6, "bash": 28, "edit": 6, "glob": 6, "grep": 76, "read": 68, "todowrite": 8,
         "webfetch": 2},
        (591814, 102149, 77441, 5021986, 92139), 29,
    ),
    (
        "opencode-gpt-5-2-codex.jsonl", "opencode-concat", 7, 149, 7,
        {"apply_patch": 5, "bash": 7, "edit": 2, "glob": 1, "grep": 62, "read": 68, "todowrite": 5},
        (290504, 67165, 48036, 4687937, 87190), 21,
    ),
    (
        "sessions__claude-opus-4-6.jsonl", "claude-code", 1, 292, 1,
        {"Bash": 56, "Edit": 3, "Grep": 40, "Read": 26, "Task": 1, "TodoWrite": 3, "WebFetch": 13,
         "WebSearch": 4},
        (147, 1616, 0, 12864089, 243588), 1,
    ),
    (
        "transcripts__subagent.jsonl", "claude-code", 1, 32, 4,
        {"AskUserQuestion": 1, "Bash": 4, "ExitPlanMode": 1, "Glob": 1, "Read": 1, "Task": 1, "WebFetch": 1,
         "WebSearch": 5, "Write": 1},
        (1576, 1586, 0, 427286, 25842), 48,
    ),
    (
        "transcripts__tool_heavy.jsonl", "claude-code", 1, 17, 7,
        {"Bash": 2, "Glob": 1, "Read": 1, "WebFetch": 1, "WebSearch": 1},
        (54, 212, 0, 88231, 17696), 17,
    ),
    ("session-alpha__chat.jsonl", "claude-code", 1, 3, 0, {}, (600, 250, 0, 70, 75), 0),
    ("codex__sessions__project-alpha__session-alpha.jsonl", "codex", 1, 2, 0, {},
     (2750, 425, 275, 750, 0), 0),
    (
        "1111-4111-8111-111111111111.jsonl", "codex", 1, 5, 1,
        {"exec_command": 1, "apply_patch": 1, "mcp__synthetic__lookup": 1}, (0, 0, 0, 0, 0), 1,
    ),
    (
        "sessions__codex-gpt-5-2.jsonl", "codex", 1, 106, 3,
        {"apply_patch": 2, "exec_command": 71, "update_plan": 5, "write_stdin": 23},
        (222633, 28591, 22901, 4928768, 0), 0,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    "suffix, fmt, sessions, messages, users, tools, tokens, unknown",
    CORPUS_FIGURES,
    ids=[row[0] for row in CORPUS_FIGURES],
)
def test_corpus_file_figures(suffix, fmt, sessions, messages, users, tools, tokens, unknown):
    path = corpus_file(suffix)
    assert detect(path) == fmt
    summary = summarise(read_transcripts(path))
    assert len(summary.sessions) == sessions
    assert len(summary.messages) == messages
    assert summary.user_messages == users
    assert summary.tools == tools
    assert summary.tokens == tokens
    assert len(summary.unknown) == unknown
    assert summary.problems == []


def test_corpus_directory_reads_every_file_once():
    summary = summarise(read_transcripts(shared_path(CORPUS)))
    assert len(summary.sessions) == sum(row[2] for row in CORPUS_FIGURES)
    assert len(summary.messages) == sum(row[3] for row in CORPUS_FIGURES)


def test_message_indexes_are_positions_in_their_session():
    for suffix in (
        "opencode-gpt-5-2.jsonl",
        "sessions__claude-opus-4-6.jsonl",
        "sessions__codex-gpt-5-2.jsonl",
    ):
        by_session: dict[str, list[int]] = {}
        for message in summarise(read_transcripts(corpus_file(suffix))).messages:
            by_session.setdefault(message.session_id, []).append(message.index)
        for indexes in by_session.values():
            assert sorted(indexes) == list(range(len(indexes)))


def test_claude_bash_exit_codes_and_task_child_link():
    summary = summarise(read_transcripts(corpus_file("sessions__claude-opus-4-6.jsonl")))
    bash_exits = Counter(call.exit_code for call in summary.tool_calls if call.tool == "Bash")
    assert bash_exits == {0: 52, 127: 2, 128: 1, None: 1}
    (task,) = [call for call in summary.tool_calls if call.tool == "Task"]
    assert task.child_session_id == "0574c517-2408-4a20-8808-7626fd961640:agent-a6d8a4d"
    assert all(
        call.status in ("completed", "error") and call.duration_s is not None for call in summary.tool_calls
    )


def test_codex_exit_codes_from_output_text():
    summary = summarise(read_transcripts(corpus_file("sessions__codex-gpt-5-2.jsonl")))
    # 71 'Process exited with code N' texts (exec_command and write_stdin) + 2 apply_patch JSON exit_code 0;
    # the other 28 outputs (still-running commands, update_plan) carry no exit code.
    exits = Counter(call.exit_code for call in summary.tool_calls)
    assert exits == {0: 70, 1: 1, 2: 1, 127: 1, None: 28}
    assert summary.sessions[0].id == "019c4895-344c-79b1-83b2-00413ff7f9a9"
    assert summary.sessions[0].version == "0.98.0"
    assert {message.model for message in summary.messages if message.role == "assistant"} == {"gpt-5.2"}


# --------------------------------------------------------------------- kimi-k25 sample


@pytest.mark.parametrize(
    "name, fmt",
    [
        ("session.opencode.json", "opencode-export"),
        ("opencode-storage", "opencode-storage"),
        ("opencode.db", "opencode-sqlite"),
    ],
)
def test_kimi_session_in_every_opencode_form(name, fmt):
    path = shared_path(KIMI / name)
    assert detect(path) == fmt
    summary = summarise(read_transcripts(path))
    assert [session.id for session in summary.sessions] == [KIMI_SESSION]
    assert len(summary.messages) == 32
    assert summary.user_messages == 5
    assert summary.tools == {"bash": 25, "task": 1}
    assert summary.messages[18].index == 18
    assert summary.messages[18].id == "msg_cabbd14a8001kUpNaWBRkmiBBl"
    # step-finish sums; the last-step-only message.tokens would under-count output/reasoning
    assert summary.tokens == (16251, 4276, 2347, 1869696, 0)
    assert round(sum(message.cost_usd or 0 for message in summary.messages), 6) == 0.448358
    (task,) = [call for call in summary.tool_calls if call.tool == "task"]
    assert task.child_session_id == "ses_354466149ffe4Vs06ICledpxd1"
    # state.metadata.exit: 24 zeros and one null (a command killed before it exited)
    assert Counter(call.exit_code for call in summary.tool_calls if call.tool == "bash") == {0: 24, None: 1}


def test_kimi_directory_prefers_the_database_and_reads_the_session_once():
    summary = summarise(read_transcripts(shared_path(KIMI)))
    assert [session.path for session in summary.sessions] == [str(KIMI / "opencode.db")]
    assert len(summary.messages) == 32


def test_opencode_data_dir_with_db_and_storage(tmp_path):
    (tmp_path / "opencode.db").symlink_to(shared_path(KIMI / "opencode.db"))
    (tmp_path / "storage").symlink_to(shared_path(KIMI / "opencode-storage"), target_is_directory=True)
    summary = summarise(read_transcripts(tmp_path))
    assert [session.id for session in summary.sessions] == [KIMI_SESSION]
    assert len({message.id for message in summary.messages}) == len(summary.messages) == 32


@pytest.mark.parametrize(
    "name", ["journal.txt", "journal.jsonl", "journal-cat.txt", "truth.json", "README.md"]
)
def test_non_transcripts_are_not_detected(name):
    assert detect(shared_path(KIMI / name)) is None


# ------------------------------------------------------------------ inline unit fixtures


def write_lines(path: Path, lines: list[object | str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def claude_line(kind: str, uuid: str, timestamp: str, message: dict, **extra) -> dict:
    return {
        "type": kind,
        "uuid": uuid,
        "sessionId": "s1",
        "timestamp": timestamp,
        "cwd": "/w",
        "version": "2.1.0",
        "message": message,
        **extra,
    }


def assistant_block(block: dict, output_tokens: int) -> dict:
    usage = {
        "input_tokens": 10,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 5,
    }
    return {"id": "msg_1", "role": "assistant", "model": "claude-x", "content": [block], "usage": usage}


def test_malformed_jsonl_line_is_reported_and_reading_continues(tmp_path):
    path = write_lines(
        tmp_path / "s1.jsonl",
        [
            claude_line("user", "u1", "2026-01-01T00:00:00Z", {"role": "user", "content": "hi"}),
            '{"type": "assistant", "broken',
            claude_line("user", "u2", "2026-01-01T00:00:05Z", {"role": "user", "content": "again"}),
        ],
    )
    summary = summarise(read_transcripts(path))
    assert [(problem.line, problem.path) for problem in summary.problems] == [(2, str(path))]
    assert [message.text for message in summary.messages] == ["hi", "again"]


def test_claude_merges_content_block_lines_by_message_id(tmp_path):
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "false"}}
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "Exit code 3\nboom",
        "is_error": True,
    }
    path = write_lines(
        tmp_path / "s1.jsonl",
        [
            claude_line("user", "u1", "2026-01-01T00:00:00Z", {"role": "user", "content": "go"}),
            claude_line(
                "assistant",
                "a1",
                "2026-01-01T00:00:01Z",
                assistant_block({"type": "thinking", "thinking": "hmm"}, 2),
                requestId="r1",
            ),
            claude_line(
                "assistant",
                "a2",
                "2026-01-01T00:00:02Z",
                assistant_block({"type": "text", "text": "running"}, 7),
                requestId="r1",
            ),
            claude_line(
                "assistant", "a3", "2026-01-01T00:00:03Z", assistant_block(tool_use, 9), requestId="r1"
            ),
            claude_line("user", "u2", "2026-01-01T00:00:07.5Z", {"role": "user", "content": [result]}),
            {"type": "system", "subtype": "compact_boundary", "sessionId": "s1", "uuid": "c1"},
            {"type": "brand-new-line-type", "sessionId": "s1"},
        ],
    )
    summary = summarise(claude_code.read(path))
    assert [(message.role, message.id) for message in summary.messages] == [
        ("user", "u1"),
        ("assistant", "msg_1"),
        ("tool", "u2"),
    ]
    assistant = summary.messages[1]
    assert (assistant.input_tokens, assistant.output_tokens, assistant.cache_read_tokens) == (10, 9, 100)
    assert assistant.cache_write_tokens == 5 and assistant.text == "running"
    (call,) = summary.tool_calls
    assert (call.message_id, call.message_index, call.status, call.is_error) == ("msg_1", 1, "error", True)
    assert call.exit_code == 3 and call.duration_s == 4.5
    assert [record.record_type for record in summary.unknown] == ["compact_boundary", "brand-new-line-type"]


def test_claude_subagent_file_becomes_a_linked_child_session(tmp_path):
    task = {"type": "tool_use", "id": "toolu_t", "name": "Task", "input": {"prompt": "look"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_t", "content": "done"}
    session = write_lines(
        tmp_path / "s1.jsonl",
        [
            claude_line("assistant", "a1", "2026-01-01T00:00:01Z", assistant_block(task, 1), requestId="r1"),
            claude_line(
                "user",
                "u1",
                "2026-01-01T00:00:09Z",
                {"role": "user", "content": [result]},
                toolUseResult={"agentId": "abc123", "status": "completed"},
            ),
        ],
    )
    (tmp_path / "s1" / "subagents").mkdir(parents=True)
    write_lines(
        tmp_path / "s1" / "subagents" / "agent-abc123.jsonl",
        [
            claude_line(
                "user",
                "x1",
                "2026-01-01T00:00:02Z",
                {"role": "user", "content": "look"},
                isSidechain=True,
                agentId="abc123",
            )
        ],
    )
    summary = summarise(read_transcripts(tmp_path))
    assert [(session.id, session.parent_id) for session in summary.sessions] == [
        ("s1", None),
        ("s1:agent-abc123", "s1"),
    ]
    assert summary.tool_calls[0].child_session_id == "s1:agent-abc123"
    child_message = summary.messages[-1]
    assert child_message.is_sidechain and child_message.agent_id == "abc123"
    assert session.exists()


FORK_ID = "019c0000-0000-7000-8000-000000000001"  # UUIDv7 minted 2026-01-16T10:10:46Z
PARENT_ID = "019b0000-0000-7000-8000-000000000000"
OLD_TURN = "019b0000-0001-7000-8000-000000000000"  # minted before the fork
NEW_TURN = "019c0000-1000-7000-8000-000000000000"  # minted after the fork


def envelope(timestamp: str, kind: str, payload: dict) -> dict:
    return {"timestamp": timestamp, "type": kind, "payload": payload}


def token_count(timestamp: str, total_input: int, cached: int, output: int) -> dict:
    usage = {
        "input_tokens": total_input,
        "cached_input_tokens": cached,
        "output_tokens": output,
        "reasoning_output_tokens": 0,
        "total_tokens": total_input + output,
    }
    return envelope(timestamp, "event_msg", {"type": "token_count", "info": {"total_token_usage": usage}})


def codex_turn(timestamp: str, turn_id: str, call_id: str, exit_code: int) -> list[dict]:
    return [
        envelope(timestamp, "turn_context", {"turn_id": turn_id, "model": "gpt-test"}),
        envelope(
            timestamp,
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": call_id}]},
        ),
        envelope(
            timestamp,
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": '{"cmd": "ls"}',
                "call_id": call_id,
            },
        ),
        envelope(
            timestamp,
            "response_item",
            {
                "type": "function_call_output",
                "call_id": call_id,
                "output": f"Wall time: 0.1 seconds\nProcess exited with code {exit_code}",
            },
        ),
    ]


def test_codex_fork_skips_the_replayed_parent_history(tmp_path):
    fork_time = "2026-01-16T10:10:46.000Z"
    lines = [
        envelope(
            fork_time,
            "session_meta",
            {
                "id": FORK_ID,
                "forked_from_id": PARENT_ID,
                "timestamp": fork_time,
                "cli_version": "0.99.0",
                "model_provider": "openai",
            },
        ),
        envelope(fork_time, "session_meta", {"id": PARENT_ID, "timestamp": "2026-01-01T00:00:00Z"}),
        *codex_turn(fork_time, OLD_TURN, "call_parent", 0),
        token_count(fork_time, 1000, 800, 50),
        *codex_turn("2026-01-16T10:11:00.000Z", NEW_TURN, "call_child", 2),
        token_count("2026-01-16T10:11:01.000Z", 1500, 1100, 80),
    ]
    path = write_lines(tmp_path / f"rollout-2026-01-16T10-10-46-{FORK_ID}.jsonl", lines)
    summary = summarise(codex.read(path))
    (session,) = summary.sessions
    assert (session.id, session.parent_id, session.extra["replayed_parent_lines"]) == (FORK_ID, PARENT_ID, 6)
    assert [call.call_id for call in summary.tool_calls] == ["call_child"]
    assert (summary.tool_calls[0].exit_code, summary.tool_calls[0].is_error) == (2, True)
    assert summary.tokens == (200, 30, 0, 300, 0)  # only the fork's own delta: 500 in (300 cached), 30 out
    assert [message.index for message in summary.messages] == [0, 1]


def test_codex_zst_rollout_reads_like_the_plain_file(tmp_path):
    lines = [
        envelope("2026-01-02T00:00:00Z", "session_meta", {"id": "11111111-2222-4333-8444-555555555555"}),
        *codex_turn("2026-01-02T00:00:01Z", "t1", "call_1", 0),
        token_count("2026-01-02T00:00:02Z", 100, 40, 10),
        envelope("2026-01-02T00:00:03Z", "brand_new_record", {"x": 1}),
    ]
    plain = write_lines(tmp_path / "plain" / "rollout.jsonl", lines)
    compressed = tmp_path / "zst" / "rollout-2026-01-02T00-00-00-11111111-2222-4333-8444.jsonl.zst"
    compressed.parent.mkdir()
    compressed.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    assert detect(compressed) == "codex"
    from_zst, from_plain = summarise(read_transcripts(compressed)), summarise(read_transcripts(plain))
    assert from_zst.tokens == from_plain.tokens == (60, 10, 0, 40, 0)
    assert [call.exit_code for call in from_zst.tool_calls] == [0]
    assert [record.record_type for record in from_zst.unknown] == ["brand_new_record"]


def test_opencode_concat_stream_with_a_broken_object(tmp_path):
    objects = [
        {
            "id": "prt_2",
            "sessionID": "ses_a",
            "messageID": "msg_1",
            "type": "step-finish",
            "cost": 0.5,
            "tokens": {"input": 3, "output": 4, "reasoning": 1, "cache": {"read": 9, "write": 2}},
        },
        {
            "id": "msg_1",
            "sessionID": "ses_a",
            "role": "assistant",
            "time": {"created": 1770000000000},
            "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
        },
        {
            "id": "ses_a",
            "title": "t",
            "directory": "/w",
            "version": "1.1.53",
            "time": {"created": 1770000000000, "updated": 1770000005000},
        },
    ]
    text = "\n".join(json.dumps(obj, indent=2) for obj in objects[:2]) + '\n{\n  "id": "oops",\n'
    text += "\n" + json.dumps(objects[2], indent=2) + "\n"
    path = tmp_path / "dump.jsonl"
    path.write_text(text)
    assert detect(path) == "opencode-concat"
    summary = summarise(opencode.read(path))
    assert len(summary.problems) == 1
    assert [session.id for session in summary.sessions] == ["ses_a"]
    assert summary.tokens == (3, 4, 1, 9, 2)
    assert summary.messages[0].cost_usd == 0.5
    parts = [record for record in opencode.read(path) if isinstance(record, Part)]
    assert [(part.id, part.message_id, part.type) for part in parts] == [("prt_2", "msg_1", "step-finish")]


# ------------------------------------------------------------------------ calls that did not end by themselves


@pytest.mark.parametrize("output, cause", [
    ("Loading weights...\n\n<bash_metadata>\nbash tool terminated command after exceeding timeout 20000 ms\n"
     "</bash_metadata>", "timeout"),
    ("(no output)\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 120000 ms. If this "
     "command is expected to take longer ...\n</shell_metadata>", "timeout"),
    ("partial\n\n<bash_metadata>\nUser aborted the command\n</bash_metadata>", "interrupt"),
    ("Command timed out after 2m 0.0s", "timeout"),
    ("[Request interrupted by user for tool use]", "interrupt"),
    ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. ...)", "denied"),
    ("Permission to use Bash has been denied.", "denied"),
    ("exec command rejected by user", "denied"),
    ("curl: (28) Connection timed out after 5001 milliseconds", None),  # the command's own words
    ("Command timed out after 3 tries? no: the script printed this\nUser aborted the command here", "timeout"),
])
def test_a_call_ended_by_a_timeout_interrupt_or_denial_is_an_error(output: str, cause: str | None) -> None:
    from logmine.parsers.transcripts.common import classify_ending

    call = ToolCall("s", "m", 0, "c", "bash", output=output, status="completed", is_error=False)
    classify_ending(call)
    assert (call.ended_by, call.status, call.is_error) == (
        (cause, "error", True) if cause else (None, "completed", False))


def test_claude_interrupted_bash_is_stored_as_interrupted(tmp_path):
    from logmine import api

    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "sleep 999"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "partial output"}
    path = write_lines(tmp_path / "s1.jsonl", [
        claude_line("user", "u1", "2026-01-01T00:00:00Z", {"role": "user", "content": "go"}),
        claude_line("assistant", "a1", "2026-01-01T00:00:01Z", assistant_block(tool_use, 9)),
        claude_line("user", "u2", "2026-01-01T00:00:09Z", {"role": "user", "content": [result]},
                    toolUseResult={"stdout": "partial output", "stderr": "", "interrupted": True}),
    ])
    api.ingest([str(path)], db=tmp_path / "t.duckdb")
    with api.open_db(tmp_path / "t.duckdb") as con:
        calls = api.query(con, "tool-calls")
    assert calls[["tool", "status", "is_error", "ended_by"]].values.tolist() == [["Bash", "error", True, "interrupt"]]


def test_a_subagent_transcript_without_its_parents_folder_is_a_child_session_not_a_duplicate(tmp_path):
    """Recognised from its own records (every message a side chain of one agent), wherever the file lies."""
    from logmine import api

    parent = write_lines(tmp_path / "parent" / "s1.jsonl", [
        claude_line("user", "u1", "2026-01-01T00:00:00Z", {"role": "user", "content": "go"}),
        claude_line("user", "u9", "2026-01-01T00:00:05Z", {"role": "user", "content": "aside"},
                    isSidechain=True, agentId="old"),  # older files keep side chains among the main lines
    ])
    child = write_lines(tmp_path / "elsewhere" / "copied-subagent.jsonl", [
        claude_line("user", f"x{i}", f"2026-01-01T00:00:0{i}Z", {"role": "user", "content": f"step {i}"},
                    isSidechain=True, agentId="abc123")
        for i in range(1, 4)
    ])
    report = api.ingest([str(parent), str(child)], db=tmp_path / "t.duckdb")
    assert [t.status for t in report.transcripts] == ["new", "new"]
    with api.open_db(tmp_path / "t.duckdb") as con:
        sessions = con.execute("SELECT id, parent_id, (SELECT count(*) FROM messages m WHERE m.session_id = s.id) "
                               "FROM sessions s ORDER BY id").fetchall()
    assert sessions == [("s1", None, 2), ("s1:agent-abc123", "s1", 3)]


def test_a_unit_file_the_agent_printed_is_the_state_its_first_write_changed(tmp_path):
    """`systemctl cat` before the first write: the write's change is known, and a read links no run."""
    from logmine import api

    unit = "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m --hicache-ratio {}\n"
    cat_call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ssh node systemctl cat x"}}
    ps_call = {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ssh node 'ps -eo args'"}}
    write_call = {"type": "tool_use", "id": "t3", "name": "Bash", "input": {
        "command": "ssh node 'sudo tee /etc/systemd/system/x.service' <<'EOF'\n" + unit.format(4) + "EOF"}}
    results = [
        ("t1", "# /etc/systemd/system/x.service\n[Unit]\nDescription=x\n\n" + unit.format(2)),
        ("t2", "ARGS\n/usr/bin/python3 -m sglang.launch_server --model-path /m --hicache-ratio 2\nbash\n"),
        ("t3", unit.format(4)),
    ]
    lines = [claude_line("user", "u0", "2026-01-01T00:00:00Z", {"role": "user", "content": "raise the ratio"})]
    for i, (call, (call_id, output)) in enumerate(zip([cat_call, ps_call, write_call], results, strict=True)):
        block = {**assistant_block(call, 1), "id": f"msg_{i}"}
        lines += [claude_line("assistant", f"a{i}", f"2026-01-01T00:00:0{2 * i + 1}Z", block),
                  claude_line("user", f"r{i}", f"2026-01-01T00:00:0{2 * i + 2}Z", {"role": "user", "content": [
                      {"type": "tool_result", "tool_use_id": call_id, "content": output}]})]
    path = write_lines(tmp_path / "s1.jsonl", lines)
    api.ingest([str(path)], db=tmp_path / "t.duckdb")
    with api.open_db(tmp_path / "t.duckdb") as con:
        changes = api.query(con, "config-changes")
    assert changes[["origin", "host", "path"]].fillna("-").values.tolist() == [
        ["unit_read", "node", "/etc/systemd/system/x.service"],
        ["process_args", "node", "-"],
        ["unit_file", "node", "/etc/systemd/system/x.service"],
    ]
    assert changes["changed"].tolist()[2] == {"hicache_ratio": [2, 4]}


def test_copies_edits_and_drop_ins_are_followed_from_the_content_known_before(tmp_path):
    """A unit written locally, copied to the server, edited there with sed and with a drop-in: each
    step's configuration follows from the last known content of the file."""
    from logmine import api

    unit = ("[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m "
            "--hicache-ratio 2.0 --tp 8\n")
    calls = [
        {"type": "tool_use", "id": "t1", "name": "Write", "input": {"file_path": "/tmp/x.service", "content": unit}},
        {"type": "tool_use", "id": "t2", "name": "Bash",
         "input": {"command": "scp /tmp/x.service root@node:/etc/systemd/system/x.service"}},
        {"type": "tool_use", "id": "t3", "name": "Bash", "input": {
            "command": "ssh node \"sudo sed -i 's/--hicache-ratio 2.0/--hicache-ratio 4.0/' "
                       "/etc/systemd/system/x.service\""}},
        {"type": "tool_use", "id": "t4", "name": "Bash", "input": {
            "command": "ssh node 'sudo tee /etc/systemd/system/x.service.d/override.conf' <<'EOF'\n"
                       "[Service]\nExecStart=\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m "
                       "--hicache-ratio 4.0 --tp 4\nEOF"}},
    ]
    lines = [claude_line("user", "u0", "2026-01-01T00:00:00Z", {"role": "user", "content": "go"})]
    for i, call in enumerate(calls):
        lines += [claude_line("assistant", f"a{i}", f"2026-01-01T00:00:0{2 * i + 1}Z",
                              {**assistant_block(call, 1), "id": f"msg_{i}"}),
                  claude_line("user", f"r{i}", f"2026-01-01T00:00:0{2 * i + 2}Z", {"role": "user", "content": [
                      {"type": "tool_result", "tool_use_id": call["id"], "content": "ok"}]})]
    api.ingest([str(write_lines(tmp_path / "s1.jsonl", lines))], db=tmp_path / "t.duckdb")
    with api.open_db(tmp_path / "t.duckdb") as con:
        changes = api.query(con, "config-changes")
        writes = api.sql(con, "SELECT method, host, path, content FROM file_writes ORDER BY message_index")
    assert writes[["method", "host", "path"]].fillna("-").values.tolist() == [
        ["write_tool", "-", "/tmp/x.service"], ["copy", "node", UNIT_PATH], ["sed", "node", UNIT_PATH],
        ["sudo tee", "node", UNIT_PATH + ".d/override.conf"]]
    assert "--hicache-ratio 4.0 --tp 8" in writes["content"][2]
    node = changes[changes["host"] == "node"]
    assert node["path"].tolist() == [UNIT_PATH] * 3
    assert node["changed"].tolist()[1:] == [{"hicache_ratio": [2.0, 4.0]}, {"tp_size": [8, 4]}]


UNIT_PATH = "/etc/systemd/system/x.service"


def test_documented_record_kinds_are_session_events_and_others_unknown_records(tmp_path):
    from logmine import api

    lines = [
        claude_line("user", "u1", "2026-01-01T00:00:00Z", {"role": "user", "content": "go"}),
        {"type": "progress", "sessionId": "s1", "timestamp": "2026-01-01T00:00:01Z", "parentToolUseID": "t1",
         "data": {"type": "bash_progress", "output": "loading", "elapsedTimeSeconds": 3}},
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {"trackedFileBackups": {}},
         "isSnapshotUpdate": False},
        {"type": "queue-operation", "sessionId": "s1", "timestamp": "2026-01-01T00:00:02Z", "operation": "enqueue"},
        {"type": "system", "subtype": "turn_duration", "sessionId": "s1", "timestamp": "2026-01-01T00:00:03Z",
         "durationMs": 2000},
        {"type": "brand-new-line-type", "sessionId": "s1"},
    ]
    api.ingest([str(write_lines(tmp_path / "s1.jsonl", lines))], db=tmp_path / "t.duckdb")
    with api.open_db(tmp_path / "t.duckdb") as con:
        events = con.execute("SELECT kind, happened_at::VARCHAR, data->>'$.operation' FROM session_events "
                             "ORDER BY line").fetchall()
        unknown = con.execute("SELECT record_type FROM unknown_records").fetchall()
    assert events == [("progress", "2026-01-01 00:00:01", None), ("file-history-snapshot", None, None),
                      ("queue-operation", "2026-01-01 00:00:02", "enqueue"),
                      ("system:turn_duration", "2026-01-01 00:00:03", None)]
    assert unknown == [("brand-new-line-type",)]


def test_codex_shell_command_and_apply_patch_calls_write_files_and_configs(tmp_path):
    """gpt-5.2-codex's shell tool is `shell_command` (a command string, `Exit code: N` in its output); its
    edits are freeform `apply_patch` calls. Both kinds of write are followed to the configuration."""
    from logmine import api

    unit = "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m --tp 2\n"
    drop_in = "[Service]\nExecStart=\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m --tp 4\n"
    patch = ("*** Begin Patch\n*** Add File: /etc/systemd/system/sglang.service.d/tp.conf\n"
             + "".join("+" + line + "\n" for line in drop_in.splitlines()) + "*** End Patch")
    when = "2026-03-01T10:00:0{}Z"
    lines = [
        envelope(when.format(0), "session_meta", {"id": "11111111-2222-4333-8444-555555555555"}),
        envelope(when.format(1), "response_item", {
            "type": "function_call", "name": "shell_command", "call_id": "c1", "arguments": json.dumps({
                "command": f"cat > /etc/systemd/system/sglang.service <<'EOF'\n{unit}EOF\nsystemctl daemon-reload",
                "workdir": "/root"})}),
        envelope(when.format(2), "response_item", {"type": "function_call_output", "call_id": "c1",
                                                   "output": "Exit code: 0\nWall time: 0.2 seconds\nOutput:\n"}),
        envelope(when.format(3), "response_item", {"type": "custom_tool_call", "name": "apply_patch",
                                                   "call_id": "c2", "input": patch}),
        envelope(when.format(4), "response_item", {"type": "custom_tool_call_output", "call_id": "c2",
                                                   "output": "Success. Updated the following files:\nA tp.conf"}),
    ]
    path = write_lines(tmp_path / "rollout-2026-03-01T10-00-00-11111111-2222-4333-8444-555555555555.jsonl", lines)
    api.ingest([str(path)], db=tmp_path / "t.duckdb")
    with api.open_db(tmp_path / "t.duckdb") as con:
        assert con.execute("SELECT command, exit_code FROM commands").fetchall() == [
            (f"cat > /etc/systemd/system/sglang.service <<'EOF'\n{unit}EOF\nsystemctl daemon-reload", 0)]
        assert con.execute("SELECT path, method, content FROM file_writes ORDER BY call_id").fetchall() == [
            ("/etc/systemd/system/sglang.service", "heredoc", unit),
            ("/etc/systemd/system/sglang.service.d/tp.conf", "apply_patch", drop_in)]
        changes = api.query(con, "config-changes")
    assert changes["changed"].tolist()[-1] == {"tp_size": [2, 4]}


def test_a_claude_session_opening_with_a_pasted_image_is_still_a_session(tmp_path):
    """The head sniffed for a format ends inside a first message of megabytes: the lines are read on."""
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K" * 40_000}}
    lines = [
        {"type": "file-history-snapshot", "messageId": "u0", "snapshot": {"trackedFileBackups": {}}},
        claude_line("user", "u0", "2026-01-01T00:00:00Z", {"role": "user", "content": [
            image, {"type": "text", "text": "why did the server crash?"}]}),
        {"type": "ai-title", "aiTitle": "Server crash after HiCache", "sessionId": "s1"},
        claude_line("assistant", "a1", "2026-01-01T00:00:05Z",
                    assistant_block({"type": "text", "text": "Looking."}, 3)),
        {"type": "custom-title", "customTitle": "hicache-oom", "sessionId": "s1"},
        {"type": "ai-title", "aiTitle": "Server crash after enabling HiCache", "sessionId": "s1"},
    ]
    path = write_lines(tmp_path / "s1.jsonl", lines)
    assert detect(path) == "claude-code"
    summary = summarise(read_transcripts(path))
    assert [(s.id, s.title) for s in summary.sessions] == [("s1", "hicache-oom")]
    assert len(summary.messages) == 2
    # the title lines are session events, not unknown records
    assert [session_event(r).kind for r in summary.unknown] == [
        "file-history-snapshot", "ai-title", "custom-title", "ai-title"]


def test_an_output_claude_code_saved_apart_is_the_calls_output(tmp_path):
    """Claude Code (2.1.2+) keeps a 2 KB preview of a large output in the transcript and saves the whole of
    it under the session's `tool-results/`: the whole output is the call's, and the saved file is no log
    source of its own. Found at its recorded path, else beside the session file where it was copied."""
    from logmine import api

    journal = "".join(f"Mar 01 10:00:{s:02d} node python3[7]: [2026-03-01 10:00:{s:02d} TP0] Decode batch, "
                      f"#running-req: 1, #token: {s}, token usage: 0.00, cuda graph: True, gen throughput "
                      f"(token/s): 80.00, #queue-req: 0\n" for s in range(60))
    saved = tmp_path / "project" / "s1" / "tool-results" / "toolu_1.txt"
    saved.parent.mkdir(parents=True)
    saved.write_text(journal)
    preview = (f"<persisted-output>\nOutput too large ({len(journal) / 1000:.1f}KB). Full output saved to: "
               f"/home/someone/.claude/projects/p/s1/tool-results/toolu_1.txt\n\nPreview (first 2KB):\n"
               + journal[:2000] + "\n</persisted-output>")
    call = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "journalctl -u sglang"}}
    write_lines(tmp_path / "project" / "s1.jsonl", [
        claude_line("user", "u0", "2026-03-01T10:01:00Z", {"role": "user", "content": "look at the log"}),
        claude_line("assistant", "a1", "2026-03-01T10:01:01Z", assistant_block(call, 1)),
        claude_line("user", "r1", "2026-03-01T10:01:02Z", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": preview}]}),
    ])
    report = api.ingest([str(tmp_path / "project")], db=tmp_path / "t.duckdb")
    assert report.logs.sources == []
    with api.open_db(tmp_path / "t.duckdb") as con:
        assert con.execute("SELECT count(*), count(DISTINCT tp) FROM embedded_lines WHERE kind = 'decode_batch'"
                           ).fetchone() == (60, 1)
        assert con.execute("SELECT length(output) FROM tool_calls").fetchone() == (len(journal),)


def test_a_saved_output_is_read_only_from_its_calls_tool_results_file(tmp_path):
    """A crafted preview naming another file of the machine (or another call's) leaves the preview."""
    from logmine.parsers.transcripts.claude_code import saved_output

    session = tmp_path / "p" / "s1.jsonl"
    saved = tmp_path / "p" / "s1" / "tool-results" / "toolu_1.txt"
    saved.parent.mkdir(parents=True)
    saved.write_text("the whole output\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("do not copy me\n")

    def preview(named: Path) -> str:
        return (f"<persisted-output>\nOutput too large (9.9KB). Full output saved to: {named}\n\n"
                "Preview (first 2KB):\n...")

    assert saved_output(session, "toolu_1", preview(saved)) == "the whole output\n"
    assert saved_output(session, "toolu_1", preview(Path("/elsewhere/s1/tool-results/toolu_1.txt"))) == \
        "the whole output\n"  # copied here: found beside the session
    for crafted, call in ((secret, "toolu_1"), (saved, "toolu_2"), (Path("/etc/tool-results/../passwd"), "toolu_1")):
        assert saved_output(session, call, preview(crafted)) == preview(crafted)
    # An unpacked archive's tool-results/ entry that is a link to a file of this machine is not followed.
    linked = saved.with_name("toolu_3.txt")
    linked.symlink_to(secret)
    assert saved_output(session, "toolu_3", preview(linked)) == preview(linked)
