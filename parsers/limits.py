"""Per-input limits: what one input may cost before it is cut or refused, so that a hostile or broken file
(a line of gigabytes, JSON nested without end, a small `.zst` that expands a thousandfold, a transcript row
that inflates to gigabytes) costs only itself and the other inputs of the same command are stored.

Each limit has a default fit for real logs and transcripts and an environment variable that overrides it
(the tests use small values, rather than writing files of the sizes the defaults guard against).
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Limit:
    name: str
    env: str
    default: int
    doc: str

    def value(self) -> int:
        """The limit in force: the environment variable's value when it is a positive integer."""
        text = os.environ.get(self.env, "")
        return int(text) if text.isdigit() and int(text) > 0 else self.default


MAX_LINE_BYTES = Limit("line", "LOGMINE_MAX_LINE_BYTES", 8 << 20,
                       "a log line longer than this is stored cut to it, with CUT_MARK and its size at the end")
MAX_JSON_DEPTH = Limit("json depth", "LOGMINE_MAX_JSON_DEPTH", 256,
                       "a transcript record nested deeper than this is refused (its input fails)")
MAX_EXPANSION = Limit("expansion", "LOGMINE_MAX_EXPANSION", 1000,
                      "a compressed input that expands more than this many times its size is refused")
EXPANSION_FLOOR_BYTES = Limit("expansion floor", "LOGMINE_EXPANSION_FLOOR_BYTES", 256 << 20,
                              "decompressed bytes below which the expansion limit is not applied")
MAX_RECORD_BYTES = Limit("record", "LOGMINE_MAX_RECORD_BYTES", 256 << 20,
                         "a transcript row (an opencode part, a JSONL line) larger than this is refused")
MAX_HELD_BYTES = Limit("held", "LOGMINE_MAX_HELD_BYTES", 2 << 30,
                       "what one input may hold in memory at once (an opencode session's parts), else it fails")
MAX_JOBS = Limit("jobs", "LOGMINE_MAX_JOBS", 0,
                 "processes an ingest may start at most (0: one per core this process may run on)")

# How a cut line ends: `logmine sql "... WHERE message LIKE '%[logmine: line cut%'"` finds them.
CUT_MARK = " …[logmine: line cut, {size:,} bytes]"


class LimitExceeded(Exception):
    """An input went over one of the limits: it costs only itself; the message names it and the limit."""


class ExpansionCheck:
    """Counts what a compressed input gives against what it took: more than MAX_EXPANSION times, past
    EXPANSION_FLOOR_BYTES (small files may compress far better), is a decompression bomb (a 24 KB `.zst`
    of 10 million lines), refused before it costs minutes and gigabytes."""

    def __init__(self) -> None:
        self.ratio, self.floor = MAX_EXPANSION.value(), EXPANSION_FLOOR_BYTES.value()
        self.taken = self.given = 0

    def add(self, taken: int, given: int) -> None:
        self.taken += taken
        self.given += given
        if self.given > self.floor and self.given > self.ratio * max(self.taken, 1):
            raise LimitExceeded(f"expands more than {self.ratio:,} times its size ({self.given:,} bytes from "
                                f"{self.taken:,}): refused as a decompression bomb ({MAX_EXPANSION.env})")
