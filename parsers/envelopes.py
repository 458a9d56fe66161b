"""Split the envelope a log line was stored in (journald output modes, docker timestamps) from its message.

Each envelope reader turns one decoded physical line into an `Envelope`. Journal short formats have no
year and `-o json`/`-o short-unix` carry UTC epochs, so readers take a `TimeContext` holding the
year and the UTC offset inferred from the SGLang timestamps inside the messages (see `infer_context`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import bounded_json, hot_path
from .vector_columns import bounded_int, bounded_ints, cut, data_bytes, flags, ints, offsets, patch, spans

MAX_UTC_OFFSET = timedelta(hours=14)  # the widest real one (UTC+14); beyond it two stamps just disagree
PID_LIMIT = 1 << 31  # `pid` is an INTEGER column; a larger number in the brackets is no process id
REALTIME_LIMIT = 1 << 63  # journald's microseconds since the epoch are 64-bit

MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1)}

IDENT = r"(?P<host>\S+) (?P<ident>[^\s\[:]+)(?:\[(?P<pid>\d+)\])?: ?"
SHORT = re.compile(r"(?P<mon>[A-Z][a-z]{2}) (?P<day>[ \d]\d) (?P<time>\d\d:\d\d:\d\d)(?:\.(?P<frac>\d{1,6}))? " + IDENT)
ISO = re.compile(r"(?P<date>\d{4}-\d\d-\d\d)T(?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d{1,9}))?"
                 r"(?P<tz>Z|[+-]\d\d:?\d\d)? " + IDENT)
UNIX = re.compile(r"(?P<epoch>\d{9,11})(?:\.(?P<frac>\d{1,6}))? " + IDENT)
# `-o short-full`: `Sun 2026-03-01 22:41:10 CET host ident[pid]: `; `-o short-monotonic`: `[ 1234.567890] ...`, and
# `-o short-delta` the same with the time since the entry before (`[ 1234.567890 <    0.000123 >] `, blank on the
# first).
FULL = re.compile(r"(?P<dow>[A-Z][a-z]{2}) (?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)(?:\.(?P<frac>\d{1,6}))? "
                  r"(?P<zone>[A-Z]{2,5}|[+-]\d\d:?\d\d) " + IDENT)
MONOTONIC = re.compile(r"\[\s*(?P<mono>\d+\.\d+)(?:\s*<\s*\d+\.\d+\s*>)?\s*\] " + IDENT)
# `docker logs -t` and other tools put an RFC 3339 or `date time` stamp and one space before the line, which may
# itself begin with spaces (a traceback's frames).
STAMPED = re.compile(r"(?P<date>\d{4}-\d\d-\d\d)[T ](?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d{1,9}))?"
                     r"(?P<tz>Z|[+-]\d\d:?\d\d)? ")
# `kubectl logs --prefix` (several pods or containers at once: `-l app=sglang`, `--all-containers`): the pod and
# container before each line, then the line, behind kubelet's RFC 3339 stamp where `--timestamps` asked for it.
KUBECTL = re.compile(r"\[pod/(?P<host>[^/\]\s]+)/(?P<ident>[^\]\s]+)\] (?:(?P<date>\d{4}-\d\d-\d\d)T"
                     r"(?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d{1,9}))?(?P<tz>Z|[+-]\d\d:?\d\d)? )?")
# `docker compose logs` (and `up` in the foreground): the container's name padded to the longest one's and
# ` | ` before each line (compose's `cmd/formatter/logs.go`; v1's `name_1` too), coloured on a terminal, and
# with `--timestamps` the daemon's RFC 3339 stamp after it. The container is stored as the host: two of them in
# one file are two servers, as two pods are.
COMPOSE = re.compile(r"(?:\x1b\[[0-9;]*m)?(?P<host>[\w.-]+) +\|(?: |$)(?:\x1b\[0m)?(?:(?P<date>\d{4}-\d\d-\d\d)T"
                     r"(?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d{1,9}))?(?P<tz>Z|[+-]\d\d:?\d\d)? )?")
# Slurm's `srun --label` (`-l`): the task's number before each line, right-aligned to the widest one's, and `: `.
# A multi-node launch runs one task per node: the task is stored as the host.
SLURM_LABEL = re.compile(r" *(?P<task>\d+): ")
SGLANG_DATE = re.compile(r"\[(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)")
JOURNAL_HEADER_YEAR = re.compile(r"-- (?:Logs begin at|Journal begins at) \w+ (?P<year>\d{4})-")

# NVIDIA Dynamo routes SGLang's loggers through its own formatter (`lib/runtime/src/logging.rs`,
# `lib/bindings/python/src/dynamo/runtime/logging.py`) unless `DYN_SKIP_SGLANG_LOG_FORMATTING=1`: SGLang's
# `[time TPn]` prefix is gone. Readable: tracing-subscriber's compact line, a UTC stamp with microseconds
# (`DYN_LOG_USE_LOCAL_TZ=1`: the local offset), the level padded to five, span names with their fields
# (Rust records inside a request), the target (`module.function` of a Python record), `: `, the message.
DYNAMO_LEVELS = "TRACE|DEBUG|INFO|WARN|ERROR"
DYNAMO = re.compile(r"(?P<date>\d{4}-\d\d-\d\d)T(?P<time>\d\d:\d\d:\d\d)(?:\.(?P<frac>\d{1,9}))?"
                    rf"(?P<tz>Z|[+-]\d\d:\d\d) +(?P<level>{DYNAMO_LEVELS}) "
                    r"(?:(?P<span>[\w-]+\{[^}]*\}(?::[\w-]+\{[^}]*\})*): )?(?P<target>[\w.:<>-]+): ")
# `DYN_LOGGING_JSONL=true`: one object per line. A Python record comes through the `log` crate, so its
# `target` is `log` and its `module.function` is `log.target`; request spans add the trace context.
DYNAMO_JSON_KEYS = ("time", "level", "target", "message")
TRACE_FIELDS = ("trace_id", "span_id", "parent_id", "x_request_id", "span_name")


@dataclass(frozen=True)
class EnvelopeFormat:
    """An envelope told from its first lines, with real lines of it that must be read as it is."""

    name: str
    doc: str
    examples: tuple[str, ...]
    drops_ranks: bool = False  # SGLang's rank tag does not survive it: ranks are read from what is left


DYNAMO_FORMATS: tuple[EnvelopeFormat, ...] = (
    EnvelopeFormat("dynamo", "NVIDIA Dynamo's readable log line (DYN_LOGGING_JSONL unset)", (
        "2025-09-02T15:50:01.770028Z  INFO main.init: VllmWorker for Qwen/Qwen3-0.6B has been initialized",
        "2026-03-01T22:41:12.004211Z  INFO model_runner.load_model: Load weight begin. avail mem=78.64 GB",
        "2026-03-01T22:41:40.118903Z ERROR scheduler.run_scheduler_process: Scheduler hit an exception: "
        "Traceback (most recent call last):",
        "2026-03-01T23:41:40.118903+01:00  WARN server_args.__post_init__: Overlap scheduler is disabled",
        '2025-10-31T21:06:45.397194Z DEBUG http-request{method=POST uri=/v1/chat/completions}: '
        'dynamo_runtime::pipeline::network::tcp::server: Registering new TcpStream on 10.0.4.65:41959',
    ), drops_ranks=True),
    EnvelopeFormat("dynamo-jsonl", "NVIDIA Dynamo's JSONL log line (DYN_LOGGING_JSONL=true)", (
        '{"time":"2025-09-02T15:53:31.943377Z","level":"INFO","target":"log","message":"VllmWorker for '
        'Qwen/Qwen3-0.6B has been initialized","log.file":"/opt/dynamo/venv/lib/python3.12/site-packages/'
        'dynamo/vllm/main.py","log.line":191,"log.target":"main.init"}',
        '{"time":"2025-10-31T21:06:45.397194Z","level":"DEBUG","file":"/opt/dynamo/lib/runtime/src/pipeline/'
        'network/tcp/server.rs","line":230,"target":"dynamo_runtime::pipeline::network::tcp::server",'
        '"message":"Registering new TcpStream on 10.0.4.65:41959","method":"POST","span_id":"f7e487a9d2a6bf38",'
        '"span_name":"http-request","trace_id":"80196f3e3a6fdf06d23bb9ada3788518","uri":"/v1/chat/completions",'
        '"version":"HTTP/1.1","x_request_id":"8372eac7-5f43-4d76-beca-0a94cfb311d0"}',
    ), drops_ranks=True),
)
RANKLESS_FORMATS = frozenset(f.name for f in DYNAMO_FORMATS if f.drops_ranks)

FORMATS = ("journal-short", "journal-iso", "journal-full", "journal-unix", "journal-monotonic", "journal-json",
           "dynamo", "dynamo-jsonl", "stamped", "kubectl", "compose", "slurm", "plain")


@dataclass
class Envelope:
    ts: str | None
    host: str | None
    ident: str | None
    pid: int | None
    message: str
    unit: str | None = None
    level: str | None = None  # the envelope's own level and logger (Dynamo's), where it has them
    logger: str | None = None
    trace: dict[str, str] | None = None  # Dynamo's trace context (TRACE_FIELDS)


# journal-short stamps have no year: one is counted on when the month goes back by at least this many (December
# to January is 11; a server off from November to March comes back 8 months "back"). A month or two back is
# the clock stepped back (NTP after a bad RTC, a VM restored), read in the same year.
NEW_YEAR_DROP = 6


@dataclass
class TimeContext:
    year: int
    utc_offset: timedelta = timedelta(0)
    last_month: int = 0


def _fraction(frac: str | None) -> str:
    return "." + frac[:6] if frac else ""


def _local_from_epoch(seconds: float, ctx: TimeContext) -> str | None:
    """Local wall-clock text of a Unix time; None for one outside the years 1..9999 (a garbled stamp)."""
    try:
        local = datetime.fromtimestamp(seconds, tz=timezone.utc) + ctx.utc_offset
    except (OverflowError, OSError, ValueError):
        return None
    return local.replace(tzinfo=None).isoformat(sep=" ")


def _short_time(m: re.Match[str], ctx: TimeContext) -> str:
    month = MONTHS.get(m["mon"], 1)
    if ctx.last_month and ctx.last_month - month >= NEW_YEAR_DROP:  # journal rolled over into a new year
        ctx.year += 1
    ctx.last_month = month
    return f"{ctx.year:04d}-{month:02d}-{int(m['day']):02d} {m['time']}{_fraction(m['frac'])}"


def _dated_time(m: re.Match[str], ctx: TimeContext) -> str:
    return f"{m['date']} {m['time']}{_fraction(m['frac'])}"


def _stamp_time(m: re.Match[str], ctx: TimeContext) -> str | None:
    """The envelope's stamp where it has one (an optional group)."""
    return _dated_time(m, ctx) if m["date"] else None


