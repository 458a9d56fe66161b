"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl[.zst]`), streamed.

Two eras: the envelope era (`{timestamp, type, payload}` per line) and the older bare era
(first line `{id, timestamp, instructions}`, then bare ResponseItems). Codex has no message
ids, so one assistant Message is synthesised per model response: the run of consecutive
model output items (reasoning, assistant text, tool calls), which the following
`token_count` event pays for. Usage is the delta of `total_token_usage`, because Codex
re-emits unchanged totals. Forked and subagent rollouts replay their parent's history after
the parent's `session_meta`; that replay is skipped so nothing is counted twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .. import bounded_json
from .common import (
    as_int,
    content_text,
    exit_code_from_text,
    iter_jsonl,
    join_texts,
    parse_timestamp,
    seconds_between,
    unreadable,
    uuid7_time,
)
from .model import Message, ParseProblem, Part, Record, SeenIds, Session, ToolCall, UnknownRecord
from .registry import TranscriptReader

FORMAT = "codex"
ENVELOPE_TYPES = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
RESPONSE_ITEM_TYPES = {
    "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "local_shell_call", "web_search_call",
}  # fmt: skip
TOOL_CALL_ITEMS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
TOOL_OUTPUT_ITEMS = {"function_call_output", "custom_tool_call_output"}
# event_msg types that repeat a response_item (or are consumed as usage): not unknown.
DUPLICATE_EVENTS = {"user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content"}
_USAGE_FIELDS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# A fork re-stamps its replayed history within milliseconds of its creation; anything
# clearly later is the child's own activity (fallback when turn ids are missing).
_REPLAY_WINDOW = timedelta(seconds=2.5)


class CodexReader(TranscriptReader):
    name = FORMAT
    priority = 30  # before Claude Code: a bare-era item line may carry a `message` too

    def recognises_line(self, line: dict[str, Any]) -> bool:
        line_type = line.get("type") if isinstance(line.get("type"), str) else None
        message = line.get("message") if isinstance(line.get("message"), dict) else {}
        return ((line_type in ENVELOPE_TYPES and "payload" in line)
                or (line_type in RESPONSE_ITEM_TYPES and "role" not in message)  # bare-era ResponseItem
                or ("instructions" in line and "id" in line and "sessionId" not in line))  # bare-era first line

    def read(self, path: Path, seen: SeenIds) -> Iterator[Record]:
        return read(path)


READERS = [CodexReader()]


def read(path: Path) -> Iterator[Record]:
    reader = _RolloutReader(path)
    for item in iter_jsonl(path):
        if isinstance(item, ParseProblem):
            yield item
            continue
        try:
            records = list(reader.feed(*item))
        except Exception as exc:  # a field of another type than Codex writes: keep the line as it is
            line_no, line = item
            records = [unreadable(exc, reader.session_id, path, line_no, str(line.get("type")), line)]
        yield from records
    yield from reader.finish()


def session_id_from_filename(path: Path) -> str:
    match = _UUID.search(path.name)
    return match.group(0) if match else path.name.split(".")[0]


@dataclass
class _Envelope:
    kind: str
    payload: dict[str, Any]
    timestamp: datetime | None


def _unwrap(line: dict[str, Any]) -> _Envelope | None:
    """Normalise both eras to (kind, payload, timestamp); None for bare-era state sentinels."""
    if line.get("type") in ENVELOPE_TYPES or "payload" in line:
        payload = line.get("payload") if isinstance(line.get("payload"), dict) else {}
        return _Envelope(str(line.get("type")), payload, parse_timestamp(line.get("timestamp")))
    if line.get("record_type") == "state":
        return None
    if line.get("type") in RESPONSE_ITEM_TYPES:
        return _Envelope("response_item", line, parse_timestamp(line.get("timestamp")))
    if "id" in line and "type" not in line:  # bare-era first line
        return _Envelope("session_meta", line, parse_timestamp(line.get("timestamp")))
    return _Envelope(str(line.get("type", "untyped")), line, parse_timestamp(line.get("timestamp")))


