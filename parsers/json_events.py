"""SGLang's JSON event lines, as data: what each event carries and which of its fields get a column.

SGLang writes these with the formatter `%(message)s`, so they have no `[time TPn]` prefix whatever
the server's own lines look like: `log_utils.log_json` (`scheduler.status`, every
`SGLANG_LOG_SCHEDULER_STATUS_INTERVAL` seconds once `SGLANG_LOG_SCHEDULER_STATUS_TARGET` is set) and
`RequestLogger._log_json` (`request.received`, `request.finished` with `--log-requests-format json`).
Each is `json.dumps({"timestamp": <local isoformat>, "event": <name>, **fields})`, to stderr or to
`<dir>/<hostname>_<rank>.log`. An event this table does not name is still stored, by its name.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

# What `json.dumps` writes first for these records (keys in insertion order, `ensure_ascii=False`).
JSON_EVENT_START = '{"timestamp": "'


@dataclass(frozen=True)
class JsonEvent:
    name: str
    doc: str
    columns: dict[str, tuple[str, ...]]  # column -> path of keys into the record
    example: str


JSON_EVENTS: tuple[JsonEvent, ...] = (
    JsonEvent("request.received", "A request reached the tokenizer manager (`obj`: its input, cut by "
              "--log-requests-level).", {},
              '{"timestamp": "2026-03-01T22:43:05.118230", "event": "request.received", "rid": "9f1c2e", '
              '"obj": {"text": "Hello", "sampling_params": {"max_new_tokens": 16}, "rid": "9f1c2e", "stream": false}}'),
    JsonEvent("request.finished", "A request finished (`out.meta_info`: its tokens, latency and finish reason).", {
        "e2e_latency_s": ("out", "meta_info", "e2e_latency"),
        "prompt_tokens": ("out", "meta_info", "prompt_tokens"),
        "completion_tokens": ("out", "meta_info", "completion_tokens"),
        "cached_tokens": ("out", "meta_info", "cached_tokens"),
        "finish_reason": ("out", "meta_info", "finish_reason", "type"),
    }, '{"timestamp": "2026-03-01T22:43:05.931877", "event": "request.finished", "rid": "9f1c2e", '
       '"obj": {"rid": "9f1c2e"}, "out": {"meta_info": {"id": "9f1c2e", "finish_reason": {"type": "length", '
       '"length": 16}, "prompt_tokens": 3, "completion_tokens": 16, "cached_tokens": 0, "e2e_latency": 0.8137}}}'),
    JsonEvent("scheduler.status", "The scheduler's running and queued requests (one rank's file each).", {
        "running_reqs": ("running_rids",), "queued_reqs": ("queued_rids",),
    }, '{"timestamp": "2026-03-01T22:44:05.000410", "event": "scheduler.status", "running_rids": ["9f1c2e"], '
       '"queued_rids": []}'),
)
EVENTS_BY_NAME = {e.name: e for e in JSON_EVENTS}

# Requests SGLang sends itself, told apart from served ones: (purpose, test on the record).
# `/health_generate` names its request `HEALTH_CHECK_<time>` (http_server.py); the warmup after start-up
# asks "The capital city of France is" for 8 tokens (`_execute_server_warmup`; at log levels 0 and 1
# the text is left out, so the runs query also counts a request finished before ready as warmup).
WARMUP_TEXT = "The capital city of France is"
REQUEST_PURPOSES: tuple[tuple[str, Callable[[dict], bool]], ...] = (
    ("health_check", lambda record: str(record.get("rid") or "").startswith("HEALTH_CHECK")),
    ("warmup", lambda record: _obj(record).get("text") == WARMUP_TEXT),
)


def _obj(record: dict) -> dict:
    obj = record.get("obj")
    return obj if isinstance(obj, dict) else {}


def _at(record: object, path: tuple[str, ...]) -> object:
    for key in path:
        if not isinstance(record, dict):
            return None
        record = record.get(key)
    return record


def json_event_fields(body: str) -> dict[str, object] | None:
    """The `json_events` row of a JSON event line, else None (not JSON, or no `event` name)."""
    if not body.startswith(JSON_EVENT_START):
        return None
    try:
        record = json.loads(body)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("event"), str):
        return None
    name = record["event"]
    row: dict[str, object] = {"event": name, "event_ts": _local_time(record.get("timestamp"))}
    rid = record.get("rid")
    row["rid"] = None if rid is None else rid if isinstance(rid, str) else json.dumps(rid)
    spec = EVENTS_BY_NAME.get(name)
    for column, path in (spec.columns if spec else {}).items():
        value = _at(record, path)
        if isinstance(value, list):
            value = len(value)
        elif isinstance(value, dict):
            value = json.dumps(value)
        row[column] = None if value is None else str(value)
    if name.startswith("request."):
        row["purpose"] = next((purpose for purpose, test in REQUEST_PURPOSES if test(record)), "request")
    rest = {k: v for k, v in record.items() if k not in ("timestamp", "event", "rid")}
    row["fields"] = json.dumps(rest, ensure_ascii=False)
    return row


def _local_time(value: object) -> str | None:
    """`2026-03-01T22:43:05.118230` (Python's local isoformat) as `2026-03-01 22:43:05.118230`."""
    if not isinstance(value, str) or len(value) < 19 or value[10] != "T":
        return None
    return value[:10] + " " + value[11:26]
