"""opencode sessions in all their stored forms.

* `opencode export` JSON: `{info: Session, messages: [{info: Message, parts: Part[]}]}`.
* JSON storage tree (v0.6 - v1.1.x): `session/<proj>/<ses>.json`, `message/<ses>/<msg>.json`,
  `part/<msg>/<prt>.json`; the older per-project layout (`session/info`, `session/message`,
  `session/part`, and before v0.2.35 parts inline in the message).
* SQLite `opencode.db` / `opencode-<channel>.db` (v1.2+): `data` columns lack the ids. Sessions in
  `session` (renamed `session_v2` by opencode 2); messages in `message`/`part` (v1, frozen by opencode 2)
  and `session_message` (the v2 runtime's: one row per message, parts inline as `content`).
* Storage objects concatenated as a stream of pretty-printed JSON (not JSONL).

Every form is reduced to (session info, [(message info, parts)]) and assembled by one
function, so all of them produce identical records for the same session.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .. import bounded_json
from ..limits import MAX_HELD_BYTES, MAX_RECORD_BYTES
from .common import as_int, join_texts, parse_timestamp, seconds_between, unreadable
from .model import (
    Message,
    ParseProblem,
    Part,
    Record,
    SeenIds,
    Session,
    ToolCall,
    TranscriptUnreadable,
    UnknownRecord,
)
from .registry import TranscriptReader

FORMAT = "opencode"
MessageWithParts = tuple[dict[str, Any], list[dict[str, Any]]]

# Task outputs name the child session in these shapes, by opencode version (doc 2.9).
_CHILD_SESSION_PATTERNS = (
    re.compile(r"task_id: (ses_\w+)"),
    re.compile(r'<task id="(ses_\w+)"'),
    re.compile(r"session_id: (ses_\w+)"),
)


def read(path: Path) -> Iterator[Record]:
    """Read any opencode form; the form is chosen from the path and a peek at the content."""
    if path.is_dir():
        for root in find_storage_roots(path):
            yield from read_storage(root)
    elif path.suffix == ".db":
        yield from read_sqlite(path)
    elif _looks_like_export(path):
        yield from read_export(path)
    else:
        yield from read_concat(path)


def _looks_like_export(path: Path) -> bool:
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        head = handle.read(4096)
    return re.match(r'\s*\{\s*"info"\s*:', head) is not None


# --------------------------------------------------------------------------------- readers

EXPORT = "opencode-export"
STORAGE = "opencode-storage"
SQLITE = "opencode-sqlite"
CONCAT = "opencode-concat"
SQLITE_MAGIC = b"SQLite format 3\x00"
# opencode 2 renamed `session` to `session_v2`; a database may hold both (legacy rows beside their v2 copy).
SESSION_TABLES = ("session_v2", "session")
V1_MESSAGE_TABLES = {"message", "part"}
V2_MESSAGE_TABLE = "session_message"
# Markers of opencode storage objects in a pretty-printed (multi-line) JSON stream.
_OBJECT_MARKERS = re.compile(r'"(sessionID|messageID|worktree)"\s*:|"id"\s*:\s*"(ses|msg|prt)_')


class SqliteReader(TranscriptReader):
    name = SQLITE
    priority = 10
    suffixes = (".db",)
    read_first = True  # the database is newer than JSON storage left behind by the v1.2 migration

    def recognises_head(self, path: Path, head: bytes) -> bool:
        if not head.startswith(SQLITE_MAGIC):
            return False
        try:
            return has_opencode_tables(sqlite_tables(path))
        except sqlite3.Error:
            return False

    def read(self, path: Path, seen: SeenIds) -> Iterator[Record]:
        return read_sqlite(path, seen)


class ExportReader(TranscriptReader):
    name = EXPORT
    priority = 11

    def recognises_head(self, path: Path, head: bytes) -> bool:
        return re.match(r'\{\s*"info"\s*:', _text(head)) is not None

    def read(self, path: Path, seen: SeenIds) -> Iterator[Record]:
        return read_export(path, seen)


class ConcatReader(TranscriptReader):
    name = CONCAT
    priority = 12

    def recognises_head(self, path: Path, head: bytes) -> bool:
        """Pretty-printed (multi-line) JSON whose first object is an id-keyed storage object or a diff list."""
        text = _text(head)
        starts_like_object = re.match(r'\{\n\s*"id"\s*:', text) is not None or re.match(r"\[\n", text) is not None
        return starts_like_object and _OBJECT_MARKERS.search(text) is not None

    def read(self, path: Path, seen: SeenIds) -> Iterator[Record]:
        return read_concat(path, seen)


class StorageReader(TranscriptReader):
    name = STORAGE
    priority = 13
    suffixes = ()

    def recognises_directory(self, path: Path) -> bool:
        return bool(find_storage_roots(path))

    def is_tree_root(self, path: Path) -> bool:
        return is_storage_root(path)

    def read(self, path: Path, seen: SeenIds) -> Iterator[Record]:
        for root in find_storage_roots(path):
            yield from read_storage(root, seen)


READERS = [SqliteReader(), ExportReader(), ConcatReader(), StorageReader()]


def _text(head: bytes) -> str:
    return head.decode("utf-8", errors="replace").lstrip()


def sqlite_tables(path: Path) -> set[str]:
    """The tables of a SQLite file; raises sqlite3.Error when it cannot be read."""
    connection = open_readonly(path)
    try:
        return _table_names(connection)
    finally:
        connection.close()


def _table_names(connection: sqlite3.Connection) -> set[str]:
    return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def has_opencode_tables(tables: set[str]) -> bool:
    """A session table and a message store, of any opencode release from v1.2 on."""
    has_sessions = any(table in tables for table in SESSION_TABLES)
    return has_sessions and (tables >= V1_MESSAGE_TABLES or V2_MESSAGE_TABLE in tables)


def sqlite_problem(path: Path, head: bytes) -> str | None:
    """Why a SQLite file is no opencode database logmine can read; None for other files."""
    if not head.startswith(SQLITE_MAGIC):
        return None
    try:
        tables = sqlite_tables(path)
    except sqlite3.Error as exc:
        return f"a SQLite database that cannot be read, truncated or corrupt? ({exc})"
    if not has_opencode_tables(tables):
        return ("a SQLite database without opencode's session and message tables (session or session_v2; "
                "message and part, or session_message), not a log or transcript")
    return None


# ---------------------------------------------------------------------------------- export


def read_export(path: Path, seen: SeenIds | None = None) -> Iterator[Record]:
    seen = seen or SeenIds()
    if path.stat().st_size > MAX_HELD_BYTES.value():  # an export is one JSON document, read whole
        raise TranscriptUnreadable(f"{path}: an opencode export over {MAX_HELD_BYTES.value():,} bytes, read whole: "
                                   f"refused ({MAX_HELD_BYTES.env})")
    with path.open("r", encoding="utf-8", errors="replace") as handle:  # a bad byte is one character, not the file
        try:
            exported = bounded_json.loads(handle.read())
        except json.JSONDecodeError as exc:
            yield ParseProblem(str(path), exc.lineno, f"malformed opencode export: {exc.msg}")
            return
    if not isinstance(exported, dict):
        yield ParseProblem(str(path), None, f"expected an opencode export object, got {type(exported).__name__}")
        return
    info = exported.get("info")
    if not isinstance(info, dict):
        yield unreadable(TypeError(f"info is {type(info).__name__}"), None, path, None, "session", info)
        info = {}
    if str(info.get("id")) in seen.sessions:
        return
    seen.sessions.add(str(info.get("id")))
    entries = exported.get("messages")
    messages = [(entry.get("info", {}), entry.get("parts", [])) if isinstance(entry, dict) else (entry, [])
                for entry in (entries if isinstance(entries, list) else [])]
    yield from assemble_session(info, messages, str(path))


# ---------------------------------------------------------------------------- storage tree


def is_storage_root(path: Path) -> bool:
    return (path / "session").is_dir() and (
        (path / "message").is_dir() or (path / "session" / "info").is_dir()
    )


def find_storage_roots(data_dir: Path) -> list[Path]:
    """Storage roots in an opencode data dir: itself, `storage/`, or legacy `project/*/storage/`."""
    candidates = [data_dir, data_dir / "storage", *sorted(data_dir.glob("project/*/storage"))]
    return [candidate for candidate in candidates if is_storage_root(candidate)]


def read_storage(root: Path, seen: SeenIds | None = None) -> Iterator[Record]:
    seen = seen or SeenIds()
    legacy = (root / "session" / "info").is_dir()
    info_files = sorted(
        (root / "session" / "info").glob("*.json") if legacy else root.glob("session/*/*.json")
    )
    infos = []
    for info_file in info_files:
        loaded = _load_json_file(info_file)
        if isinstance(loaded, ParseProblem):
            yield loaded
        elif not isinstance(loaded.get("id"), str):
            yield unreadable(TypeError("id is no string"), None, info_file, None, "session", loaded)
        elif loaded["id"] not in seen.sessions:
            infos.append(loaded)
    children = _children_by_parent(infos)
    for info in infos:
        session_id = info["id"]
        seen.sessions.add(session_id)
        problems: list[ParseProblem] = []
        messages = list(_storage_messages(root, session_id, legacy, seen, problems))
        yield from problems
        yield from assemble_session(info, messages, str(root), children.get(session_id, []))


def _storage_messages(
    root: Path, session_id: str, legacy: bool, seen: SeenIds, problems: list[ParseProblem]
) -> Iterator[MessageWithParts]:
    message_dir = root / "session" / "message" / session_id if legacy else root / "message" / session_id
    for message_file in sorted(message_dir.glob("*.json")):
        info = _load_json_file(message_file)
        if isinstance(info, ParseProblem):
            problems.append(info)
            continue
        # opencode names the file by the message's id: its parts are found by it whatever `id` holds.
        message_id = info["id"] if isinstance(info.get("id"), str) else message_file.stem
        if message_id in seen.messages:
            continue
        if isinstance(info.get("parts"), list):  # <= v0.2.34: parts inline, AI-SDK v4 shape
            yield _upgrade_v1_message(info)
            continue
        part_dir = root / "session" / "part" / session_id / message_id if legacy else root / "part" / message_id
        parts = []
        for part_file in sorted(part_dir.glob("*.json")):
            part = _load_json_file(part_file)
            if isinstance(part, ParseProblem):
                problems.append(part)
            else:
                parts.append(part)
        yield info, parts


def _load_json_file(path: Path) -> dict[str, Any] | ParseProblem:
    try:
        with path.open("r", encoding="utf-8") as handle:
            loaded = bounded_json.loads(handle.read())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return ParseProblem(str(path), getattr(exc, "lineno", None), f"malformed JSON file: {exc}")
    if not isinstance(loaded, dict):
        return ParseProblem(str(path), None, "expected a JSON object")
    return loaded


def _upgrade_v1_message(message: dict[str, Any]) -> MessageWithParts:
    """Map a pre-v0.2.35 message (parts inline, `metadata` block) onto the v2 shape."""
    metadata = message.get("metadata") or {}
    assistant = metadata.get("assistant") or {}
    info = {
        "id": message.get("id"),
        "sessionID": metadata.get("sessionID"),
        "role": message.get("role"),
        "time": metadata.get("time") or {},
        "modelID": assistant.get("modelID"),
        "providerID": assistant.get("providerID"),
        "cost": assistant.get("cost"),
        "tokens": assistant.get("tokens"),
    }
    tool_meta = metadata.get("tool") or {}
    parts = []
    for index, part in enumerate(message.get("parts") or []):
        part_id = f"{message.get('id')}:{index}"
        if part.get("type") == "tool-invocation":
            invocation = part.get("toolInvocation") or {}
            call_id = invocation.get("toolCallId")
            state = {
                "status": "completed" if invocation.get("state") == "result" else "running",
                "input": invocation.get("args") or {},
                "output": invocation.get("result"),
                "time": (tool_meta.get(call_id) or {}).get("time") or {},
            }
            parts.append(
                {
                    "id": part_id,
                    "type": "tool",
                    "callID": call_id,
                    "tool": invocation.get("toolName"),
                    "state": state,
                }
            )
        else:
            parts.append({"id": part_id, **part})
    return info, parts


# ---------------------------------------------------------------------------------- SQLite


def read_sqlite(path: Path, seen: SeenIds | None = None) -> Iterator[Record]:
    """Read a v1.2+ database (opencode 2's included) without ever writing to it."""
    seen = seen or SeenIds()
    try:
        connection = open_readonly(path)
    except sqlite3.Error as exc:
        raise TranscriptUnreadable(f"{path}: cannot open the opencode database ({exc})") from None
    connection.row_factory = sqlite3.Row
    # A text that is no UTF-8 is read with its bad bytes replaced: one bad row must not cost the database.
    connection.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    try:
        tables = _table_names(connection)
        infos = [info for info in _sqlite_sessions(connection, tables) if info["id"] not in seen.sessions]
        children = _children_by_parent(infos)
        for info in infos:
            seen.sessions.add(info["id"])
            unknown: list[UnknownRecord] = []
            messages = _sqlite_messages(connection, tables, info["id"], seen, path, unknown)
            yield from unknown
            yield from assemble_session(info, messages, str(path), children.get(info["id"], []))
        orphans = _orphan_parts(connection, tables)
        if orphans:
            yield ParseProblem(str(path), None, f"{orphans:,} parts belong to no message in the database "
                                                "(orphans): not stored")
    except sqlite3.DataError as exc:  # a value over SQLITE_LIMIT_LENGTH: `open_readonly`
        raise TranscriptUnreadable(f"{path}: a row larger than {MAX_RECORD_BYTES.value():,} bytes ({exc}): "
                                   f"refused ({MAX_RECORD_BYTES.env})") from None
    except sqlite3.Error as exc:
        raise TranscriptUnreadable(f"{path}: the opencode database cannot be read, corrupt? ({exc})") from None
    finally:
        connection.close()


def _orphan_parts(connection: sqlite3.Connection, tables: set[str]) -> int:
    """Parts whose message (or its session) the database does not hold: no session reads them."""
    if not tables >= V1_MESSAGE_TABLES:
        return 0
    return connection.execute("SELECT count(*) FROM part p WHERE NOT EXISTS (SELECT 1 FROM message m "
                              "WHERE m.id = p.message_id AND m.session_id = p.session_id)").fetchone()[0]


def open_readonly(path: Path) -> sqlite3.Connection:
    """mode=ro sees a live DB's WAL; immutable=1 is the fallback where -shm cannot be created."""
    uri = path.resolve().as_uri()
    try:
        connection = sqlite3.connect(f"{uri}?mode=ro", uri=True)
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        connection = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True)
    # No value larger than a record may be: a generated column can make a 237 KB file give parts of 900 MB,
    # which SQLite would build in memory. Over it, the query fails (sqlite3.DataError), this input alone.
    connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_RECORD_BYTES.value())
    return connection


