"""Normalised records produced by every transcript reader.

All readers yield the same six record types, so storage code never needs to know which
agent wrote a file. Timestamps are timezone-aware UTC datetimes (or None when unknown).
Records of one session may arrive in any order: a reader emits the Session record once
its end time is known, which for streamed formats is after its messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Union


@dataclass
class Session:
    format: str  # 'opencode' | 'claude-code' | 'codex'
    id: str
    parent_id: str | None = None
    title: str | None = None
    cwd: str | None = None
    version: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    path: str | None = None  # source file or directory
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Message:
    session_id: str
    id: str
    index: int  # 0-based position within its session
    role: str  # 'user' | 'assistant' | 'system' | 'developer' | 'tool'
    created_at: datetime | None = None
    completed_at: datetime | None = None
    model: str | None = None
    provider: str | None = None
    input_tokens: int = 0  # non-cached input
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    text: str = ""
    is_sidechain: bool = False
    agent_id: str | None = None
    source_line: int | None = None


@dataclass
class Part:
    session_id: str
    message_id: str
    id: str
    index: int  # 0-based position within its message
    type: str
    text: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolCall:
    session_id: str
    message_id: str
    message_index: int
    call_id: str
    tool: str
    input: dict[str, Any] = field(default_factory=dict)
    output: str | None = None
    status: str = "pending"  # 'completed' | 'error' | 'running' | 'pending'
    is_error: bool | None = None
    exit_code: int | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    duration_s: float | None = None
    child_session_id: str | None = None
    # What ended the call when it did not end by itself: 'timeout', 'interrupt' or 'denied' (see
    # `common.classify_ending`); such a call is an error whatever the reader's status said.
    ended_by: str | None = None


@dataclass
class UnknownRecord:
    """A record the model does not cover; kept verbatim so nothing is silently dropped."""

    session_id: str | None
    path: str
    line: int | None
    record_type: str
    raw: str
    reason: str | None = None  # why a record that looked like a known one could not be read


@dataclass
class ParseProblem:
    path: str
    line: int | None
    message: str


@dataclass
class SeenIds:
    """Sessions/messages already read, so a later, staler copy (JSON beside a database) is skipped."""

    sessions: set[str] = field(default_factory=set)
    messages: set[str] = field(default_factory=set)


class TranscriptUnreadable(Exception):
    """A transcript file that cannot be read as a whole (corrupt or truncated); the message names it."""


_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,), "int": (int,), "float": (int, float), "bool": (bool,), "datetime": (datetime,),
    "dict": (dict,), "None": (type(None),),
}


def type_problem(record: object) -> str | None:
    """The first field of a record whose value is not of its declared type (a transcript line that had
    a wrong type where the reader took the value as it was), else None."""
    for spec in fields(record):  # type: ignore[arg-type]
        value = getattr(record, spec.name)
        allowed = tuple(t for name in str(spec.type).split("|") for t in _TYPES[name.strip().split("[")[0]])
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            return f"{spec.name}: expected {spec.type}, got {type(value).__name__} {str(value)[:40]!r}"
    return None


Record = Union[Session, Message, Part, ToolCall, UnknownRecord, ParseProblem]  # noqa: UP007 (py3.10 target)