@dataclass
class _PendingAssistant:
    message: Message
    parts: list[Part] = field(default_factory=list)
    accepting_items: bool = True  # false once a tool output or user turn followed it
    has_usage: bool = False


class _RolloutReader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.session_id = session_id_from_filename(path)
        self.meta: dict[str, Any] | None = None
        self.started_at: datetime | None = None
        self.ended_at: datetime | None = None
        self.model: str | None = None
        self.message_count = 0
        self.pending: _PendingAssistant | None = None
        self.open_calls: dict[str, ToolCall] = {}
        self.last_totals: dict[str, int] = {}
        self.replaying = False
        self.replayed_lines = 0

    # ----------------------------------------------------------------------------- input

    def feed(self, line_no: int, line: dict[str, Any]) -> Iterator[Record]:
        envelope = _unwrap(line)
        if envelope is None:
            return
        if envelope.timestamp:
            self.started_at = self.started_at or envelope.timestamp
            self.ended_at = envelope.timestamp
        if self.replaying and self._still_replaying(envelope):
            self.replayed_lines += 1
            self._skip_replayed(envelope)
            return
        handler = {
            "session_meta": self._on_session_meta,
            "turn_context": self._on_turn_context,
            "response_item": self._on_response_item,
            "event_msg": self._on_event,
        }.get(envelope.kind)
        if handler is None:
            yield self._unknown(line_no, envelope.kind, line)
        else:
            yield from handler(line_no, envelope, line)

    def _on_session_meta(self, line_no: int, envelope: _Envelope, line: dict[str, Any]) -> Iterator[Record]:
        payload = envelope.payload
        if self.meta is None:
            self.meta = payload
            self.session_id = str(payload.get("id") or self.session_id)
            self.started_at = parse_timestamp(payload.get("timestamp")) or self.started_at
        elif payload.get("id") != self.session_id:
            self.replaying = True  # the parent's meta: its copied history follows
            self.replayed_lines += 1
        return iter(())

    def _on_turn_context(self, line_no: int, envelope: _Envelope, line: dict[str, Any]) -> Iterator[Record]:
        self.model = envelope.payload.get("model") or self.model
        return iter(())

    def _on_response_item(self, line_no: int, envelope: _Envelope, line: dict[str, Any]) -> Iterator[Record]:
        item = envelope.payload
        item_type = item.get("type")
        if item_type == "message" and item.get("role") != "assistant":
            yield from self._flush_pending()
            yield from self._standalone_message(line_no, envelope)
        elif item_type == "message" or item_type == "reasoning" or item_type in TOOL_CALL_ITEMS:
            yield from self._add_model_output(line_no, envelope)
        elif item_type in TOOL_OUTPUT_ITEMS:
            if self.pending:
                self.pending.accepting_items = False
            call = self._finish_call(item, envelope.timestamp)
            if call:
                yield call
        else:
            yield self._unknown(line_no, f"response_item:{item_type}", line)

    def _on_event(self, line_no: int, envelope: _Envelope, line: dict[str, Any]) -> Iterator[Record]:
        event_type = envelope.payload.get("type")
        if event_type == "token_count":
            yield from self._on_token_count(line_no, envelope)
        elif event_type not in DUPLICATE_EVENTS:
            yield self._unknown(line_no, f"event_msg:{event_type}", line)

    # ------------------------------------------------------------------------ fork replay

    def _fork_instant(self) -> datetime | None:
        meta = self.meta or {}
        return uuid7_time(meta.get("id")) or parse_timestamp(meta.get("timestamp"))

    def _still_replaying(self, envelope: _Envelope) -> bool:
        """Replay ends at the first turn minted after the fork (UUIDv7 turn id), or clearly later."""
        fork_instant = self._fork_instant()
        if fork_instant is None:
            self.replaying = False
            return False
        turn_started = (
            uuid7_time(envelope.payload.get("turn_id")) if envelope.kind == "turn_context" else None
        )
        if (turn_started and turn_started >= fork_instant) or (
            envelope.timestamp and envelope.timestamp > fork_instant + _REPLAY_WINDOW
        ):
            self.replaying = False
        return self.replaying

    def _skip_replayed(self, envelope: _Envelope) -> None:
        """Replayed usage is the parent's, but it moves the running total the child continues from."""
        if envelope.kind == "event_msg" and envelope.payload.get("type") == "token_count":
            self._usage_delta(envelope.payload)

    # ------------------------------------------------------------------------- messages

    def _line_id(self, line_no: int) -> str:
        """Codex items have no ids: '<file>:<line>' is stable across re-reads."""
        return f"{self.path.name}:{line_no}"

    def _new_message(self, line_no: int, envelope: _Envelope, role: str) -> Message:
        message = Message(
            session_id=self.session_id,
            id=self._line_id(line_no),
            index=self.message_count,
            role=role,
            created_at=envelope.timestamp,
            completed_at=envelope.timestamp,
            source_line=line_no,
        )
        self.message_count += 1
        if role == "assistant":
            message.model = self.model
            message.provider = (self.meta or {}).get("model_provider")
        return message

    def _standalone_message(self, line_no: int, envelope: _Envelope) -> Iterator[Record]:
        message = self._new_message(line_no, envelope, str(envelope.payload.get("role", "user")))
        message.text = content_text(envelope.payload.get("content"))
        yield message
        yield _part(message, self._line_id(line_no), 0, envelope.payload, message.text)

    def _add_model_output(self, line_no: int, envelope: _Envelope) -> Iterator[Record]:
        if self.pending is None or not self.pending.accepting_items:
            yield from self._flush_pending()
            self.pending = _PendingAssistant(self._new_message(line_no, envelope, "assistant"))
        pending = self.pending
        item = envelope.payload
        pending.message.completed_at = envelope.timestamp or pending.message.completed_at
        text = _item_text(item)
        part = _part(pending.message, self._line_id(line_no), len(pending.parts), item, text)
        pending.parts.append(part)
        if item.get("type") == "message":
            pending.message.text = join_texts([pending.message.text, text])
        elif item.get("type") in TOOL_CALL_ITEMS:
            yield from self._start_call(line_no, item, pending.message, envelope.timestamp)

    def _flush_pending(self) -> Iterator[Record]:
        if self.pending is not None:
            yield self.pending.message
            yield from self.pending.parts
            self.pending = None

    # ---------------------------------------------------------------------------- usage

    def _usage_delta(self, payload: dict[str, Any]) -> dict[str, int] | None:
        info = payload.get("info")
        if not isinstance(info, dict) or not isinstance(info.get("total_token_usage"), dict):
            return None  # rate-limit-only rows
        totals = {name: as_int(info["total_token_usage"].get(name)) for name in _USAGE_FIELDS}
        delta = {name: totals[name] - self.last_totals.get(name, 0) for name in _USAGE_FIELDS}
        self.last_totals = totals
        return delta if any(delta.values()) else None

    def _on_token_count(self, line_no: int, envelope: _Envelope) -> Iterator[Record]:
        delta = self._usage_delta(envelope.payload)
        if delta is None:
            return
        info_model = envelope.payload["info"].get("model")
        if self.pending is None or self.pending.has_usage:
            # Usage with no model output recorded (e.g. usage-only logs): its own message.
            yield from self._flush_pending()
            self.pending = _PendingAssistant(self._new_message(line_no, envelope, "assistant"))
        message = self.pending.message
        message.model = info_model or message.model
        # Codex input includes cached tokens; the model wants non-cached input.
        message.input_tokens = delta["input_tokens"] - delta["cached_input_tokens"]
        message.cache_read_tokens = delta["cached_input_tokens"]
        message.output_tokens = delta["output_tokens"]
        message.reasoning_tokens = delta["reasoning_output_tokens"]
        self.pending.has_usage = True
        yield from self._flush_pending()

    # ------------------------------------------------------------------------ tool calls

    def _start_call(
        self, line_no: int, item: dict[str, Any], message: Message, timestamp: datetime | None
    ) -> Iterator[Record]:
        call = ToolCall(
            session_id=self.session_id,
            message_id=message.id,
            message_index=message.index,
            call_id=item.get("call_id") or self._line_id(line_no),
            tool=item.get("name") or _default_tool_name(item["type"]),
            input=_call_input(item),
            status="running",
            started_at=timestamp,
        )
        if item["type"] == "web_search_call":  # no output item: the call is all there is
            call.status = (
                "completed" if item.get("status") == "completed" else str(item.get("status", "running"))
            )
            yield call
        else:
            self.open_calls[call.call_id] = call

    def _finish_call(self, item: dict[str, Any], timestamp: datetime | None) -> ToolCall | None:
        call = self.open_calls.pop(str(item.get("call_id")), None)
        if call is None:
            return None
        call.output, call.exit_code = _parse_output(item.get("output"))
        call.status = "completed"
        call.is_error = None if call.exit_code is None else call.exit_code != 0
        call.ended_at = timestamp
        call.duration_s = seconds_between(call.started_at, call.ended_at)
        return call

    # ---------------------------------------------------------------------------- output

    def _unknown(self, line_no: int, record_type: str, line: dict[str, Any]) -> UnknownRecord:
        return UnknownRecord(self.session_id, str(self.path), line_no, record_type, json.dumps(line))

    def finish(self) -> Iterator[Record]:
        yield from self._flush_pending()
        yield from self.open_calls.values()  # calls whose output was never written
        self.open_calls = {}
        yield self._session()

    def _session(self) -> Session:
        meta = self.meta or {}
        source = meta.get("source")
        spawn = (source.get("subagent") or {}).get("thread_spawn") or {} if isinstance(source, dict) else {}
        keep = ("originator", "source", "model_provider", "git", "forked_from_id")
        extra = {key: meta[key] for key in keep if key in meta}
        if self.replayed_lines:
            extra["replayed_parent_lines"] = self.replayed_lines
        return Session(
            format=FORMAT,
            id=self.session_id,
            parent_id=meta.get("forked_from_id") or spawn.get("parent_thread_id"),
            cwd=meta.get("cwd"),
            version=meta.get("cli_version"),
            started_at=self.started_at,
            ended_at=self.ended_at,
            path=str(self.path),
            extra=extra,
        )