def _sqlite_sessions(connection: sqlite3.Connection, tables: set[str]) -> list[dict[str, Any]]:
    """Session infos of every session table; `session_v2`'s row wins over a legacy copy under its id."""
    infos: dict[str, dict[str, Any]] = {}
    for table in (table for table in SESSION_TABLES if table in tables):
        for row in connection.execute(f"SELECT * FROM {table} ORDER BY id"):  # table: one of SESSION_TABLES
            info = _session_row_to_info(row)
            infos.setdefault(info["id"], info)
    return sorted(infos.values(), key=_id_of)


def _session_row_to_info(row: sqlite3.Row) -> dict[str, Any]:
    columns = dict(row)
    info: dict[str, Any] = {
        "id": columns["id"],
        "parentID": columns.get("parent_id"),
        "projectID": columns.get("project_id"),
        "slug": columns.get("slug"),
        "directory": columns.get("directory"),
        "title": columns.get("title"),
        "version": columns.get("version"),
        "time": {"created": columns.get("time_created"), "updated": columns.get("time_updated")},
    }
    for optional in ("workspace_id", "share_url", "agent", "cost", "time_archived", "fork_session_id"):
        if columns.get(optional) is not None:
            info[optional] = columns[optional]
    return info


def _sqlite_messages(
    connection: sqlite3.Connection, tables: set[str], session_id: str, seen: SeenIds, path: Path,
    unknown: list[UnknownRecord],
) -> list[MessageWithParts]:
    """A session's v1 messages, then the v2 rows that continue it.

    opencode 1.x keeps a session with v1 history on v1, and writes a new session's messages either to
    v1 or (experimental v2 runtime) to `session_message` only. opencode 2 freezes the v1 tables and may
    copy a legacy session into `session_message` with new ids but the same times: the v2 rows after the
    last v1 message are the ones v1 does not hold.
    """
    messages = list(_v1_messages(connection, session_id, seen, path, unknown)) if tables >= V1_MESSAGE_TABLES else []
    if V2_MESSAGE_TABLE in tables:
        messages += _v2_messages(connection, session_id, _last_created(messages), seen, path, unknown)
    return messages