def _epoch_time(m: re.Match[str], ctx: TimeContext) -> str | None:
    return _local_from_epoch(float(m["epoch"] + "." + (m["frac"] or "0")), ctx)


def _no_time(m: re.Match[str], ctx: TimeContext) -> None:
    """Seconds since boot are no wall-clock time: lines take SGLang's own timestamps instead."""
    return None


def regex_reader(regex: re.Pattern[str], time_of: Callable[[re.Match[str], TimeContext], str | None]
                 ) -> Callable[[str, TimeContext], Envelope]:
    """A reader for an envelope whose shape is one regex (with optional host, ident and pid groups)."""
    def read(line: str, ctx: TimeContext) -> Envelope:
        m = regex.match(line)
        if not m:
            return Envelope(None, None, None, None, line)
        fields = m.groupdict()
        return Envelope(time_of(m, ctx), fields.get("host"), fields.get("ident"),
                        bounded_int(fields.get("pid"), PID_LIMIT), line[m.end():])
    return read


def read_slurm(line: str, ctx: TimeContext) -> Envelope:
    """`srun --label`: the task, as the host (`task 1`); no time of its own."""
    m = SLURM_LABEL.match(line)
    if not m:
        return Envelope(None, None, None, None, line)
    return Envelope(None, f"task {m['task']}", None, None, line[m.end():])


