"""Classify one SGLang message: strip its prefix, find its event kind, extract typed fields.

`parse_prefix` reads the `[date time.ms RANKS]` bracket (§1 of the format notes); `Classifier` looks
the body up in the pattern table of `sglang_formats` (dispatching on the first characters so a line
is tried against a handful of patterns, not all); `TracebackAssembler` groups the unprefixed lines
of tracebacks and C++ aborts into one error, even when two ranks' tracebacks interleave.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import sglang_formats as formats

PREFIX = re.compile(
    r"\[(?:(?P<date>\d{4}-\d\d-\d\d) )?(?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<ms>\d{3}))?"
    r"(?P<ranks>(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)(?: (?:encode_server|encode_dp_worker\[\d+\]))?\] ?"
    # A foreign root handler prints `LEVEL file.py:N:`; uvicorn prints a padded `INFO:`.
    r"(?:(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<logger>[\w.]+:\d+): |"
    r"(?P<uvlevel>DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+)?"
)
BARE_UVICORN = re.compile(r"(?P<uvlevel>INFO|WARNING|ERROR|DEBUG|CRITICAL):\s{2,}")
RAY_PREFIX = re.compile(r"\((?:\w+) pid=\d+(?:, ip=[\d.]+)?\) ")
RANK_TAG = re.compile(r"(DP|PP|ATTN_CP|MOE_DP|TP|EP)(\d+)")
RANK_COLUMNS = {"DP": "dp", "PP": "pp", "ATTN_CP": "attn_cp", "MOE_DP": "moe_dp", "TP": "tp", "EP": "ep"}
# Where a `\r`-joined progress bar hides an SGLang line, the line starts at a dated bracket.
EMBEDDED_PREFIX = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{3})?(?: [A-Z_]+\d+)*\] ")
PROGRESS = re.compile(r"(?P<desc>[^|\r]*?):?\s*(?P<pct>\d{1,3})%\|")
JOURNAL_MARKER = re.compile(r"-- (?:Boot \w+|Reboot|Logs begin at .*|Journal begins at .*|No entries) --$")
BLOB = re.compile(r"\[(?P<size>[\d.]+[KMG]?B?) blob data\]$")
HEAD_CHARS = 4


@dataclass
class Prefix:
    date: str | None = None
    time: str | None = None
    ms: str | None = None
    ranks: dict[str, int] = field(default_factory=dict)
    level: str | None = None
    logger: str | None = None


@dataclass
class Classified:
    kind: str
    table: str | None  # None for kinds that only label the line (blank lines)
    fields: dict[str, object]


def parse_prefix(message: str) -> tuple[Prefix | None, str]:
    """Split `[2026-03-01 23:45:58 TP0] body` into the prefix and the body (None when absent)."""
    if message.startswith("("):
        ray = RAY_PREFIX.match(message)
        if ray:
            message = message[ray.end():]
    if not message.startswith("["):
        bare = BARE_UVICORN.match(message)
        if bare:
            return Prefix(level=bare["uvlevel"]), message[bare.end():]
        return None, message
    m = PREFIX.match(message)
    if not m:
        return None, message
    ranks = {RANK_COLUMNS[tag]: int(n) for tag, n in RANK_TAG.findall(m["ranks"])} if m["ranks"] else {}
    prefix = Prefix(m["date"], m["time"], m["ms"], ranks, m["level"] or m["uvlevel"], m["logger"])
    return prefix, message[m.end():]


def literal_head(regex: str) -> str:
    """The fixed text a pattern starts with (empty when it starts with a group or class)."""
    out = []
    i = 0
    while i < len(regex):
        c = regex[i]
        if c == "\\" and i + 1 < len(regex) and not regex[i + 1].isalnum():
            out.append(regex[i + 1])
            i += 2
            continue
        if c in ".^$*+?{}[]|()\\":
            # A quantifier makes the character before it optional.
            if c in "*?{" and out:
                out.pop()
            break
        out.append(c)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class CompiledPattern:
    spec: formats.Pattern
    regex: re.Pattern[str]


class Classifier:
    """Find the event kind of a message body using the declarative pattern table."""

    def __init__(self, patterns: Iterable[formats.Pattern] = formats.ALL_PATTERNS,
                 notice_heads: Iterable[tuple[str, str]] = formats.NOTICE_HEADS) -> None:
        self.by_head: dict[str, list[CompiledPattern]] = {}
        self.fallback: list[CompiledPattern] = []
        # Access lines are the most frequent line without a literal head: try them first.
        for spec in sorted(patterns, key=lambda p: p.kind != "http_request"):
            compiled = CompiledPattern(spec, re.compile(spec.regex))
            head = literal_head(spec.regex)
            if len(head) >= HEAD_CHARS:
                self.by_head.setdefault(head[:HEAD_CHARS], []).append(compiled)
            else:
                self.fallback.append(compiled)
        self.notices: dict[str, list[tuple[str, str]]] = {}
        for topic, head in notice_heads:
            self.notices.setdefault(head[:HEAD_CHARS], []).append((topic, head))

    def classify(self, body: str) -> Classified | None:
        for candidate in self.by_head.get(body[:HEAD_CHARS], ()):
            found = self._match(candidate, body)
            if found:
                return found
        for topic, head in self.notices.get(body[:HEAD_CHARS], ()):
            if body.startswith(head):
                return Classified("notice", "notices", {"topic": topic})
        for candidate in self.fallback:
            found = self._match(candidate, body)
            if found:
                return found
        return None

    @staticmethod
    def _match(candidate: CompiledPattern, body: str) -> Classified | None:
        m = candidate.regex.match(body)
        if not m:
            return None
        fields: dict[str, object] = dict(candidate.spec.const)
        for name, value in m.groupdict().items():
            if value is None:
                continue
            if name == "_stats":
                fields.update(parse_stats(value))
            else:
                fields[name] = value
        return Classified(candidate.spec.kind, candidate.spec.table, fields)


STATS_PAIR = re.compile(r"([^,:]+): ([^,]*(?:, (?![^,:]+: )[^,]*)*)")


def parse_stats(text: str) -> dict[str, object]:
    """`#running-req: 1, #token: 82, cuda graph: True, ` -> typed known keys plus an `extra` map.

    A value runs to the next `, key: `, so v0.4.9 hybrid values such as `full=35, swa=35` stay whole.
    """
    fields: dict[str, object] = {}
    extra: list[tuple[str, str]] = []
    known = formats.STATS_KEYS
    for key, value in STATS_PAIR.findall(text.rstrip(", ")):
        key = key.strip()
        column = known.get(key)
        if column is None or column in fields or "=" in value:
            extra.append((key, value.strip()))
        else:
            fields[column] = value.rstrip("% ")
            if column == "graph" and key != "cuda graph":
                extra.append(("graph_label", key))
    if extra:
        fields["extra"] = extra
    return fields


def split_carriage_returns(message: str) -> tuple[str, str | None]:
    """For a `\\r`-joined progress-bar entry, return (the text to classify, the progress description).

    SGLang lines can begin in the middle of a physical line after a bar; so can C++ aborts.
    """
    segments = [s for s in message.split("\r") if s.strip()]
    if not segments:
        return "", None
    last = segments[-1]
    embedded = EMBEDDED_PREFIX.search(last)
    if embedded:
        return last[embedded.start():], None
    abort = last.find("terminate called after throwing")
    if abort >= 0:
        return last[abort:], None
    progress = PROGRESS.search(last)
    return last, (progress["desc"].strip() if progress else last[:60])


# ---------------------------------------------------------------- tracebacks

TRACEBACK_START = re.compile(formats.TRACEBACK_START)
CXX_ABORT_START = re.compile(formats.CXX_ABORT_START)
FATAL_START = re.compile(formats.FATAL_START)
EXCEPTION_LINE = re.compile(r"(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure)|"
                            r"[a-z_][\w]*\.[\w.]*[A-Z]\w*)(?:: (?P<message>.*))?$")
OOM = re.compile(formats.OOM_TEXT, re.IGNORECASE)
HOST_MEMORY = re.compile(formats.HOST_MEMORY_TEXT)
MAX_TRACEBACK_LINES = 5000


@dataclass
class OpenError:
    first_line_no: int
    origin: str | None
    context: dict[str, object]
    is_abort: bool = False
    lines: list[str] = field(default_factory=list)
    last_line_no: int = 0
    last_shape: str = "header"
    exception_type: str | None = None
    exception_message: str | None = None
    idle: int = 0


def line_shape(line: str) -> str:
    """What part of a traceback a raw line is: file, code, exception, chain, blank or other."""
    stripped = line.strip()
    if not stripped:
        return "blank"
    if line.startswith("  File \"") or line.startswith('File "'):
        return "file"
    if line.startswith(("    ", "\t")):
        return "code"
    if stripped.startswith(("During handling of the above exception", "The above exception was the direct cause")):
        return "chain"
    if stripped.startswith("Traceback (most recent call last)"):
        return "restart"
    if line.startswith(("  what():", "frame #", "Exception raised from", "Extension modules:")):
        return "abort"
    if line.startswith("Fatal Python error"):
        return "fatal"
    if line.startswith(("Thread 0x", "Current thread 0x")):
        return "thread"
    if EXCEPTION_LINE.match(stripped):
        return "exception"
    return "other"


# Which shapes may follow which: the last shape of a traceback -> shapes it accepts next.
ACCEPTS = {
    "header": {"file", "exception", "abort", "restart"},
    "file": {"code", "file", "exception"},
    "code": {"code", "file", "exception"},
    "exception": {"other", "blank", "chain", "code"},
    "other": {"other", "blank", "chain", "code", "exception"},
    "chain": {"blank", "restart"},
    "blank": {"restart", "chain"},
    "restart": {"file", "exception"},
    "abort": {"abort", "other", "code", "blank", "fatal", "thread", "file"},
    # faulthandler's dump after an abort: `Thread 0x… (most recent call first):` and `  File "…", line N in f`.
    "fatal": {"blank", "thread", "file", "abort"},
    "thread": {"file", "blank", "thread"},
}
# The shape each state most expects next: used first, to separate interleaved tracebacks.
EXPECTS = {"header": {"file"}, "restart": {"file"}, "file": {"code"}, "code": {"file", "exception"},
           "exception": {"blank"}, "chain": {"blank"}, "blank": {"restart"}}
# After an abort, file lines may follow thread headers, and blank lines separate the threads' stacks.
ABORT_ACCEPTS = {**ACCEPTS, "file": {"file", "blank", "thread", "abort", "fatal"},
                 "blank": {"thread", "fatal", "abort", "blank"}, "other": {"blank", "abort", "fatal"}}


class TracebackAssembler:
    """Collect unprefixed traceback lines into errors; several may be open at once (one per rank)."""

    def __init__(self) -> None:
        self.open: list[OpenError] = []

    def start(self, body: str, line_no: int, context: dict[str, object]) -> bool:
        """Open an error when `body` begins a traceback or a C++ abort; returns whether it did."""
        m = TRACEBACK_START.search(body)
        is_abort = False
        if not m:
            m = CXX_ABORT_START.match(body) or FATAL_START.match(body)
            is_abort = True
        if not m:
            return False
        err = OpenError(line_no, m["origin"], context, is_abort=is_abort, lines=[body], last_line_no=line_no,
                        last_shape="abort" if is_abort else "header")
        self.open.append(err)
        return True

    def feed(self, line: str, line_no: int) -> OpenError | None:
        """Offer an unprefixed line; returns the error it joined, or None when it belongs to none."""
        if not self.open or TRACEBACK_START.search(line) or CXX_ABORT_START.match(line):
            return None  # a new traceback or abort begins; the caller opens it
        shape = line_shape(line)
        err = self._owner(shape)
        if err is None:
            return None
        err.lines.append(line)
        err.last_line_no = line_no
        err.idle = 0
        if shape == "exception" and err.last_shape in ("file", "code", "header", "restart", "other"):
            m = EXCEPTION_LINE.match(line.strip())
            if m:
                err.exception_type, err.exception_message = m["type"], m["message"]
        elif shape in ("other", "abort") and err.is_abort and err.exception_message is None:
            err.exception_message = line.strip().removeprefix("what():").strip()
        err.last_shape = shape if shape != "restart" else "restart"
        return err

    def _owner(self, shape: str) -> OpenError | None:
        """The open error this line most likely continues.

        Interleaved tracebacks of several ranks are told apart by what each expects next (a code line
        after a File line, say); Python tracebacks are tried oldest first, C++ aborts newest first,
        since aborts of several ranks print one after another.
        """
        candidates = [e for e in self.open if not e.is_abort] + [e for e in reversed(self.open) if e.is_abort]
        candidates = [e for e in candidates if len(e.lines) < MAX_TRACEBACK_LINES]
        for err in candidates:
            if shape in EXPECTS.get(err.last_shape, ()):
                return err
        for err in candidates:
            if shape in (ABORT_ACCEPTS if err.is_abort else ACCEPTS)[err.last_shape]:
                return err
        return None

    def tick(self) -> list[OpenError]:
        """Called for every prefixed line: close errors that are complete or have gone quiet."""
        done = []
        for err in self.open:
            err.idle += 1
            complete = err.exception_type is not None or (err.is_abort and err.exception_message is not None)
            if (complete and err.last_shape in ("exception", "other", "blank", "abort", "file")) or err.idle > 200:
                done.append(err)
        if done:
            self.open = [e for e in self.open if e not in done]
        return done

    def close_all(self) -> list[OpenError]:
        done, self.open = self.open, []
        return done


def error_fields(err: OpenError) -> dict[str, object]:
    """The `errors` row of a finished traceback or abort."""
    lines = err.lines
    while len(lines) > 1 and not lines[-1].strip():
        lines = lines[:-1]
    text = "\n".join(lines)
    if OOM.search(text):
        kind = "oom"
    elif HOST_MEMORY.search(text):
        kind = "host_memory"
    elif err.is_abort:
        kind = "abort"
    else:
        kind = "exception"
    last = next((ln.strip() for ln in reversed(lines) if ln.strip()), "")
    if err.exception_type:
        last = f"{err.exception_type}: {err.exception_message}" if err.exception_message else err.exception_type
    return {
        "error_kind": kind, "origin": err.origin, "exception_type": err.exception_type,
        "exception_message": err.exception_message, "last_line": last, "first_line_no": err.first_line_no,
        "last_line_no": err.last_line_no, "n_lines": len(err.lines), "text": text,
    }