def _last_created(messages: list[MessageWithParts]) -> float:
    """The newest `time.created` of the messages; -inf when none has one."""
    times = [key for key, _ in map(_message_sort_key, messages) if key != float("inf")]
    return max(times, default=float("-inf"))


def _row_data(
    row: sqlite3.Row, kind: str, session_id: str, path: Path, unknown: list[UnknownRecord]
) -> dict[str, Any] | None:
    """A row's `data` object; one that is no JSON object goes to `unknown`."""
    try:
        data = bounded_json.loads(row["data"])
        if not isinstance(data, dict):
            raise TypeError(f"expected a JSON object, got {type(data).__name__}")
    except (ValueError, TypeError) as exc:  # JSONDecodeError is a ValueError
        unknown.append(unreadable(exc, session_id, path, None, kind, row["data"]))
        return None
    return data


def _v1_messages(
    connection: sqlite3.Connection, session_id: str, seen: SeenIds, path: Path, unknown: list[UnknownRecord]
) -> Iterator[MessageWithParts]:
    parts_by_message: dict[str, list[dict[str, Any]]] = defaultdict(list)
    part_rows = connection.execute(
        "SELECT id, message_id, session_id, data FROM part WHERE session_id = ? ORDER BY message_id, id",
        (session_id,),
    )
    held, most = 0, MAX_HELD_BYTES.value()
    for row in part_rows:
        held += len(row["data"] or "")
        if held > most:  # a session's parts are held until its messages are read
            raise TranscriptUnreadable(f"{path}: session {session_id}'s parts take over {most:,} bytes: refused "
                                       f"({MAX_HELD_BYTES.env})")
        # part.data lacks its ids: re-add them from the columns (time_* columns are migration times).
        data = _row_data(row, "part", session_id, path, unknown)
        if data is None:
            continue
        part = {
            **data,
            "id": row["id"],
            "messageID": row["message_id"],
            "sessionID": row["session_id"],
        }
        parts_by_message[row["message_id"]].append(part)
    message_rows = connection.execute(
        "SELECT id, session_id, data FROM message WHERE session_id = ? ORDER BY time_created, id",
        (session_id,),
    )
    for row in message_rows:
        data = None if row["id"] in seen.messages else _row_data(row, "message", session_id, path, unknown)
        if data is None:
            continue
        info = {**data, "id": row["id"], "sessionID": row["session_id"]}
        yield info, parts_by_message.get(row["id"], [])