def read_plain(line: str, ctx: TimeContext) -> Envelope:
    return Envelope(None, None, None, None, line)


def json_message(value: object) -> str:
    """journald stores non-printable messages (tqdm `\\r` bars) as an array of byte values."""
    return json_text(value) or ""


def json_text(value: object) -> str | None:
    """A journal field as text: byte arrays decoded, other JSON values as written, lone surrogates
    (which JSON allows and UTF-8 does not) escaped."""
    if value is None:
        return None
    if isinstance(value, list):
        return bytes(v & 0xFF for v in value if isinstance(v, int)).decode("utf-8", "backslashreplace")
    text = value if isinstance(value, str) else json.dumps(value)
    try:
        text.encode()
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode()
    return text


# `-o json-seq` puts an ASCII record separator before each object (RFC 7464), `-o json-sse` a server-sent event's
# `data: ` (and a blank line after it).
JSON_RECORD_LEADS = ("\x1e", "data: ")


def _json_record(line: str) -> str:
    """The JSON object of a `-o json`, `-o json-seq` or `-o json-sse` line."""
    for lead in JSON_RECORD_LEADS:
        if line.startswith(lead):
            return line[len(lead):]
    return line


def read_json(line: str, ctx: TimeContext) -> Envelope:
    try:
        record = bounded_json.loads(_json_record(line))
    except ValueError:
        return Envelope(None, None, None, None, line)
    if not isinstance(record, dict):
        return Envelope(None, None, None, None, line)
    ts = None
    realtime = bounded_int(json_text(record.get("__REALTIME_TIMESTAMP")), REALTIME_LIMIT)
    if realtime is not None:
        ts = _local_from_epoch(realtime / 1e6, ctx)
    unit = json_text(record.get("UNIT") or record.get("_SYSTEMD_UNIT"))
    ident = json_text(record.get("SYSLOG_IDENTIFIER") or record.get("_COMM"))
    pid = bounded_int(json_text(record.get("_PID")), PID_LIMIT)
    return Envelope(ts, json_text(record.get("_HOSTNAME")), ident, pid, json_message(record.get("MESSAGE")), unit)


