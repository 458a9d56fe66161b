"""What lines logmine cannot read look like, said in a sentence: the shapes a new format tends to take.

Each shape is a test on a line, the words that name it and an example line that must be named so. The
first shape most of the sample lines take names them; the JSON and key=value shapes name their most
common keys, the others show how the lines begin, digits masked (`9999-99-99 99:99:99 |`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

MAX_KEYS = 6
HEAD_CHARS = 30
LOGFMT_PAIR = re.compile(r'(?:^|\s)([A-Za-z_][\w.]*)=(?:"[^"]*"|\S+)')
STAMP_START = re.compile(r"\[?\d{2,4}[-/.]\d\d[-/.]\d\d[T ]?\d\d:\d\d|\[?\d\d:\d\d:\d\d|\d{10}(?:\.\d+)?\s")


def _json_keys(line: str) -> tuple[str, ...] | None:
    if not line.lstrip().startswith("{"):
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return tuple(record)[:MAX_KEYS] if isinstance(record, dict) else None


def _logfmt_keys(line: str) -> tuple[str, ...] | None:
    keys = LOGFMT_PAIR.findall(line)
    return tuple(keys)[:MAX_KEYS] if len(keys) >= 3 else None


def _head(line: str) -> tuple[str, ...] | None:
    return (re.sub(r"\d", "9", line.strip()[:HEAD_CHARS]).rstrip(),)


def _stamp_head(line: str) -> tuple[str, ...] | None:
    return _head(line) if STAMP_START.match(line.strip()) else None


# journalctl's output modes that spread one entry over several lines (a field a line): logmine reads the modes
# that keep an entry on one line, and says which to ask for.
JOURNAL_FIELD = r"_{0,2}[A-Z][A-Z0-9_]*"
JOURNAL_RECORD_LINES = {
    "json-pretty": re.compile(rf'^(?:[{{}}]|\t"{JOURNAL_FIELD}" : .*)$'),
    "verbose": re.compile(rf"^(?:    {JOURNAL_FIELD}=.*"
                          r"|[A-Z][a-z]{2} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \S+ \[s=.*)$"),
    "export": re.compile(rf"^{JOURNAL_FIELD}=.*$"),
}


def _journal_record_mode(line: str) -> tuple[str, ...] | None:
    return next(((mode,) for mode, regex in JOURNAL_RECORD_LINES.items() if regex.match(line)), None)


@dataclass(frozen=True)
class LineShape:
    name: str
    words: str  # `{}` takes the keys or the head
    read: Callable[[str], tuple[str, ...] | None]  # the line's keys or head, None when not of this shape
    example: str
    named: str  # what the example's lines are called


LINE_SHAPES: tuple[LineShape, ...] = (
    LineShape("journal-record", "journal entries one field a line, as `journalctl -o {}` writes them (logmine "
              "reads `-o json` or `-o short-iso`, an entry a line)", _journal_record_mode,
              '\t"MESSAGE" : "[2026-03-01 23:45:58 TP0] Load weight begin. avail mem=78.64 GB",',
              "journal entries one field a line, as `journalctl -o json-pretty` writes them (logmine reads `-o json` "
              "or `-o short-iso`, an entry a line)"),
    LineShape("json", "JSON objects with keys {}", _json_keys,
              '{"time": "2026-03-01T22:00:00Z", "level": "info", "target": "worker", "message": "started"}',
              "JSON objects with keys time, level, target, message"),
    LineShape("logfmt", "key=value pairs with keys {}", _logfmt_keys,
              'ts=2026-03-01T22:00:00Z level=info caller=worker.go:12 msg="started"',
              "key=value pairs with keys ts, level, caller, msg"),
    LineShape("stamped", "lines that begin with a time stamp, like `{}`", _stamp_head,
              "2026/03/01 22:00:00.123 | INFO | worker | started",
              "lines that begin with a time stamp, like `9999/99/99 99:99:99.999 | INFO`"),
    LineShape("other", "lines that begin like `{}`", _head, "worker-3 >> started",
              "lines that begin like `worker-9 >> started`"),
)


def describe_lines(lines: list[str]) -> str | None:
    """The shape most of `lines` take, in words (None for no line with text)."""
    lines = [line for line in lines if line.strip()]
    if not lines:
        return None
    for shape in LINE_SHAPES:
        found = Counter(key for line in lines if (key := shape.read(line)) is not None)
        if found and sum(found.values()) * 2 >= len(lines):
            keys = found.most_common(1)[0][0]
            return shape.words.format(", ".join(keys) if shape.name in ("json", "logfmt") else keys[0])
    return None