def _v2_messages(
    connection: sqlite3.Connection, session_id: str, after: float, seen: SeenIds, path: Path,
    unknown: list[UnknownRecord],
) -> list[MessageWithParts]:
    """`session_message` rows created after `after`, as v1-shaped (message, parts) pairs."""
    rows = connection.execute(
        "SELECT id, type, data FROM session_message WHERE session_id = ? AND time_created > ? ORDER BY seq",
        (session_id, after),
    )
    messages = []
    for row in rows:
        data = None if row["id"] in seen.messages else _row_data(row, "session_message", session_id, path, unknown)
        if data is not None:
            converted = v2_message(row["id"], session_id, row["type"], data)
            messages += [converted] if converted else []
    return messages


# ---------------------------------------------------------------------- opencode 2 messages
# A `session_message` row (`packages/core/src/session/message.ts` `SessionMessage`) is one whole
# message: its kind in the `type` column, an assistant's parts inline in `content`, times in epoch ms.
# Each is mapped onto the v1 shape so that every store gives the same records.


def v2_message(message_id: str, session_id: str, kind: str, data: dict[str, Any]) -> MessageWithParts | None:
    """The (message, parts) of a `session_message` row; None for kinds that are no turn (switches, system
    context, compaction summaries, idle markers)."""
    converters = {"user": _v2_user, "synthetic": _v2_synthetic, "assistant": _v2_assistant, "shell": _v2_shell}
    converter = converters.get(kind)
    if converter is None:
        return None
    info, parts = converter(data)
    info.update(id=message_id, sessionID=session_id, time=data.get("time") or {})
    return info, [{"id": f"{message_id}:{index}", **part} for index, part in enumerate(parts)]