ANSI_ESCAPE = r"\x1b\[[0-9;?]*[A-Za-z]"  # a terminal's colours, in RE2's and Python's syntax alike
ANSI = re.compile(ANSI_ESCAPE)


def read_dynamo(line: str, ctx: TimeContext) -> Envelope:
    """A Dynamo readable line; a terminal-bound one is coloured (tracing's ANSI), which is read past."""
    text = ANSI.sub("", line) if "\x1b" in line else line
    m = DYNAMO.match(text)
    if not m:
        return Envelope(None, None, None, None, line)
    return Envelope(_dated_time(m, ctx), None, None, None, text[m.end():], level=m["level"], logger=m["target"])


def _dynamo_time(value: object) -> str | None:
    """`2025-09-02T15:53:31.943377Z` as the local text logmine stores (the zone, Dynamo's UTC, dropped)."""
    m = DYNAMO_TIME.match(value) if isinstance(value, str) else None
    return f"{m['date']} {m['time']}{_fraction(m['frac'])}" if m else None


DYNAMO_TIME = re.compile(r"(?P<date>\d{4}-\d\d-\d\d)T(?P<time>\d\d:\d\d:\d\d)(?:\.(?P<frac>\d{1,9}))?")


def read_dynamo_json(line: str, ctx: TimeContext) -> Envelope:
    try:
        record = json.loads(line)
    except ValueError:
        return Envelope(None, None, None, None, line)
    if not isinstance(record, dict) or "message" not in record:
        return Envelope(None, None, None, None, line)
    target = json_text(record.get("target"))
    if target == "log":  # a record of the `log` crate: a Python logger's, named by module and function
        target = json_text(record.get("log.target")) or target
    trace = {name: text for name in TRACE_FIELDS if (text := json_text(record.get(name))) is not None}
    return Envelope(_dynamo_time(record.get("time")), None, None, None, json_message(record.get("message")),
                    level=json_text(record.get("level")), logger=target, trace=trace or None)


