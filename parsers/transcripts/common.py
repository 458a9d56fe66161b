"""Helpers shared by the transcript readers: time parsing, (compressed) JSONL iteration, tool-call endings."""

from __future__ import annotations

import io
import json
import re
import uuid
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from .. import bounded_json
from ..limits import MAX_RECORD_BYTES, LimitExceeded
from .model import ParseProblem, ToolCall, TranscriptUnreadable, UnknownRecord

SNIFF_BYTES = 64 * 1024
HEAD_LINES = 50  # the lines a format is told from
LONG_LINE_CHARS = 32 * 1024 * 1024  # longer than a Claude Code line with a pasted image
_EPOCH_MS_THRESHOLD = 1e11  # numbers above this are epoch milliseconds, below are seconds


def parse_timestamp(value: Any) -> datetime | None:
    """ISO-8601 strings (Claude, Codex) and epoch ms numbers (opencode) to aware UTC datetimes."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value > _EPOCH_MS_THRESHOLD else value
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):  # far outside the years a datetime holds
            return None
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        return parsed.astimezone(timezone.utc)
    return None


def unreadable(exc: Exception, session_id: object, path: object, line: int | None, record_type: str,
               raw: object) -> UnknownRecord:
    """A record a reader could not read (a field of an unexpected type), kept verbatim with the reason."""
    return UnknownRecord(session_id if isinstance(session_id, str) else None, str(path), line, record_type,
                         json.dumps(raw, default=str), f"{type(exc).__name__}: {exc}")


def seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return (end - start).total_seconds()


def uuid7_time(value: str | None) -> datetime | None:
    """Creation time embedded in a UUIDv7 (Codex thread and turn ids), else None."""
    try:
        parsed = uuid.UUID(str(value))
    except (ValueError, TypeError):
        return None
    if parsed.version != 7:
        return None
    return parse_timestamp(parsed.int >> 80)


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def join_texts(texts: Iterable[str | None]) -> str:
    return "\n".join(t for t in texts if t)


def content_text(content: Any) -> str:
    """Text of a string or of a list of content items ({type: text|output_text|input_text, text})."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return join_texts(item.get("text") for item in content if isinstance(item, dict))
    return ""


_EXIT_PATTERNS = (
    re.compile(r"^Exit code:? (-?\d+)", re.MULTILINE),  # Claude Code Bash failures, Codex shell_command
    re.compile(r"Process exited with code (-?\d+)"),  # Codex exec_command
)


def exit_code_from_text(text: str | None) -> int | None:
    if not text:
        return None
    for pattern in _EXIT_PATTERNS:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


def is_zstd(path: Path) -> bool:
    return path.name.endswith(".zst")


def open_text(path: Path) -> IO[str]:
    """Open a text file, decompressing .zst on the fly (streaming, never fully in memory)."""
    if is_zstd(path):
        from ..zstd_stream import ZstdReader  # raises at a frame cut short, where zstandard's reader ends quietly

        return io.TextIOWrapper(ZstdReader(path.open("rb")), encoding="utf-8", errors="replace")
    return path.open("r", encoding="utf-8", errors="replace")


def read_head(path: Path, size: int = SNIFF_BYTES) -> bytes:
    """The first `size` bytes of the (decompressed) file: used for cheap format sniffing."""
    if is_zstd(path):
        import zstandard

        with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
            try:
                return reader.read(size)
            except zstandard.ZstdError:
                return b""
    with path.open("rb") as handle:
        return handle.read(size)


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]] | ParseProblem]:
    """(line number, object) for each JSON-object line; a ParseProblem for malformed ones."""
    import zstandard

    line_no = 0
    try:
        with open_text(path) as handle:
            limit = MAX_RECORD_BYTES.value()
            for line_no, line in enumerate(iter(lambda: handle.readline(limit + 1), ""), start=1):
                if len(line) > limit and not line.endswith("\n"):  # read past, never held whole
                    while (rest := handle.readline(1 << 20)) and not rest.endswith("\n"):
                        pass
                    yield ParseProblem(str(path), line_no, f"a line of over {limit:,} characters: not read "
                                                           f"({MAX_RECORD_BYTES.env})")
                    continue
                yield from _json_object(path, line_no, line)
    except (EOFError, zstandard.ZstdError) as exc:
        raise TranscriptUnreadable(f"{path}: unreadable after line {line_no}, corrupt or truncated? ({exc})") from None
    except LimitExceeded as exc:
        raise TranscriptUnreadable(f"{path}: {exc}") from None