def _v2_user(data: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    text = {"type": "text", "text": data.get("text") or ""}
    files = [{"type": "file", "url": file.get("uri"), "mime": file.get("mime"), "filename": file.get("name")}
             for file in data.get("files") or [] if isinstance(file, dict)]
    return {"role": "user"}, [text, *files]


def _v2_synthetic(data: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Text opencode injects (e.g. a background task's result), marked `synthetic` as v1 marks it."""
    info, parts = _v2_user(data)
    parts[0]["synthetic"] = True
    return info, parts


def _v2_assistant(data: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One model step: usage on the message itself, as v1's (one-step) message.tokens holds it."""
    model = data.get("model") if isinstance(data.get("model"), dict) else {}
    info = {key: data[key] for key in ("agent", "cost", "tokens", "finish", "error") if key in data}
    info.update(role="assistant", modelID=model.get("id"), providerID=model.get("providerID"))
    parts = [_v2_content_part(content) for content in data.get("content") or [] if isinstance(content, dict)]
    return info, parts


def _v2_content_part(content: dict[str, Any]) -> dict[str, Any]:
    if content.get("type") != "tool":
        return {key: value for key, value in content.items() if key != "id"}
    state = content.get("state") if isinstance(content.get("state"), dict) else {}
    times = content.get("time") if isinstance(content.get("time"), dict) else {}
    error = state.get("error") if isinstance(state.get("error"), dict) else {}
    tool_input = state.get("input")
    return {
        "type": "tool",
        "callID": content.get("callID") or content.get("id"),
        "tool": content.get("name"),
        "state": {
            "status": state.get("status"),
            "input": tool_input if isinstance(tool_input, dict) else {},  # pending: the raw JSON text so far
            "output": _text_content(state.get("content")),
            "error": error.get("message"),
            "metadata": state.get("structured") or {},  # the shell tool's exit code is `structured.exit`
            "time": {"start": times.get("ran"), "end": times.get("completed")},
        },
    }


def _v2_shell(data: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A command the user ran with `!`: stored without its exit code."""
    times = data.get("time") or {}
    state = {
        "status": "completed" if times.get("completed") else "running",
        "input": {"command": data.get("command")},
        "output": data.get("output"),
        "time": {"start": times.get("created"), "end": times.get("completed")},
    }
    return {"role": "user"}, [{"type": "tool", "callID": data.get("callID"), "tool": "shell", "state": state}]


def _text_content(content: Any) -> str | None:
    """The text of a tool result's content list (files and other kinds carry no text)."""
    texts = [item.get("text") for item in content or [] if isinstance(item, dict) and item.get("type") == "text"]
    return "\n".join(text for text in texts if isinstance(text, str)) if texts else None


# ------------------------------------------------------------------- concatenated objects


def read_concat(path: Path, seen: SeenIds | None = None) -> Iterator[Record]:
    """Storage objects `cat`-ed together: a stream of pretty JSON objects in any order."""
    seen = seen or SeenIds()
    text = path.read_text(encoding="utf-8", errors="replace")
    infos: dict[str, dict[str, Any]] = {}
    messages: dict[str, dict[str, Any]] = {}
    parts: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line, obj in _iter_concatenated_objects(text, str(path)):
        if isinstance(obj, ParseProblem):
            yield obj
            continue
        kind = _classify_storage_object(obj)
        try:
            if kind == "session":
                infos[_text_field(obj, "id")] = obj
            elif kind == "message":
                _text_field(obj, "sessionID")
                messages[_text_field(obj, "id")] = obj
            elif kind == "part":
                parts[_text_field(obj, "messageID")].append(obj)
            else:
                yield UnknownRecord(_session_of(obj), str(path), line, kind, json.dumps(obj))
        except (KeyError, TypeError) as exc:  # an id of another type than opencode writes
            yield unreadable(exc, _session_of(obj), path, line, kind, obj)
    for message in messages.values():  # a message whose session object is missing still counts
        infos.setdefault(message["sessionID"], {"id": message["sessionID"]})
    for message_id in parts.keys() - messages.keys():  # a part whose message is missing is kept as it is
        for part in parts[message_id]:
            yield UnknownRecord(_session_of(part), str(path), None, "part", json.dumps(part),
                                "its message is not in the file")
    children = _children_by_parent(infos.values())
    by_session: dict[str, list[MessageWithParts]] = defaultdict(list)
    for message_id, message in messages.items():
        by_session[message["sessionID"]].append((message, sorted(parts.get(message_id, []), key=_id_of)))
    for session_id, info in infos.items():
        if session_id in seen.sessions:
            continue
        seen.sessions.add(session_id)
        yield from assemble_session(
            info, by_session.get(session_id, []), str(path), children.get(session_id, [])
        )


def _iter_concatenated_objects(text: str, path: str) -> Iterator[tuple[int, Any]]:
    decoder = json.JSONDecoder()
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            return
        line = text.count("\n", 0, position) + 1
        try:
            obj, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            yield line, ParseProblem(path, line, f"malformed JSON object: {exc.msg}")
            # Resynchronise at the next object that starts a line.
            next_start = text.find("\n{", position + 1)
            if next_start < 0:
                return
            position = next_start + 1
            continue
        yield line, obj


def _classify_storage_object(obj: Any) -> str:
    if isinstance(obj, list):
        return "session_diff"
    if not isinstance(obj, dict):
        return type(obj).__name__
    object_id = str(obj.get("id", ""))
    if object_id.startswith("prt_") and "messageID" in obj:
        return "part"
    if object_id.startswith("msg_") and "role" in obj:
        return "message"
    if object_id.startswith("ses_") and "time" in obj:
        return "session"
    if "worktree" in obj:
        return "project"
    if set(obj) >= {"id", "secret", "url"}:
        return "session_share"
    return "unknown"


def _session_of(obj: Any) -> str | None:
    return obj.get("sessionID") if isinstance(obj, dict) else None


def _text_field(obj: dict[str, Any], name: str) -> str:
    """An id field, which must be a string (it becomes a key)."""
    value = obj[name]
    if not isinstance(value, str):
        raise TypeError(f"{name} is {type(value).__name__}, not a string")
    return value


# ------------------------------------------------------------------------------- assembly


def _id_of(obj: dict[str, Any]) -> str:
    return str(obj.get("id", ""))


def _children_by_parent(infos: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    children: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for info in infos:
        if info.get("parentID"):
            children[info["parentID"]].append(info)
    return children


def _message_sort_key(message: MessageWithParts) -> tuple[float, str]:
    info = message[0] if isinstance(message[0], dict) else {}
    times = info.get("time") if isinstance(info.get("time"), dict) else {}
    created = times.get("created")
    return (created if isinstance(created, (int, float)) else float("inf"), _id_of(info))


def assemble_session(
    info: dict[str, Any],
    messages: list[MessageWithParts],
    path: str,
    children: list[dict[str, Any]] | None = None,
) -> Iterator[Record]:
    """Records for one session from its info object and its (message, parts) pairs."""
    first = messages[0][0] if messages and isinstance(messages[0][0], dict) else {}
    session_id = info.get("id") or first.get("sessionID") or "unknown"
    try:
        yield _session_record(info, session_id, path)
    except Exception as exc:  # a field of another type than opencode writes: keep it, and the messages
        yield unreadable(exc, session_id, path, None, "session", info)
        yield Session(format=FORMAT, id=session_id, path=path)
    # A record of another shape than opencode writes is kept as it is, with the reason; the rest is read.
    for index, (message_info, parts) in enumerate(sorted(messages, key=_message_sort_key)):
        parts = [part for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []
        try:
            message = _message_record(message_info, parts, session_id, index)
        except Exception as exc:
            yield unreadable(exc, session_id, path, None, "message", {"info": message_info, "parts": parts})
            continue
        yield message
        for part_index, part in enumerate(parts):
            try:
                records: list[Record] = [_part_record(part, message, part_index)]
                if part.get("type") == "tool":
                    records.append(_tool_call_record(part, message, children or []))
            except Exception as exc:
                records = [unreadable(exc, session_id, path, None, "part", part)]
            yield from records


def _session_record(info: dict[str, Any], session_id: str, path: str) -> Session:
    times = info.get("time") or {}
    core = {"id", "parentID", "title", "directory", "version", "time"}
    return Session(
        format=FORMAT,
        id=session_id,
        parent_id=info.get("parentID"),
        title=info.get("title"),
        cwd=info.get("directory"),
        version=info.get("version"),
        started_at=parse_timestamp(times.get("created")),
        ended_at=parse_timestamp(times.get("updated")),
        path=path,
        extra={key: value for key, value in info.items() if key not in core},
    )


def _message_record(
    info: dict[str, Any], parts: list[dict[str, Any]], session_id: str, index: int
) -> Message:
    times = info.get("time") or {}
    user_model = info.get("model") if isinstance(info.get("model"), dict) else {}
    message = Message(
        session_id=session_id,
        id=info.get("id", f"{session_id}:{index}"),
        index=index,
        role=info.get("role", "unknown"),
        created_at=parse_timestamp(times.get("created")),
        completed_at=parse_timestamp(times.get("completed")),
        model=info.get("modelID") or user_model.get("modelID"),
        provider=info.get("providerID") or user_model.get("providerID"),
        text=join_texts(part.get("text") for part in parts if part.get("type") == "text"),
        agent_id=info.get("agent") or info.get("mode"),
    )
    _apply_usage(message, info, parts)
    return message


def _apply_usage(message: Message, info: dict[str, Any], parts: list[dict[str, Any]]) -> None:
    """Sum the step-finish parts: message.tokens only holds the last step."""
    steps = [part for part in parts if part.get("type") == "step-finish"]
    token_sources = [step.get("tokens") or {} for step in steps] or [info.get("tokens") or {}]
    for tokens in token_sources:
        cache = tokens.get("cache") or {}
        message.input_tokens += as_int(tokens.get("input"))
        message.output_tokens += as_int(tokens.get("output"))
        message.reasoning_tokens += as_int(tokens.get("reasoning"))
        message.cache_read_tokens += as_int(cache.get("read"))
        message.cache_write_tokens += as_int(cache.get("write"))
    costs = [step.get("cost") for step in steps] if steps else [info.get("cost")]
    numeric_costs = [cost for cost in costs if isinstance(cost, (int, float))]
    message.cost_usd = sum(numeric_costs) if numeric_costs else None


def _part_record(part: dict[str, Any], message: Message, index: int) -> Part:
    text = part.get("text") if isinstance(part.get("text"), str) else None
    data = {key: value for key, value in part.items() if key not in {"id", "sessionID", "messageID", "type", "text"}}
    return Part(message.session_id, message.id, part.get("id", f"{message.id}:{index}"), index,
                part.get("type", "unknown"), text, data)


def _tool_call_record(part: dict[str, Any], message: Message, children: list[dict[str, Any]]) -> ToolCall:
    state = part.get("state") or {}
    status = state.get("status", "pending")
    times = state.get("time") or {}
    started, ended = parse_timestamp(times.get("start")), parse_timestamp(times.get("end"))
    metadata = state.get("metadata") or {}
    exit_code = metadata.get("exit")
    output = state.get("error") if status == "error" else state.get("output")
    call = ToolCall(
        session_id=message.session_id,
        message_id=message.id,
        message_index=message.index,
        call_id=part.get("callID") or part.get("id", ""),
        tool=part.get("tool", "unknown"),
        input=state.get("input") if isinstance(state.get("input"), dict) else {},
        output=output if isinstance(output, str) else None,
        status=status,
        is_error={"completed": False, "error": True}.get(status),
        exit_code=exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None,
        started_at=started,
        ended_at=ended,
        duration_s=seconds_between(started, ended),
    )
    if call.tool == "task":
        call.child_session_id = _child_session_id(metadata, call, children)
    return call


def _child_session_id(metadata: dict[str, Any], call: ToolCall, children: list[dict[str, Any]]) -> str | None:
    """metadata.sessionId, else the id named in the output, else a child created during the call."""
    if isinstance(metadata.get("sessionId"), str):
        return metadata["sessionId"]
    for pattern in _CHILD_SESSION_PATTERNS:
        match = pattern.search(call.output or "")
        if match:
            return match.group(1)
    for child in children:
        created = parse_timestamp((child.get("time") or {}).get("created"))
        if call.started_at and call.ended_at and created and call.started_at <= created <= call.ended_at:
            return child["id"]
    return None