READERS: dict[str, Callable[[str, TimeContext], Envelope]] = {
    "journal-short": regex_reader(SHORT, _short_time),
    "journal-iso": regex_reader(ISO, _dated_time),
    "journal-full": regex_reader(FULL, _dated_time),
    "journal-unix": regex_reader(UNIX, _epoch_time),
    "journal-monotonic": regex_reader(MONOTONIC, _no_time),
    "journal-json": read_json,
    "dynamo": read_dynamo,
    "dynamo-jsonl": read_dynamo_json,
    "stamped": regex_reader(STAMPED, _dated_time),
    "kubectl": regex_reader(KUBECTL, _stamp_time),
    "compose": regex_reader(COMPOSE, _stamp_time),
    "slurm": read_slurm,
    "plain": read_plain,
}


@dataclass
class Envelopes:
    """The envelopes of a block of lines, as columns."""

    ts: pa.StringArray
    host: pa.StringArray
    ident: pa.StringArray
    pid: pa.Int64Array
    unit: pa.StringArray
    message: pa.StringArray
    level: pa.StringArray | None = None  # envelopes with a level and logger of their own (Dynamo's)
    logger: pa.StringArray | None = None
    matched: np.ndarray | None = None  # which lines are in the envelope (for those whose lines are records)
    traces: list[tuple[int, dict[str, str]]] | None = None  # (row, trace context) of the rows that have one


SHORT_GROUPS = ("mon", "day", "time", "frac", "host", "ident", "pid")
SHORT_STAMP_RE2 = r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d[ .]"
STAMP_FIELDS = (("mon", 0, 3), ("day", 4, 6), ("time", 7, 15))  # (group, first byte, byte after) of the stamp
SHORT_TAIL = re.compile(IDENT)
MONTH_NAMES = pa.array(list(MONTHS))
TWO_DIGITS = pa.array([f"{i:02d}" for i in range(13)])


def read_envelopes(lines: pa.StringArray, fmt: str, ctx: TimeContext, ascii_rows: np.ndarray,
                   restarts: np.ndarray | None = None) -> Envelopes:
    """The envelope of every line of a block, in order (`ctx` carries the year across blocks). Where
    `restarts` flags a row, an independent text starts there: it is read as if `ctx` were fresh."""
    if fmt == "journal-short":
        return _inner_dynamo(_read_short_block(lines, ctx, ascii_rows, restarts), ctx)
    n = len(lines)
    if fmt == "plain":
        none = pa.nulls(n, pa.string())
        return _inner_dynamo(Envelopes(none, none, none, pa.nulls(n, pa.int64()), none, lines), ctx)
    # The other envelopes are rarer and their readers keep no state: read them line by line.
    read = READERS[fmt]
    envs = [read(line, ctx) for line in lines.to_pylist()]
    out = Envelopes(*(pa.array([getattr(e, name) for e in envs], typ) for name, typ in (
        ("ts", pa.string()), ("host", pa.string()), ("ident", pa.string()), ("pid", pa.int64()),
        ("unit", pa.string()), ("message", pa.string()))))
    if fmt in RANKLESS_FORMATS:
        out.level = pa.array([e.level for e in envs], pa.string())
        out.logger = pa.array([e.logger for e in envs], pa.string())
        out.matched = np.array([e.level is not None for e in envs], dtype=bool)
        out.traces = [(i, e.trace) for i, e in enumerate(envs) if e.trace]
        return out
    return _inner_dynamo(out, ctx)


