"""Recognise a transcript file's format cheaply and read any file or directory of them."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import claude_code, codex, opencode
from .common import complete_json_lines, read_head
from .model import Record

OPENCODE_EXPORT = "opencode-export"
OPENCODE_STORAGE = "opencode-storage"
OPENCODE_SQLITE = "opencode-sqlite"
OPENCODE_CONCAT = "opencode-concat"
CLAUDE_CODE = "claude-code"
CODEX = "codex"

_SQLITE_MAGIC = b"SQLite format 3\x00"
_OPENCODE_TABLES = {"session", "message", "part"}
_CLAUDE_LINE_TYPES = {
    "user", "assistant", "system", "summary", "progress", "file-history-snapshot", "queue-operation",
}  # fmt: skip
_CANDIDATE_SUFFIXES = (".jsonl", ".json", ".jsonl.zst", ".db")
# Markers of opencode storage objects in a pretty-printed (multi-line) JSON stream.
_OPENCODE_OBJECT_MARKERS = re.compile(r'"(sessionID|messageID|worktree)"\s*:|"id"\s*:\s*"(ses|msg|prt)_')


def detect(path: Path) -> str | None:
    """The transcript format of `path`, or None. Reads at most the first 64 KB of a file."""
    if path.is_dir():
        return OPENCODE_STORAGE if opencode.find_storage_roots(path) else None
    try:
        head = read_head(path)
    except OSError:
        return None
    if head.startswith(_SQLITE_MAGIC):
        return OPENCODE_SQLITE if _has_opencode_tables(path) else None
    text = head.decode("utf-8", errors="replace").lstrip()
    if re.match(r'\{\s*"info"\s*:', text):
        return OPENCODE_EXPORT
    if _starts_like_storage_object(text) and _OPENCODE_OBJECT_MARKERS.search(text):
        return OPENCODE_CONCAT
    for line in complete_json_lines(head):
        found = _line_format(line)
        if found:
            return found
    return None


def _starts_like_storage_object(text: str) -> bool:
    """Pretty-printed (multi-line) JSON whose first object is an id-keyed storage object or a diff list."""
    return re.match(r'\{\n\s*"id"\s*:', text) is not None or re.match(r"\[\n", text) is not None


def _line_format(line: dict[str, Any]) -> str | None:
    line_type = line.get("type") if isinstance(line.get("type"), str) else None
    message = line.get("message") if isinstance(line.get("message"), dict) else {}
    if line_type in codex.ENVELOPE_TYPES and "payload" in line:
        return CODEX
    if line_type in codex.RESPONSE_ITEM_TYPES and "role" not in message:
        return CODEX  # bare-era ResponseItem
    if "instructions" in line and "id" in line and "sessionId" not in line:
        return CODEX  # bare-era first line
    if "sessionId" in line and (line_type in _CLAUDE_LINE_TYPES or isinstance(line.get("message"), dict)):
        return CLAUDE_CODE
    return None


def _has_opencode_tables(path: Path) -> bool:
    try:
        return _sqlite_tables(path) >= _OPENCODE_TABLES
    except sqlite3.Error:
        return False


def _sqlite_tables(path: Path) -> set[str]:
    """The tables of a SQLite file; raises sqlite3.Error when it cannot be read."""
    connection = opencode.open_readonly(path)
    try:
        return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        connection.close()


def sqlite_problem(path: Path) -> str | None:
    """Why a SQLite file is no opencode database logmine can read; None for other files."""
    try:
        if not read_head(path, len(_SQLITE_MAGIC)).startswith(_SQLITE_MAGIC):
            return None
        tables = _sqlite_tables(path)
    except sqlite3.Error as exc:
        return f"a SQLite database that cannot be read, truncated or corrupt? ({exc})"
    except OSError as exc:
        return f"cannot read ({exc.strerror})"
    if not tables >= _OPENCODE_TABLES:
        return "a SQLite database without opencode's session, message and part tables, not a log or transcript"
    return None


# ----------------------------------------------------------------------------------- reading


def read_transcripts(path: Path) -> Iterator[Record]:
    """Every record in a transcript file, or in every transcript found under a directory."""
    if path.is_dir():
        yield from _read_directory(path)
        return
    yield from _read_file(path, detect(path))


def _read_file(path: Path, found: str | None, seen: opencode.SeenIds | None = None) -> Iterator[Record]:
    if found == OPENCODE_SQLITE:
        yield from opencode.read_sqlite(path, seen)
    elif found == OPENCODE_EXPORT:
        yield from opencode.read_export(path, seen)
    elif found == OPENCODE_CONCAT:
        yield from opencode.read_concat(path, seen)
    elif found == OPENCODE_STORAGE:
        for root in opencode.find_storage_roots(path):
            yield from opencode.read_storage(root, seen)
    elif found == CLAUDE_CODE:
        yield from claude_code.read(path)
    elif found == CODEX:
        yield from codex.read(path)


def _read_directory(root: Path) -> Iterator[Record]:
    """Walk `root`. opencode databases are read before JSON storage so a session found in
    both (JSON left behind by the v1.2 migration) comes from the database."""
    databases, storage_roots, files = _collect(root)
    seen = opencode.SeenIds()
    for database in databases:
        yield from opencode.read_sqlite(database, seen)
    for storage_root in storage_roots:
        yield from opencode.read_storage(storage_root, seen)
    for file_path, found in files:  # exports/dumps of a session already read are skipped too
        yield from _read_file(file_path, found, seen)


def _collect(root: Path) -> tuple[list[Path], list[Path], list[tuple[Path, str]]]:
    databases: list[Path] = []
    storage_roots: list[Path] = []
    files: list[tuple[Path, str]] = []
    for directory, subdirs, names in os.walk(root):
        here = Path(directory)
        if here == root and opencode.is_storage_root(here):
            storage_roots.append(here)
            break
        # A storage tree is read as a whole, not file by file; checking subdirs here
        # (rather than when walked) also catches symlinked trees, which os.walk skips.
        trees = [here / name for name in sorted(subdirs) if opencode.is_storage_root(here / name)]
        storage_roots.extend(trees)
        subdirs[:] = sorted(name for name in subdirs if here / name not in trees)
        for name in sorted(names):
            file_path = here / name
            if not name.endswith(_CANDIDATE_SUFFIXES) or _read_elsewhere(file_path):
                continue
            found = detect(file_path)
            if found == OPENCODE_SQLITE:
                databases.append(file_path)
            elif found:
                files.append((file_path, found))
    return databases, storage_roots, files


def _read_elsewhere(path: Path) -> bool:
    """Subagent files are read with their parent session; a .zst loses to its plain twin."""
    if path.name.endswith(".jsonl.zst") and path.with_suffix("").exists():
        return True
    if claude_code.is_subagent_file(path) and path.parent.name == "subagents":
        session_dir = path.parent.parent
        return (session_dir.parent / f"{session_dir.name}.jsonl").exists()
    return False