def _part(message: Message, part_id: str, index: int, item: dict[str, Any], text: str | None) -> Part:
    data = {key: value for key, value in item.items() if key not in {"type", "content", "summary"}}
    return Part(message.session_id, message.id, part_id, index, str(item.get("type", "unknown")), text, data)


def _item_text(item: dict[str, Any]) -> str | None:
    if item.get("type") == "message":
        return content_text(item.get("content"))
    if item.get("type") == "reasoning":  # encrypted_content is opaque: only summaries are readable
        return content_text(item.get("summary")) or content_text(item.get("content")) or None
    return None


def _default_tool_name(item_type: str) -> str:
    return {"local_shell_call": "local_shell", "web_search_call": "web_search"}.get(item_type, item_type)


def _call_input(item: dict[str, Any]) -> dict[str, Any]:
    if item["type"] == "function_call":
        try:
            arguments = bounded_json.loads(item.get("arguments") or "{}")
        except json.JSONDecodeError:
            return {"raw": item.get("arguments")}
        return arguments if isinstance(arguments, dict) else {"value": arguments}
    if item["type"] == "custom_tool_call":
        return {"input": item.get("input")}
    return item.get("action") if isinstance(item.get("action"), dict) else {}


def _parse_output(raw: Any) -> tuple[str | None, int | None]:
    """Output text and exit code: JSON `{output, metadata.exit_code}` or 'Process exited with code N'."""
    text = raw if isinstance(raw, str) else content_text(raw)
    try:
        wrapped = bounded_json.loads(text) if text.startswith("{") else None
    except json.JSONDecodeError:
        wrapped = None
    if isinstance(wrapped, dict) and "output" in wrapped:
        exit_code = (wrapped.get("metadata") or {}).get("exit_code")
        if isinstance(exit_code, int):
            return str(wrapped["output"]), exit_code
    return text, exit_code_from_text(text)