# A Dynamo readable line inside another envelope: `journalctl -u` of a `python -m dynamo.sglang` unit,
# `docker logs -t` of its container, a file that mixes it with other writers' lines.
DYNAMO_HEAD_RE2 = (r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d) +"
                   rf"(?:{DYNAMO_LEVELS}) ")


def _inner_dynamo(env: Envelopes, ctx: TimeContext) -> Envelopes:
    """`env` with the Dynamo lines among its messages read as Dynamo's: their level, logger and message
    (the outer envelope's time, host and PID stay); unchanged when there is none."""
    rows = np.nonzero(flags(pc.match_substring_regex(env.message, DYNAMO_HEAD_RE2)))[0]
    if not len(rows):
        return env
    inner = [read_dynamo(text, ctx) for text in env.message.take(pa.array(rows)).to_pylist()]
    found = np.array([e.level is not None for e in inner], dtype=bool)
    rows, inner = rows[found], [e for e, ok in zip(inner, found, strict=True) if ok]
    if not len(rows):
        return env
    n = len(env.message)
    env.message = patch(env.message, rows, pa.array([e.message for e in inner], pa.string()))
    env.level = patch(pa.nulls(n, pa.string()), rows, pa.array([e.level for e in inner], pa.string()))
    env.logger = patch(pa.nulls(n, pa.string()), rows, pa.array([e.logger for e in inner], pa.string()))
    env.ts = pc.coalesce(env.ts, patch(pa.nulls(n, pa.string()), rows, pa.array([e.ts for e in inner], pa.string())))
    env.matched = np.zeros(n, dtype=bool)
    env.matched[rows] = True
    return env


def _short_groups(lines: pa.StringArray, ascii_rows: np.ndarray) -> tuple[np.ndarray, dict[str, pa.Array],
                                                                          np.ndarray]:
    """SHORT's groups per line ("" when absent), which lines matched, and each head's length in bytes.

    The stamp has fixed columns and the `host ident[pid]: ` after it takes a handful of values per
    file, so the stamp is sliced and only the distinct tails meet Python's SHORT; lines of any other
    shape (and non-ASCII lines, whose `\\s` and `\\d` only Python reads right) are matched one by one.
    """
    if compiled := hot_path.kernels():
        fast, dot, stamp_end, colon = compiled.short_heads(data_bytes(lines), offsets(lines),
                                                           np.ascontiguousarray(ascii_rows, dtype=np.uint8))
        begin = offsets(lines)[:-1]
        # (empty at the line's start where not fast: those lines are read again below)
        stamp = {name: spans(lines, begin + np.where(fast, first, 0), begin + np.where(fast, last, 0))
                 for name, first, last in STAMP_FIELDS}
    else:
        fast, dot, stamp_end, colon, stamp = _short_stamps(lines, ascii_rows)
    tails = cut(lines, stamp_end + 1, colon + 2).dictionary_encode()
    parts = [SHORT_TAIL.fullmatch(tail) for tail in tails.dictionary.to_pylist()]
    fast &= np.array([m is not None for m in parts] + [False])[ints(tails.indices)]
    index = pa.array(ints(tails.indices))
    groups = {
        **stamp,
        "frac": cut(lines, np.where(dot & fast, 16, 0), np.where(dot & fast, stamp_end, 0)),
        **{name: pa.array([(m[name] or "") if m else "" for m in parts], pa.string()).take(index)
           for name in ("host", "ident", "pid")},
    }
    head_len = np.where(fast, colon + 2, 0)
    slow = np.nonzero(~fast)[0]
    if len(slow):
        found = [SHORT.match(line) for line in lines.take(pa.array(slow)).to_pylist()]
        for name in SHORT_GROUPS:
            values = [("" if f is None else f[name] or "") for f in found]
            groups[name] = patch(groups[name], slow, pa.array(values, pa.string()))
        head_len[slow] = [len(f[0].encode()) if f else 0 for f in found]
        fast[slow] = [f is not None for f in found]
    return fast, groups, head_len