def _json_object(path: Path, line_no: int, line: str) -> Iterator[tuple[int, dict[str, Any]] | ParseProblem]:
    if line.strip():
        try:
            obj = bounded_json.loads(line)
        except json.JSONDecodeError as exc:
            yield ParseProblem(str(path), line_no, f"malformed JSON line: {exc}")
            return
        if not isinstance(obj, dict):
            yield ParseProblem(str(path), line_no, f"expected a JSON object, got {type(obj).__name__}")
            return
        yield line_no, obj


def first_json_lines(path: Path, head: bytes) -> Iterator[dict[str, Any]]:
    """The JSON-object lines among the file's first HEAD_LINES, from its sniffed `head`, or read past it
    when the head is full: a pasted screenshot makes a Claude Code line of megabytes, so the head may end
    inside the first line. A line longer than LONG_LINE_CHARS ends the search."""
    if len(head) < SNIFF_BYTES:
        lines: Iterable[str] = head.decode("utf-8", errors="replace").splitlines()[:HEAD_LINES]
        yield from json_objects(lines)
        return
    import zstandard

    try:
        with open_text(path) as text:
            yield from json_objects(iter(lambda: text.readline(LONG_LINE_CHARS), ""), HEAD_LINES)
    except (OSError, EOFError, zstandard.ZstdError, LimitExceeded):
        return  # what could be read was looked at; reading the file says what is wrong with it


def json_objects(lines: Iterable[str], at_most: int = HEAD_LINES) -> Iterator[dict[str, Any]]:
    """The JSON objects among the first `at_most` lines, up to one longer than LONG_LINE_CHARS."""
    for line_no, line in enumerate(lines):
        if line_no == at_most or len(line) == LONG_LINE_CHARS:
            return
        try:
            obj = bounded_json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            yield obj


# What the agents write into a tool's result when the call did not end by itself, per cause. Anchored
# at the start of the result, except the shell tools' metadata notes, which follow the output (those
# name a text every match holds, looked for first: the regex alone took 1.5 ms on a 35 KB output).
TOOL_ENDINGS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    # opencode: `<bash_metadata>` (`<shell_metadata>` from v1.14.34) after the output
    ("timeout", re.compile(r"\b(?:bash|shell|terminal) tool terminated command after exceeding timeout"),
     " tool terminated command after exceeding timeout"),
    ("interrupt", re.compile(r"^User aborted the command$", re.MULTILINE), "User aborted the command"),
    # Claude Code, Codex and shell tools of other agents
    ("timeout", re.compile(r"\A\s*(?:Error: )?[Cc]ommand timed out after"), ""),
    ("interrupt", re.compile(r"\A\s*\[Request interrupted by user"), ""),
    ("denied", re.compile(r"\A\s*(?:The user doesn't want to proceed with this tool use"
                          r"|Permission to use \S+ has been denied|\S+ requested permissions? to use"
                          r"|exec command rejected by user)"), ""),
)


def classify_ending(call: ToolCall) -> None:
    """Flag a call that a timeout, an interrupt or a denied permission ended (a reader may already
    have from a structured field) as an error: such a call did not do what it was asked."""
    if call.ended_by is None and call.output:
        call.ended_by = next((cause for cause, pattern, held in TOOL_ENDINGS
                              if held in call.output and pattern.search(call.output)), None)
    if call.ended_by is not None:
        call.status, call.is_error = "error", True
