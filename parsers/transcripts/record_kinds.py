"""Record kinds the agent formats document besides messages, parts and tool calls.

They are stored as session events (what happened in the session: a snapshot of tracked files, a queued
prompt, a hook's progress, a turn's context, token counts), typed by kind with their time; a record of a
kind that no format documents stays an unknown record. Sources: ../shared/docs/agent-transcript-formats.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .. import bounded_json
from .common import parse_timestamp
from .model import UnknownRecord

# Kinds as the readers name the records they do not model (`system:<subtype>`, `event_msg:<type>`).
SESSION_EVENT_KINDS = frozenset({
    # Claude Code line types
    "progress", "file-history-snapshot", "queue-operation", "summary", "turn_end", "compact_boundary",
    "ai-title", "custom-title", "agent-name", "last-prompt", "permission-mode",
    # opencode storage objects and export entries
    "project", "session_diff", "session_share", "todo", "migration", "model",
    # Codex rollout items
    "turn_context", "compacted",
})
SESSION_EVENT_PREFIXES = ("system:", "event_msg:")


@dataclass
class SessionEvent:
    session_id: str | None
    path: str
    line: int | None
    kind: str
    happened_at: datetime | None
    data: str  # the record as JSON


def session_event(record: UnknownRecord) -> SessionEvent | None:
    """The record as a session event when its kind is documented and it was read whole, else None."""
    documented = record.record_type in SESSION_EVENT_KINDS or record.record_type.startswith(SESSION_EVENT_PREFIXES)
    if not documented or record.reason is not None:
        return None
    try:
        raw = bounded_json.loads(record.raw)
    except ValueError:
        return None
    return SessionEvent(record.session_id, record.path, record.line, record.record_type, _time_of(raw), record.raw)


def _time_of(raw: object) -> datetime | None:
    """Claude Code and Codex stamp each line (`timestamp`); opencode objects carry `time.created`."""
    if not isinstance(raw, dict):
        return None
    times = raw.get("time")
    return parse_timestamp(raw.get("timestamp") or (times.get("created") if isinstance(times, dict) else None))