def _short_stamps(lines: pa.StringArray, ascii_rows: np.ndarray) -> tuple:
    """`line_kernels.short_heads` by Arrow's kernels, plus the stamp's month, day and time texts."""
    # Only ASCII rows take the fast path; the others are blanked here, since a slice at a fixed byte
    # could cut a character in two, which no string column may hold (it failed the whole file).
    binary = pc.if_else(pa.array(ascii_rows), lines, "").cast(pa.binary())
    colon = ints(pc.find_substring(lines, ": "))
    dot = flags(pc.equal(pc.binary_slice(binary, 15, 16), b"."))
    frac_len = np.where(dot, ints(pc.find_substring(pc.binary_slice(binary, 16, 23), b" ")), 0)
    stamp_end = np.where(dot, 16 + frac_len, 15)
    fast = ascii_rows & flags(pc.match_substring_regex(lines, SHORT_STAMP_RE2)) & (frac_len >= 0) & \
        (colon > stamp_end)
    stamp_end[~fast], colon[~fast] = 0, -2
    stamp = {name: pc.binary_slice(binary, first, last).cast(pa.string()) for name, first, last in STAMP_FIELDS}
    return fast, dot, stamp_end, colon, stamp


def _read_short_block(lines: pa.StringArray, ctx: TimeContext, ascii_rows: np.ndarray,
                      restarts: np.ndarray | None = None) -> Envelopes:
    valid, g, head_len = _short_groups(lines, ascii_rows)
    month = pc.add(pc.fill_null(pc.index_in(g["mon"], value_set=MONTH_NAMES), 0), 1).to_numpy(zero_copy_only=False)
    year = _years(month, valid, ctx) if restarts is None else _years_of_texts(month, valid, ctx, restarts)
    frac = pc.if_else(pc.equal(g["frac"], ""), "", pc.binary_join_element_wise(".", g["frac"], ""))
    ts = pc.binary_join_element_wise(
        pc.utf8_lpad(pc.cast(pa.array(year), pa.string()), 4, "0"), "-", TWO_DIGITS.take(pa.array(month)), "-",
        pc.replace_substring(g["day"], " ", "0"), " ", g["time"], frac, "")
    matched = pa.array(valid)
    none = pa.scalar(None, pa.string())
    pid = pc.if_else(matched, bounded_ints(g["pid"], PID_LIMIT), pa.scalar(None, pa.int64()))
    return Envelopes(pc.if_else(matched, ts, none), pc.if_else(matched, g["host"], none),
                     pc.if_else(matched, g["ident"], none), pid, pa.nulls(len(lines), pa.string()),
                     cut(lines, head_len))


def _years(month: np.ndarray, valid: np.ndarray, ctx: TimeContext) -> np.ndarray:
    """The journal-short year per line: it goes up by one each time the month goes down by NEW_YEAR_DROP
    or more."""
    seen = month[valid]
    year = np.full(len(month), ctx.year, dtype=np.int64)
    if not len(seen):
        return year
    before = np.concatenate([[ctx.last_month], seen[:-1]])
    rolled = ctx.year + np.cumsum((before != 0) & (before - seen >= NEW_YEAR_DROP))
    year[valid] = rolled
    ctx.year, ctx.last_month = int(rolled[-1]), int(seen[-1])
    return year


def _years_of_texts(month: np.ndarray, valid: np.ndarray, ctx: TimeContext, restarts: np.ndarray) -> np.ndarray:
    """`_years` for a block of independent texts, each starting where `restarts` flags a row and read
    from `ctx` as it is (which stays as it was)."""
    seen = month[valid]
    year = np.full(len(month), ctx.year, dtype=np.int64)
    if not len(seen):
        return year
    text = np.cumsum(restarts)[valid]
    first = np.r_[True, text[1:] != text[:-1]]
    before = np.concatenate([[0], seen[:-1]])
    before[first] = ctx.last_month
    rolls = (before != 0) & (before - seen >= NEW_YEAR_DROP)
    steps = np.cumsum(rolls)
    start = np.maximum.accumulate(np.where(first, np.arange(len(seen)), 0))
    year[valid] = ctx.year + steps - steps[start] + rolls[start]
    return year


