"""Claude Code session JSONL (`~/.claude/projects/<cwd>/<sessionId>.jsonl`).

Claude Code writes every content block of one API response as its own line, repeating
`message.id` and `usage`; lines are merged back into one Message and usage is counted once
per (message.id, requestId). tool_use blocks are paired with tool_result blocks by id.
Subagent transcripts (`<sessionId>/subagents/agent-<id>.jsonl`) are read as child sessions.

A session file is accumulated before its records are emitted, because a message's usage
and a tool call's result arrive on later lines; files are one session each, so this is bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .common import (
    as_int,
    content_text,
    exit_code_from_text,
    iter_jsonl,
    join_texts,
    parse_timestamp,
    seconds_between,
    unreadable,
)
from .model import Message, ParseProblem, Part, Record, SeenIds, Session, ToolCall, UnknownRecord
from .registry import TranscriptReader

FORMAT = "claude-code"
PROVIDER = "anthropic"
LINE_TYPES = {
    "user", "assistant", "system", "summary", "progress", "file-history-snapshot", "queue-operation",
    "ai-title", "custom-title", "agent-name", "last-prompt", "permission-mode",  # 2.1.x
}  # fmt: skip
# A session's title, by the line that names it, the first found winning: one the user set (`/rename`),
# else the one Claude Code wrote (2.1.x), else the summary of older versions; the last line of each counts.
TITLE_FIELDS = (("custom-title", "customTitle"), ("ai-title", "aiTitle"), ("summary", "summary"))
_AGENT_ID_IN_TEXT = re.compile(r"agentId: (\w[\w-]*)")
_SESSION_ID_FIELD = re.compile(rb'"sessionId":\s*"[\w-]+"')
_SAVED_OUTPUT = re.compile(r"^Output too large \([^)]*\)\. Full output saved to: (?P<path>.+)$", re.MULTILINE)
SAVED_OUTPUT_MAX_CHARS = 64 * 1024 * 1024  # a larger saved output stays its preview
_CONTEXT_FIELDS = ("cwd", "version", "slug", "gitBranch", "userType")
MAX_WAITING_CALLS = 1000  # finished calls held behind an unfinished one before they go out of order
_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def read(path: Path) -> Iterator[Record]:
    """The session in `path`, then its subagent transcripts as child sessions."""
    yield from read_file(path)
    for child_path in subagent_files(path):
        yield from read_file(child_path)


class ClaudeCodeReader(TranscriptReader):
    name = FORMAT
    priority = 40

    def recognises_head(self, path: Path, head: bytes) -> bool:
        """A first line longer than the head (a pasted image of megabytes, on standard input or past the
        lines a file's format is told from): Claude Code writes the session id before the message."""
        return b"\n" not in head and head.startswith(b"{") and _SESSION_ID_FIELD.search(head[:4096]) is not None

    def recognises_line(self, line: dict[str, Any]) -> bool:
        line_type = line.get("type") if isinstance(line.get("type"), str) else None
        return "sessionId" in line and (line_type in LINE_TYPES or isinstance(line.get("message"), dict))

    def read_elsewhere(self, path: Path) -> bool:
        """A subagent file is read with its parent session, when the parent is there, and so is an output
        the session saved apart."""
        if is_saved_tool_output(path):
            return True
        if is_subagent_file(path) and path.parent.name == "subagents":
            session_dir = path.parent.parent
            return (session_dir.parent / f"{session_dir.name}.jsonl").exists()
        return False

    def read(self, path: Path, seen: SeenIds) -> Iterator[Record]:
        return read(path)


READERS = [ClaudeCodeReader()]


def subagent_files(session_path: Path) -> list[Path]:
    return sorted((session_path.parent / session_path.stem / "subagents").glob("agent-*.jsonl"))


def is_subagent_file(path: Path) -> bool:
    return path.name.startswith("agent-") and path.suffix == ".jsonl"


def tool_results_folder(path: Path) -> Path:
    """Where Claude Code (2.1.2+) saves the whole output of a call too large for the transcript: the
    session's folder beside its file, also a subagent's (`<sessionId>/subagents/agent-<id>.jsonl`)."""
    session_dir = path.parent.parent if path.parent.name == "subagents" else path.parent / path.stem
    return session_dir / "tool-results"


def is_saved_tool_output(path: Path) -> bool:
    """A file of a session's `tool-results/` folder, read as its call's output."""
    if path.parent.name != "tool-results":
        return False
    session_dir = path.parent.parent
    return (session_dir.parent / f"{session_dir.name}.jsonl").exists()


def saved_output(path: Path, call_id: str, preview: str) -> str:
    """The whole output a `<persisted-output>` preview names, when it can be read here (at its recorded
    path, else in the session's `tool-results/` beside this file) and is not over SAVED_OUTPUT_MAX_CHARS.
    Only a file of a `tool-results/` folder named after the call is read: a transcript from elsewhere
    cannot have any other file of this machine copied into the database."""
    named = _SAVED_OUTPUT.search(preview) if preview.startswith("<persisted-output>") else None
    recorded = Path(named.group("path").strip()) if named else None
    if recorded is None or recorded.parent.name != "tool-results" or not recorded.name.startswith(call_id + "."):
        return preview
    for candidate in (recorded, tool_results_folder(path) / recorded.name):
        with contextlib.suppress(OSError, ValueError):
            text = _read_saved(candidate)
            if text is not None:
                return text if len(text) <= SAVED_OUTPUT_MAX_CHARS else preview
    return preview


def _read_saved(candidate: Path) -> str | None:
    """A saved output's text: a regular file, reached without a link (an unpacked archive's link could point
    anywhere, a key file among others), in a folder really named tool-results; None otherwise."""
    if Path(os.path.realpath(candidate.parent)).name != "tool-results":
        return None
    fd = os.open(candidate, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO must not block the read
    with open(fd, encoding="utf-8", errors="replace") as saved:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return saved.read(SAVED_OUTPUT_MAX_CHARS + 1)


def child_session_id(parent_session_id: str, agent_id: str) -> str:
    """Subagent files carry the parent's sessionId, so a child is named by parent + agentId."""
    return f"{parent_session_id}:agent-{agent_id}"


def read_file(path: Path) -> Iterator[Record]:
    """The records of one session file, streamed: a first pass learns what only the whole file says (the
    session's id, title and times, and the last line of each message and tool call), the second emits
    each message and call once its last line is read, so memory holds only those still open."""
    ends = _SessionBuilder(path)
    for item in iter_jsonl(path):
        if not isinstance(item, ParseProblem):
            with contextlib.suppress(Exception):  # the second pass keeps the line with its reason
                ends.add_line(*item)
    session, last_lines = ends.session(), ends.last_lines
    del ends  # what the first pass kept of every message and call
    yield session
    builder = _SessionBuilder(path, session.id, last_lines)
    for item in iter_jsonl(path):
        if isinstance(item, ParseProblem):
            yield item
            continue
        try:
            builder.add_line(*item)
        except Exception as exc:  # a field of another type than Claude Code writes: keep the line as it is
            line_no, line = item
            yield unreadable(exc, line.get("sessionId"), path, line_no, str(line.get("type")), line)
        yield from builder.finished(item[0])
    yield from builder.finished(None)


@dataclass
class _PendingMessage:
    message: Message
    blocks: list[dict[str, Any]] = field(default_factory=list)
    usage_by_request: dict[str, dict[str, int]] = field(default_factory=dict)
    cost_by_request: dict[str, float] = field(default_factory=dict)


class _SessionBuilder:
    """Reads a session's lines; given the session's id and the last line of each message and tool call (a
    first pass's `last_lines`), it hands them out as soon as they are complete (`finished`)."""

    def __init__(self, path: Path, final_session_id: str | None = None,
                 ends: dict[tuple[str, str], int] | None = None) -> None:
        self.path = path
        self.final_session_id = final_session_id
        self.ends = ends
        self.last_lines: dict[tuple[str, str], int] = {}  # ("message" | "call", key) -> last line touching it
        self.message_keys: set[str] = set()  # every message key seen: a key's index is its rank
        self.call_ids: set[str] = set()  # every tool call id seen: a call without one is named by the count
        self.call_order: deque[str] = deque()  # ids of the calls not yet handed out, in the order first seen
        self.keep_content = ends is not None  # a first pass only learns where things end
        self.closing: dict[int, list[str]] = defaultdict(list)  # line -> message keys complete after it
        for (kind, key), line_no in (ends or {}).items():
            if kind == "message":
                self.closing[line_no].append(key)
        self.session_id: str | None = None
        self.agent_id: str | None = None
        # A subagent transcript is recognised by its records wherever the file lies: every message
        # line is a side chain of one agent (older main files hold side chains among their own lines).
        self.sidechain_agent: str | None = None
        self.has_main_lines = False
        self.context: dict[str, Any] = {}  # cwd, version, ...: first value seen wins
        self.titles: dict[str, str] = {}  # line type -> the title it gave
        self.started_at = None
        self.ended_at = None
        self.messages: dict[str, _PendingMessage] = {}
        self.tool_calls: dict[str, ToolCall] = {}
        self.unknown: list[tuple[int, str, dict[str, Any]]] = []

    # ----------------------------------------------------------------------------- input

    def add_line(self, line_no: int, line: dict[str, Any]) -> None:
        self._note_session_fields(line)
        line_type = line.get("type") or (line.get("message") or {}).get("role")  # legacy lines lack type
        if line_type == "assistant":
            self._add_assistant_line(line_no, line)
        elif line_type == "user":
            self._add_user_line(line_no, line)
        else:
            title = dict(TITLE_FIELDS).get(line_type)
            if title and isinstance(line.get(title), str):
                self.titles[line_type] = line[title]
            if self.keep_content:
                self.unknown.append((line_no, _record_type(line, line_type), line))

    def _note_session_fields(self, line: dict[str, Any]) -> None:
        if self.session_id is None and line.get("sessionId"):
            self.session_id = line["sessionId"]
        if self.agent_id is None and line.get("agentId") and is_subagent_file(self.path):
            self.agent_id = line["agentId"]
        if line.get("type") in ("user", "assistant"):
            if line.get("isSidechain") is True and isinstance(line.get("agentId"), str):
                self.sidechain_agent = self.sidechain_agent or line["agentId"]
            else:
                self.has_main_lines = True
        for key in _CONTEXT_FIELDS:
            if key in line and key not in self.context:
                self.context[key] = line[key]
        timestamp = parse_timestamp(line.get("timestamp"))
        if timestamp:
            self.started_at = min(self.started_at or timestamp, timestamp)
            self.ended_at = max(self.ended_at or timestamp, timestamp)

    def _new_message(self, key: str, line_no: int, line: dict[str, Any], role: str) -> _PendingMessage:
        self.message_keys.add(key)
        message = Message(
            session_id="",  # filled in when the session id is final
            id=key,
            index=len(self.message_keys) - 1,
            role=role,
            created_at=parse_timestamp(line.get("timestamp")),
            completed_at=parse_timestamp(line.get("timestamp")),
            is_sidechain=bool(line.get("isSidechain")),
            agent_id=line.get("agentId"),
            source_line=line_no,
        )
        pending = _PendingMessage(message)
        self.messages[key] = pending
        return pending

    def _touch(self, kind: str, key: str, line_no: int) -> None:
        if not self.keep_content:  # the first pass
            self.last_lines[(kind, key)] = line_no

    def _add_assistant_line(self, line_no: int, line: dict[str, Any]) -> None:
        body = line.get("message") or {}
        key = body.get("id") or line.get("uuid") or f"{self.path.name}:{line_no}"
        pending = self.messages.get(key) or self._new_message(key, line_no, line, "assistant")
        self._touch("message", key, line_no)
        message = pending.message
        message.model = message.model or body.get("model")
        message.provider = PROVIDER
        message.completed_at = parse_timestamp(line.get("timestamp")) or message.completed_at
        request = line.get("requestId") or line.get("uuid") or str(line_no)
        _merge_usage(pending.usage_by_request.setdefault(request, {}), body.get("usage") or {})
        if isinstance(line.get("costUSD"), (int, float)):
            pending.cost_by_request[request] = line["costUSD"]
        for block in _blocks(body.get("content")):
            if self.keep_content:
                pending.blocks.append(block)
            if block.get("type") == "tool_use":
                self._start_tool_call(block, message, line, line_no)

    def _add_user_line(self, line_no: int, line: dict[str, Any]) -> None:
        body = line.get("message") or {}
        blocks = _blocks(body.get("content"))
        only_results = bool(blocks) and all(block.get("type") == "tool_result" for block in blocks)
        key = line.get("uuid") or f"{self.path.name}:{line_no}"
        pending = self._new_message(key, line_no, line, "tool" if only_results else "user")
        self._touch("message", key, line_no)
        if self.keep_content:
            pending.blocks.extend(blocks)
        for block in blocks:
            if block.get("type") == "tool_result":
                self._finish_tool_call(block, line, line_no)

    def _start_tool_call(self, block: dict[str, Any], message: Message, line: dict[str, Any], line_no: int) -> None:
        call_id = block.get("id") or f"{message.id}:{len(self.call_ids)}"
        if call_id not in self.call_ids:
            self.call_ids.add(call_id)
            self.call_order.append(call_id)
        self._touch("call", call_id, line_no)
        self.tool_calls[call_id] = ToolCall(
            session_id="",
            message_id=message.id,
            message_index=message.index,
            call_id=call_id,
            tool=block.get("name", "unknown"),
            input=block.get("input") if isinstance(block.get("input"), dict) else {},
            started_at=parse_timestamp(line.get("timestamp")),
        )

    def _finish_tool_call(self, block: dict[str, Any], line: dict[str, Any], line_no: int) -> None:
        call = self.tool_calls.get(block.get("tool_use_id", ""))
        if call is None:
            return  # result without its call (e.g. truncated file); the Part still keeps it
        self._touch("call", call.call_id, line_no)
        result = line.get("toolUseResult")
        call.output = content_text(block.get("content"))
        call.is_error = bool(block.get("is_error"))
        call.status = "error" if call.is_error else "completed"
        call.ended_at = parse_timestamp(line.get("timestamp"))
        call.duration_s = seconds_between(call.started_at, call.ended_at)
        call.exit_code = _exit_code(call, result)
        if isinstance(result, dict) and result.get("interrupted") is True:
            call.ended_by = "interrupt"
        agent_id = _agent_id_of(result, call.output)
        if agent_id and line.get("sessionId"):
            call.child_session_id = child_session_id(line["sessionId"], agent_id)
        call.output = saved_output(self.path, call.call_id, call.output) if self.keep_content else None

    # ---------------------------------------------------------------------------- output

    def finished(self, line_no: int | None) -> Iterator[Record]:
        """The messages, tool calls and other lines complete once line `line_no` is read (all that is
        left at the end, None). Calls come in the order they started, as the session made them."""
        for key in self.closing.pop(line_no, ()) if line_no is not None else list(self.messages):
            pending = self.messages.pop(key, None)
            if pending is not None:
                yield from self._message_records(pending)
        while self.call_order and (line_no is None or self._end(self.call_order[0]) <= line_no):
            yield self._call_record(self.call_order.popleft())
        if len(self.call_order) > MAX_WAITING_CALLS:  # one call without its result holds back the rest
            for call_id in [c for c in self.call_order if self._end(c) <= line_no]:
                self.call_order.remove(call_id)
                yield self._call_record(call_id)
        for unknown_line, record_type, line in self.unknown:
            yield UnknownRecord(self.final_session_id, str(self.path), unknown_line, record_type, json.dumps(line))
        self.unknown = []

    def _end(self, call_id: str) -> int:
        return (self.ends or {}).get(("call", call_id), 0)

    def _message_records(self, pending: _PendingMessage) -> list[Record]:
        try:
            message = _finalise_message(pending, self.final_session_id or "")
            return [message, *_parts(pending.blocks, message)]
        except Exception as exc:  # a block of another shape than Claude Code writes
            return [unreadable(exc, self.final_session_id, self.path, pending.message.source_line, "message",
                               pending.blocks)]

    def _call_record(self, call_id: str) -> ToolCall:
        call = self.tool_calls.pop(call_id)
        call.session_id = self.final_session_id or ""
        return call

    def session(self) -> Session:
        """The session record, once every line is read."""
        parent_id = None
        session_id = self.session_id or self.path.stem
        if self.agent_id is None and not self.has_main_lines:
            self.agent_id = self.sidechain_agent
        if self.agent_id and self.session_id:
            parent_id, session_id = self.session_id, child_session_id(self.session_id, self.agent_id)
        context = self.context
        extra = {key: context[key] for key in ("slug", "gitBranch", "userType") if key in context}
        if self.agent_id:
            extra["agent_id"] = self.agent_id
        return Session(
            format=FORMAT,
            id=session_id,
            parent_id=parent_id,
            title=next((self.titles[kind] for kind, _ in TITLE_FIELDS if kind in self.titles), None),
            cwd=context.get("cwd"),
            version=context.get("version"),
            started_at=self.started_at,
            ended_at=self.ended_at,
            path=str(self.path),
            extra=extra,
        )


def _record_type(line: dict[str, Any], line_type: str | None) -> str:
    if line_type == "system":
        subtype = line.get("subtype")
        return "compact_boundary" if subtype == "compact_boundary" else f"system:{subtype}"
    return line_type or "untyped"


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def _merge_usage(accumulated: dict[str, int], usage: dict[str, Any]) -> None:
    """Streamed lines of one request repeat usage with growing output: keep the maximum."""
    for name in _USAGE_FIELDS:
        accumulated[name] = max(accumulated.get(name, 0), as_int(usage.get(name)))


def _finalise_message(pending: _PendingMessage, session_id: str) -> Message:
    message = pending.message
    message.session_id = session_id
    for usage in pending.usage_by_request.values():
        message.input_tokens += usage["input_tokens"]
        message.output_tokens += usage["output_tokens"]
        message.cache_read_tokens += usage["cache_read_input_tokens"]
        message.cache_write_tokens += usage["cache_creation_input_tokens"]
    if pending.cost_by_request:
        message.cost_usd = sum(pending.cost_by_request.values())
    message.text = join_texts(block.get("text") for block in pending.blocks if block.get("type") == "text")
    return message


def _parts(blocks: list[dict[str, Any]], message: Message) -> Iterator[Part]:
    for index, block in enumerate(blocks):
        block_type = block.get("type", "unknown")
        if block_type == "thinking":
            text = block.get("thinking")
        elif block_type == "tool_result":
            text = content_text(block.get("content"))
        else:
            text = block.get("text")
        data = {key: value for key, value in block.items() if key not in {"type", "text", "thinking"}}
        part_id = block.get("id") or f"{message.id}:{index}"
        yield Part(message.session_id, message.id, part_id, index, block_type, text, data)


def _exit_code(call: ToolCall, result: Any) -> int | None:
    """Claude stores no exit code: parse 'Exit code N' on failures; a plain Bash success is 0."""
    if call.is_error:
        return exit_code_from_text(call.output)
    if call.tool != "Bash" or not isinstance(result, dict):
        return None
    if result.get("interrupted") or result.get("backgroundTaskId"):
        return None  # still running or killed: the exit status is unknown
    return 0


def _agent_id_of(result: Any, output: str | None) -> str | None:
    if isinstance(result, dict) and isinstance(result.get("agentId"), str):
        return result["agentId"]
    match = _AGENT_ID_IN_TEXT.search(output or "")
    return match.group(1) if match else None