def detect_format(sample: Iterable[str]) -> str:
    """Pick the envelope most of the first lines are written in; `plain` when none fits."""
    lines = [ln for ln in sample if ln.strip() and not ln.startswith("-- ")]
    if not lines:
        return "plain"
    if sum(_json_record(ln).lstrip().startswith("{") and '"MESSAGE"' in ln for ln in lines) >= len(lines) * 0.5:
        return "journal-json"
    if sum(_is_dynamo_json(ln) for ln in lines) >= len(lines) * 0.5:
        return "dynamo-jsonl"
    # Dynamo's first: its `ERROR main.init: ` would also read as a journal's `host ident: `.
    counts = {name: sum(1 for ln in lines if rx.match(ANSI.sub("", ln) if name == "dynamo" else ln))
              for name, rx in (("dynamo", DYNAMO), ("journal-short", SHORT), ("journal-iso", ISO),
                               ("journal-full", FULL),
                               ("journal-unix", UNIX), ("journal-monotonic", MONOTONIC), ("stamped", STAMPED),
                               ("kubectl", KUBECTL), ("compose", COMPOSE), ("slurm", SLURM_LABEL))}
    best = max(counts, key=lambda k: counts[k])
    return best if counts[best] >= len(lines) * 0.3 else "plain"


def _is_dynamo_json(line: str) -> bool:
    return line.lstrip().startswith("{") and all(f'"{key}":' in line for key in DYNAMO_JSON_KEYS)


def looks_like_a_log(sample: list[str]) -> bool:
    """Whether first lines are a log logmine reads (for a file whose name does not say): most of them in a
    journal's envelope or stamped, or some of them SGLang's."""
    return detect_format(sample) != "plain" or any(SGLANG_DATE.match(line) for line in sample)


def infer_context(fmt: str, sample: Iterable[str], fallback_year: int) -> TimeContext:
    """Year for year-less journal stamps; UTC offset for epoch stamps (from SGLang's own local times)."""
    ctx = TimeContext(year=fallback_year)
    for line in sample:
        header = JOURNAL_HEADER_YEAR.search(line)
        if header:
            ctx.year = int(header["year"])
        if fmt == "journal-json" and '"__REALTIME_TIMESTAMP"' in line:
            offset = _offset_from_json(line)
            if offset is not None:
                ctx.utc_offset = offset
                return ctx
            continue
        m = SGLANG_DATE.search(line)
        if not m:
            continue
        if fmt == "journal-unix":
            u = UNIX.match(line)
            offset = _round_offset(m["date"], m["time"], float(u["epoch"])) if u else None
            if offset is not None:
                ctx.utc_offset = offset
                return ctx
            continue
        ctx.year = int(m["date"][:4])
        if fmt == "journal-short":
            s = SHORT.match(line)
            if s and MONTHS.get(s["mon"]) == 1 and m["date"][5:7] == "12":
                ctx.year += 1  # the envelope is already in January of the next year
        return ctx
    return ctx


def _offset_from_json(line: str) -> timedelta | None:
    try:
        record = bounded_json.loads(_json_record(line))
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    m = SGLANG_DATE.search(json_message(record.get("MESSAGE")))
    realtime = bounded_int(json_text(record.get("__REALTIME_TIMESTAMP")), REALTIME_LIMIT)
    if not m or not realtime:
        return None
    return _round_offset(m["date"], m["time"], realtime / 1e6)


def _round_offset(date: str, time: str, epoch: float) -> timedelta | None:
    """The UTC offset, to a quarter hour, between a local time and the Unix time of the same moment;
    None when either is no valid time (a garbled line)."""
    try:
        local = datetime.fromisoformat(f"{date} {time}")
        utc = datetime.fromtimestamp(epoch, tz=timezone.utc).replace(tzinfo=None)
    except (ValueError, OverflowError, OSError):
        return None
    offset = timedelta(seconds=round((local - utc).total_seconds() / 900) * 900)
    return offset if abs(offset) <= MAX_UTC_OFFSET else None
