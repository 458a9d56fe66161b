"""Log ingest: read inputs, parse them in batches, append the rows to the tables.

Data flow: sources (bytes → lines) → parsers.envelopes (envelope → message) → parsers.sglang_prefix
(prefix → body) → parsers.sglang_classifier (body → kind + fields) → ColumnBatch → typed Arrow tables →
store (DuckDB). Large inputs are parsed in a worker process (`logmine.ingest.worker`), whose batches come back
through shared memory while the main process stores the previous ones. Re-ingesting a file adds
nothing; a file that grew is read from where the last ingest stopped; one edited where it had been read
is read again, and a copy or a renamed file is recognised by its content (`source_identity`).

The caller runs `ingest_logs` inside one transaction, so an interrupted ingest leaves the tables as they
were. Memory stays flat all the same: DuckDB writes an open transaction's large appends to the database
file as they come (`enable_optimistic_write`) rather than holding them until the commit.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..inputs.identity import (
    PrefixCheck,
    content_hash,
    content_hasher,
    content_kept,
    restore_generation,
    retire_generation,
    same_content,
)
from ..inputs.sources import (
    BLOCK_BYTES,
    SNIFF_BYTES,
    Input,
    InputError,
    LineBlock,
    PeekableStream,
    describe_input,
    file_size,
    fingerprint,
    head_past_hole,
    iter_line_blocks,
    looks_binary,
    looks_utf16,
    open_bytes,
    per_rank_file,
    read_range,
)
from ..parsers.batch_stats import expand_stats
from ..parsers.envelopes import FORMATS, TimeContext, detect_format, infer_context
from ..parsers.events import COMMON_COLUMNS, EVENT_TABLES
from ..parsers.limits import LimitExceeded
from ..parsers.log_lines import LINE_COLUMNS, ColumnBatch, LineParser, table_columns
from ..parsers.secret_patterns import PRIVATE_KEY_BEGIN, PRIVATE_KEY_END
from ..parsers.transcripts.model import TranscriptUnreadable
from ..store import (
    SavedRows,
    append,
    delete_rows,
    ensure_tables,
    execute,
    find_source,
    next_source_id,
    typed_table,
    upsert_source,
)
from . import interrupts
from .redact import Redactor
from .worker.parse import WorkerDied, WorkerParse
from .worker.processes import WORKER_MIN_BYTES

# `--replace`: a file truncated or rewritten since its last ingest has its rows replaced, not kept as an
# earlier generation. Set for one ingest by `transaction.ingest`.
REPLACE_CHANGED: ContextVar[bool] = ContextVar("replace_changed", default=False)
BATCH_LINES = 50_000
SMALL_APPEND_ROWS = 1000
TAIL_BYTES = 4096
DETECT_LINES = 200  # the format is told from the first lines of an input
LOG_TABLES = ["lines"] + [t.name for t in EVENT_TABLES]
Progress = Callable[[str, int, int | None], None]  # (input name, bytes done, bytes total)


@dataclass
class SourceReport:
    path: str
    source_id: int
    status: str  # new, grown, unchanged, replaced, generation, copy (see `note`)
    envelope: str | None = None
    lines_read: int = 0
    lines_typed: int = 0
    lines_untyped: int = 0
    by_kind: Counter = field(default_factory=Counter)
    untimed_markers: int = 0  # in the whole source, once its runs are derived
    note: str | None = None  # what was done and why, when its content was seen before or changed
    new_shape: str | None = None  # lines of a shape logmine does not read (`drift`), once the ingest is derived
    lines_cut: int = 0  # lines longer than `limits.MAX_LINE_BYTES`, stored cut to it
    hole_bytes: int = 0  # NUL bytes dropped before lines' text: a copytruncate rotation's hole

    def as_dict(self) -> dict:
        return {"path": self.path, "source_id": self.source_id, "status": self.status, "note": self.note,
                "lines_cut": self.lines_cut, "hole_bytes": self.hole_bytes,
                "format": self.envelope,
                "lines_read": self.lines_read, "lines_typed": self.lines_typed,
                "lines_untyped": self.lines_untyped, "by_kind": dict(self.by_kind.most_common()),
                "untimed_markers": self.untimed_markers, "new_shape": self.new_shape}


@dataclass
class IngestReport:
    db: str
    sources: list[SourceReport] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # one line per input that could not be read: file and why
    left: list[str] = field(default_factory=list)  # one line per folder whose other files were not read

    def as_dict(self) -> dict:
        by_kind: Counter = Counter()
        for s in self.sources:
            by_kind.update(s.by_kind)
        return {
            "db": self.db,
            "lines_read": sum(s.lines_read for s in self.sources),
            "lines_typed": sum(s.lines_typed for s in self.sources),
            "lines_untyped": sum(s.lines_untyped for s in self.sources),
            "by_kind": dict(by_kind.most_common()),
            "sources": [s.as_dict() for s in self.sources],
            "failed": self.failed,
            "left": self.left,
        }


def ingest_logs(con: duckdb.DuckDBPyConnection, paths: list[str], envelope: str | None = None,
                progress: Progress | None = None, redact: bool = False, worker: bool = True) -> IngestReport:
    """Parse log files (or `-` for stdin) into the tables; run it inside a transaction. Without `worker`,
    large inputs too are parsed in this process (`--jobs 1`, and the processes of `--jobs N`).

    With it, a large input is parsed in a worker process while this one stores its rows, and the next
    input's parse starts in a second worker beside it (`ReadAhead`): a folder of journals keeps both
    cores busy from one file to the next, the main process never waiting for a first batch."""
    if envelope is not None and envelope not in FORMATS:
        raise InputError(f"unknown format {envelope!r}; choose one of {', '.join(FORMATS)}")
    ensure_tables(con, {name: table_columns(name) for name in LOG_TABLES})
    report = IngestReport(db="")
    ahead: ReadAhead | None = None

    def start_next(index: int, source_id: int) -> None:
        """Start parsing the input after paths[index], whose source id is `source_id`."""
        nonlocal ahead
        ahead = _read_ahead(con, paths[index + 1], envelope, max(next_source_id(con), source_id + 1), redact)

    try:
        for index, path in enumerate(paths):
            interrupts.check()
            this, ahead = ahead, None
            on_read = functools.partial(start_next, index) if worker and index + 1 < len(paths) else None
            try:
                report.sources.append(ingest_log(con, this.inp if this else describe_input(path), envelope,
                                                 progress, redact, worker, this, on_read))
            except duckdb.Error:
                raise  # the transaction itself is in doubt: nothing of this ingest is kept
            except Exception as exc:  # this input is bad: it costs only itself
                report.failed.append(failure_line(path, exc))
    finally:
        if ahead:
            ahead.batches.close()
    return report


def failure_line(path: str, exc: Exception) -> str:
    """One line naming the input and why it failed."""
    if isinstance(exc, (InputError, TranscriptUnreadable)):
        return str(exc)
    if isinstance(exc, (WorkerDied, LimitExceeded)):
        return f"{path}: {exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{path}: cannot read ({exc.strerror})"
    detail = (str(exc).strip().splitlines() or [""])[0]
    return f"{path}: cannot be read ({type(exc).__name__}{': ' if detail else ''}{detail})"


def ingest_log(con: duckdb.DuckDBPyConnection, inp: Input, envelope: str | None,
               progress: Progress | None = None, redact: bool = False, worker: bool = True,
               ahead: ReadAhead | None = None, on_read: Callable[[int], None] | None = None) -> SourceReport:
    """Ingest one input. `ahead` is its parse if already started. `on_read(source_id)` is called once its
    parse runs in the worker, or once it has been parsed in this process: `ingest_logs` then starts the
    next input's parse in a worker, so that its batches are ready when this input's rows are stored."""
    try:
        return _ingest_log(con, inp, envelope, progress, redact, worker, ahead, on_read)
    finally:
        if ahead:
            ahead.batches.close()


def _ingest_log(con: duckdb.DuckDBPyConnection, inp: Input, envelope: str | None, progress: Progress | None,
                redact: bool, worker: bool, ahead: ReadAhead | None,
                on_read: Callable[[int], None] | None, check_later: bool = True) -> SourceReport:
    previous = find_source(con, inp.path) if inp.path != "-" else None
    same = same_content(con, inp) if previous is None and inp.path != "-" else None
    if same and same.how != "continues":
        return SourceReport(inp.display, same.source["source_id"], "copy", same.source["envelope"], note=same.note())
    if same:  # the source read before under another name: it goes on here
        previous = same.source
    start_offset, first_line, status, check = plan_resume(inp, previous, check_later)
    if status == "replaced" and not same and lost_content(inp, previous) and not REPLACE_CHANGED.get():
        return _new_generation(con, inp, envelope, progress, redact, worker, previous)
    source_id = previous["source_id"] if previous else next_source_id(con)
    report = SourceReport(inp.display, source_id, status, note=same.note() if same else None)
    if status == "replaced":
        report.note = same.note(read_again=True) if same else \
            "edited where read before: read again whole, its rows replaced"
    if status == "unchanged":
        report.envelope = previous["envelope"]
        if same:
            execute(con, "UPDATE sources SET path = ?, display = ?, compression = ? WHERE source_id = ?",
                    [inp.path, inp.display, inp.compression, source_id])
        return report
    if status != "new":
        ahead = None  # parsed ahead as a new input, which it turned out not to be: `ingest_log` stops it
    saved = SavedRows(con, LOG_TABLES, source_id, first_line, keep=status in ("grown", "replaced"))
    try:
        _read_log(con, inp, envelope, progress, previous, start_offset, first_line, report, redact, worker,
                  ahead, on_read, check)
    except duckdb.Error:
        raise
    except EditedInPlace:
        saved.restore()
        return _ingest_log(con, inp, envelope, progress, redact, worker, None, None, check_later=False)
    except Exception:
        saved.restore()
        raise
    saved.discard()
    return report


def lost_content(inp: Input, previous: dict) -> bool:
    """Whether a file read again whole no longer holds all its last ingest read: a plain file's does not
    (that is why it is read again), a compressed one's may (a `.gz` rewritten with more lines)."""
    return inp.compression is None or not content_kept(inp, previous)


def _new_generation(con: duckdb.DuckDBPyConnection, inp: Input, envelope: str | None, progress: Progress | None,
                    redact: bool, worker: bool, previous: dict) -> SourceReport:
    """A file truncated (`> server.log`, a unit's `StandardOutput=file:` at restart) or rewritten since its
    last ingest: its stored rows and runs may be the only copy, so they are kept as an earlier generation
    (`inputs.identity.retire_generation`) and the file is read as a new source beside them."""
    earlier = retire_generation(con, previous)
    try:
        report = _ingest_log(con, inp, envelope, progress, redact, worker, None, None, check_later=False)
    except BaseException:
        restore_generation(con, previous)
        raise
    report.status = "generation"
    report.note = (f"truncated or rewritten: a new generation; the earlier {previous['lines_ingested']:,} lines and "
                   f"their runs kept as {earlier}")
    return report


def _read_log(con: duckdb.DuckDBPyConnection, inp: Input, envelope: str | None, progress: Progress | None,
              previous: dict | None, start_offset: int, first_line: int, report: SourceReport,
              redact: bool = False, worker: bool = True, ahead: ReadAhead | None = None,
              on_read: Callable[[int], None] | None = None, check: PrefixCheck | None = None) -> None:
    """Parse one input from `start_offset` (or take the parse started `ahead`) and store its rows and its
    `sources` record, once the `check` that the file still begins with what was read before agrees."""
    source_id = report.source_id
    if ahead:
        plan, batches = ahead.plan, ahead.batches
    else:
        plan, stream = plan_parse(con, inp, envelope, previous, start_offset, first_line, source_id, redact)
        # What is left to read decides: a grown file is read from where the last ingest stopped.
        if worker and _worth_a_worker(inp, start_offset):
            stream.close()  # the worker process reopens the file
            batches = WorkerParse(plan, parse_batches, functools.partial(typed_batch, stats=True))
        else:
            batches = parse_batches(plan, stream)
    report.envelope = plan.envelope
    parsed = Parsed({}, 0, first_line - 1, False, True)
    appender = BatchAppender(con)
    with contextlib.closing(batches):  # closed at once when stopped: the worker and its shared file go with it
        if on_read and isinstance(batches, WorkerParse):
            on_read(source_id)  # the next input's worker parses beside this one's, ahead of its turn
            on_read = None
        for parsed in batches:
            interrupts.check()
            if on_read and parsed.final:
                on_read(source_id)
            tables = typed_batch(parsed.tables, stats=True)
            if plan.source_id != source_id:  # parsed ahead under the id a failed input before it did not take
                tables = {name: _with_source_id(data, source_id) for name, data in tables.items()}
            appender.add(tables, report)
            report.lines_cut += parsed.cut_lines
            report.hole_bytes += parsed.hole_bytes
            if progress:
                progress(inp.display, start_offset + parsed.consumed, inp.size)
    appender.close()
    if check and not check.kept():
        raise EditedInPlace(inp.display)
    end = start_offset + parsed.consumed
    digest = parsed.digest
    if digest is None:  # read from where the last ingest stopped: its content is hashed from the start
        digest = content_hash(inp, end)
    if inp.path == "-" and is_duplicate_stdin(con, report, digest):
        return
    store_source_record(con, inp, source_id, plan, end, parsed, digest)


def store_source_record(con: duckdb.DuckDBPyConnection, inp: Input, source_id: int, plan: ParsePlan, end: int,
                        parsed: Parsed, digest: str | None) -> None:
    """The `sources` record of an input read up to byte `end` (`parsed` its last batch): what the next
    ingest needs to go on from there, or to tell that the file changed."""
    line_no, partial = parsed.line_no, parsed.partial
    bytes_done, lines_done = end, line_no
    # What is stored but read again if the file grows: an unterminated last line, and every line from
    # the start of a traceback still open at the end, whose rest may still be being written.
    reread_from = min(n for n in (parsed.reopen_line, line_no if partial else None, line_no + 1) if n is not None)
    if inp.resumable and reread_from <= line_no:
        bytes_done = _start_of_line(inp, end, line_no - reread_from + 1, partial)
        lines_done = reread_from - 1
    elif partial:
        lines_done -= 1
    upsert_source(con, {
        "source_id": source_id, "path": inp.path, "display": inp.display, "kind": "log", "envelope": plan.envelope,
        "compression": inp.compression, "size_bytes": end if inp.resumable else inp.size,
        "bytes_ingested": bytes_done, "lines_ingested": lines_done, "partial_last_line": partial or bytes_done < end,
        "head_hash": _head_hash(inp, bytes_done), "tail_hash": _tail_hash(inp, bytes_done),
        "content_hash": digest,
        "year": plan.time.year, "utc_offset_s": int(plan.time.utc_offset.total_seconds()),
        "fallback_date": plan.fallback_date, "ingested_at": datetime.now(),
    })


@dataclass
class ParsePlan:
    """Everything needed to parse one input, picklable so a worker process can do it."""

    inp: Input
    start_offset: int
    first_line: int
    source_id: int
    envelope: str
    time: TimeContext
    fallback_date: str
    last_ts: str | None = None  # the time and kind of the line before `first_line`, when resuming
    last_kind: str | None = None
    redact: bool = False  # replace secrets in each line before it is parsed (`logmine.ingest.redact`)
    key_lines_left: int = 0  # resuming inside a private key an earlier ingest began (`redact.KeyBlock`)
    end_offset: int | None = None  # where to stop: one byte range of a file (`logmine.ingest.jobs.ranges`)
    file_host: str | None = None  # what a per-rank file's name says (`inputs.sources.per_rank_file`)
    file_rank: int | None = None


@dataclass
class ReadAhead:
    """A new input's parse, started in the worker while the input before it is still being stored: the
    main process then need not wait for its first batch."""

    inp: Input
    plan: ParsePlan
    batches: WorkerParse


def _read_ahead(con: duckdb.DuckDBPyConnection, path: str, envelope: str | None, source_id: int,
                redact: bool) -> ReadAhead | None:
    """Start parsing `path` now, if the database does not know it and it is large enough for the worker.
    `source_id` is the id it is expected to get; its turn checks both (a copy of the input before it, or
    a failed input before it, change them)."""
    if path == "-":
        return None
    try:
        inp = describe_input(path)
        if not _worth_a_worker(inp, 0) or find_source(con, inp.path) is not None:
            return None
        plan, stream = plan_parse(con, inp, envelope, None, 0, 1, source_id, redact)
        stream.close()
        return ReadAhead(inp, plan, WorkerParse(plan, parse_batches, functools.partial(typed_batch, stats=True)))
    except Exception:  # noqa: BLE001 - what is wrong with it is said in its turn, in the inputs' order
        return None


def _worth_a_worker(inp: Input, start_offset: int) -> bool:
    """Whether what is left to read of `inp` is large enough to be parsed in the worker process."""
    return inp.path != "-" and (inp.size or 0) - (start_offset if inp.resumable else 0) >= WORKER_MIN_BYTES


def _transcript_format(head: bytes) -> str | None:
    from ..parsers.transcripts.detect import stream_format  # here: only standard input needs the readers

    return stream_format(head)


def plan_parse(con: duckdb.DuckDBPyConnection, inp: Input, envelope: str | None, previous: dict | None,
                start_offset: int, first_line: int, source_id: int, redact: bool) -> tuple[ParsePlan, PeekableStream]:
    """How to parse `inp` from `start_offset`: its format and time context (told from its first lines, or
    kept from the last ingest when resuming), and the stream opened there."""
    stream = PeekableStream(open_bytes(inp, start_offset), inp.display)
    try:
        head = head_past_hole(inp, stream.head, start_offset)  # a copytruncate hole's NULs say nothing of the file
        if start_offset == 0 and looks_utf16(head):
            raise InputError(f"{inp.display}:1: UTF-16 text (as PowerShell's `>` writes it), not UTF-8: convert it "
                             f"first, e.g. `iconv -f UTF-16 -t UTF-8 {inp.display} > {inp.display}.utf8`")
        if start_offset == 0 and envelope is None and looks_binary(head):
            raise InputError(f"{inp.display}:1: binary data, not a log (use --format plain to force)")
        if inp.path == "-" and envelope is None and (transcript := _transcript_format(stream.head)):
            raise InputError(f"-: an agent transcript ({transcript}) on standard input, not a log: save it to a "
                             "file and ingest the file")
        sample = [line for line, _ in _sample_lines(head)]
    except BaseException:
        stream.close()
        raise
    if previous and start_offset > 0:
        fmt = previous["envelope"]
        time = TimeContext(previous["year"], _seconds(previous["utc_offset_s"]))
        fallback_date = previous["fallback_date"]
    else:
        fmt = envelope or detect_format(sample[:DETECT_LINES])
        fallback_date = datetime.fromtimestamp(inp.mtime or datetime.now().timestamp()).strftime("%Y-%m-%d")
        time = infer_context(fmt, sample, int(fallback_date[:4]))
    plan = ParsePlan(inp, start_offset, first_line, source_id, fmt, time, fallback_date, redact=redact)
    if inp.path != "-" and (named := per_rank_file(Path(inp.path).name)):
        plan.file_host, plan.file_rank, _ = named
    if first_line > 1:  # the parser's state at the line before: the time and kind later lines inherit
        found = execute(con, "SELECT CAST(ts AS VARCHAR), kind FROM lines WHERE source_id = ? AND line_no = ?",
                    [source_id, first_line - 1])
        plan.last_ts, plan.last_kind = found[0] if found else (None, None)
        if redact:
            plan.key_lines_left = open_key_lines(con, source_id, first_line)
        if plan.last_ts and fmt == "journal-short":
            # The year its stamps had reached, and the month a later January is seen to roll over from.
            time.year, time.last_month = int(plan.last_ts[:4]), int(plan.last_ts[5:7])
    return plan, stream


def open_key_lines(con: duckdb.DuckDBPyConnection, source_id: int, first_line: int) -> int:
    """How many lines of a private key begun before `first_line` (its BEGIN stored, no END after it) may
    still come: its material, appended later, is redacted as if read in one go."""
    from ..parsers.secret_patterns import MAX_KEY_LINES

    begin, end = execute(con, "SELECT max(line_no) FILTER (WHERE regexp_matches(message, ?)), "
                              "max(line_no) FILTER (WHERE regexp_matches(message, ?)) FROM lines "
                              "WHERE source_id = ? AND message LIKE '%PRIVATE KEY%'",
                         [PRIVATE_KEY_BEGIN, PRIVATE_KEY_END, source_id])[0]
    if begin is None or (end is not None and end >= begin):
        return 0
    return max(0, MAX_KEY_LINES - (first_line - 1 - begin))


def _with_source_id(data: pa.Table, source_id: int) -> pa.Table:
    column = data.schema.get_field_index("source_id")
    if column < 0:
        return data
    return data.set_column(column, "source_id", pa.array(np.full(data.num_rows, source_id),
                                                         data.schema.field(column).type))


@dataclass
class Parsed:
    """One parsed batch: its tables, and how far the input has been read after it."""

    tables: dict[str, pa.Table]
    consumed: int  # bytes from the start offset
    line_no: int  # last line number parsed
    partial: bool  # the input's last line has no newline
    final: bool  # the input's last batch
    digest: str | None = None  # content hash of all bytes read, on the final batch of an input read from its start
    reopen_line: int | None = None  # first line of a traceback still open at the end, on the final batch
    time: TimeContext | None = None  # the year and month the stamps had reached, on the final batch
    cut_lines: int = 0  # lines of this batch longer than `limits.MAX_LINE_BYTES`, stored cut
    hole_bytes: int = 0  # NUL bytes of this batch dropped before lines' text (`LineBlock.lines`)


def parse_batches(plan: ParsePlan, stream: PeekableStream | None = None) -> Iterator[Parsed]:
    """Parse an input block by block into batches of about BATCH_LINES lines.

    The first batch is one block, so that storing starts while the second is parsed.
    """
    stream = stream or PeekableStream(open_bytes(plan.inp, plan.start_offset, plan.end_offset), plan.inp.display)
    parser = LineParser(plan.source_id, plan.envelope, plan.time, plan.fallback_date, last_ts=plan.last_ts,
                        last_kind=plan.last_kind, file_rank=plan.file_rank, file_host=plan.file_host)
    redactor = Redactor(plan.key_lines_left) if plan.redact else None
    # Every byte read is hashed (`source_identity`): a file edited in place, copied or renamed is recognised.
    hasher = content_hasher() if plan.start_offset == 0 else None
    line_no, consumed, partial, cut_lines, hole_bytes = plan.first_line - 1, 0, False, 0, 0
    batch = ColumnBatch()
    try:
        for number, block in enumerate(iter_line_blocks(stream, hasher)):
            lines, bad = block.columns()
            if redactor:
                lines = redactor.lines(lines)
            parser.parse_block(line_no + 1, lines, bad, batch)
            line_no += len(lines)
            partial, consumed = block.partial_last, block.end_offset
            cut_lines += block.cut_lines
            hole_bytes += block.hole_bytes
            if len(batch) >= BATCH_LINES or number == 0:
                yield Parsed(typed_batch(batch.tables(), stats=False), consumed, line_no, partial, False,
                             cut_lines=cut_lines, hole_bytes=hole_bytes)
                batch, cut_lines, hole_bytes = ColumnBatch(), 0, 0
        reopen_line = min((err.first_line_no for err in parser.tracebacks.open), default=None)
        parser.finish(batch)
        yield Parsed(typed_batch(batch.tables(), stats=False), consumed, line_no, partial, True,
                     hasher and hasher.hexdigest(), reopen_line, parser.time, cut_lines, hole_bytes)
    finally:
        if plan.inp.path != "-":
            stream.close()


def plan_resume(inp: Input, previous: dict | None,
                check_later: bool = True) -> tuple[int, int, str, PrefixCheck | None]:
    """(byte offset, first line number, status, pending check) for this input given what was ingested before.

    For `grown` and `replaced` inputs the stored rows from that first line on are deleted at merge. A file
    that grew is read from where the last ingest stopped while a thread checks that it still begins with
    what that ingest read (`PrefixCheck`, unless not `check_later`): if it does not, the caller reads it
    again whole (`EditedInPlace`).
    """
    if previous is None:
        return 0, 1, "new", None
    if inp.resumable:
        done = previous["bytes_ingested"]
        size = file_size(inp.path)
        same_prefix = size >= done and _head_hash(inp, done) == previous["head_hash"] \
            and _tail_hash(inp, done) == previous["tail_hash"]
        unchanged = size == done and not previous["partial_last_line"] or \
            previous["partial_last_line"] and size == previous["size_bytes"]  # its stored tail has not grown
        # Its format was told from fewer lines than there are now: read it all again.
        from_start = done < SNIFF_BYTES and previous["lines_ingested"] < DETECT_LINES
        if same_prefix and check_later and not unchanged and not from_start:
            return done, previous["lines_ingested"] + 1, "grown", PrefixCheck.of(inp, previous)
        if same_prefix and PrefixCheck.kept_now(inp, previous):
            if unchanged:
                return 0, 1, "unchanged", None
            if from_start:
                return 0, 1, "grown", None
            return done, previous["lines_ingested"] + 1, "grown", None
    elif inp.size == previous["size_bytes"] and _head_hash(inp, SNIFF_BYTES) == previous["head_hash"]:
        return 0, 1, "unchanged", None
    return 0, 1, "replaced", None


class EditedInPlace(Exception):  # noqa: N818 - a finding, not an error: the file is read again whole
    """A grown file, read from where the last ingest stopped, turned out not to begin with what it read."""


def typed_batch(tables: dict[str, pa.Table], stats: bool) -> dict[str, pa.Table]:
    """The parser's text tables as tables of the database's column types, ready to append.

    In two stages that balance the two processes: the worker types `lines` and the event tables
    (`stats=False`); the tables that still hold batch statistics text, split into columns with
    `stats=True`, are typed by whichever process has time for them: the worker while the main process
    has a batch waiting, else the main process. Tables already typed pass through as they are.

    An event's time, PID and ranks are those of its line: they are copied from the batch's `lines`
    where the event row has none (errors closed later carry their own).
    """
    lines = tables.get("lines")
    if lines is None:
        lines = pa.table({name: pa.array([], pa.string()) for name in LINE_COLUMNS})
    lines = typed_table(lines, LINE_COLUMNS)
    typed = {"lines": lines}
    first = lines.column("line_no")[0].as_py() if lines.num_rows else 0
    for table, data in tables.items():
        if table == "lines":
            continue
        if ("_stats" in data.column_names) != stats:
            typed[table] = data
            continue
        columns = table_columns(table)
        data = typed_table(expand_stats(data, columns), columns)
        position = pc.subtract(data.column("line_no"), first)
        inside = pc.and_(pc.greater_equal(position, 0), pc.less(position, lines.num_rows))
        index = pc.if_else(inside, position, pa.scalar(None, pa.int64()))
        for name in COMMON_COLUMNS:
            if name in ("source_id", "line_no", "kind"):
                continue
            inherited = pc.take(lines.column(name), index)
            own = data.column(name)
            if own.type == inherited.type:
                data = data.set_column(data.schema.get_field_index(name), name, pc.coalesce(own, inherited))
        typed[table] = data
    return typed


class BatchAppender:
    """Appends typed batches to the tables, and counts their lines into the source's report.

    Each append costs a few milliseconds whatever its size, so the few rows a batch has for a rare
    table (a KV pool, a systemd line) are held back until `SMALL_APPEND_ROWS` of them have gathered or
    the input ends: a restart-heavy journal would otherwise pay 15 appends of one row per batch. Rows
    still reach each table in their order.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.held: dict[str, list[pa.Table]] = {}

    def add(self, tables: dict[str, pa.Table], report: SourceReport) -> None:
        for table, data in tables.items():
            held = self.held.setdefault(table, [])
            held.append(data)
            if sum(t.num_rows for t in held) >= SMALL_APPEND_ROWS:
                self._append(table)
            else:
                # A copy: the batch may live in a shared slot, which the worker refills with a later one.
                held[-1] = data.take(pa.array(np.arange(data.num_rows)))
        lines = tables["lines"]
        kinds = Counter({row["values"]: row["counts"]
                         for row in pc.value_counts(lines.column("kind")).to_pylist()})
        untyped = kinds.pop(None, 0)
        report.lines_read += lines.num_rows
        report.lines_untyped += untyped
        report.lines_typed += lines.num_rows - untyped
        report.by_kind.update(kinds)

    def close(self) -> None:
        for table in list(self.held):
            self._append(table)

    def _append(self, table: str) -> None:
        # A column left as text where it did not cast (see `typed_table`) changes the schema: such
        # pieces are appended on their own.
        for _, pieces in itertools.groupby(self.held.pop(table), key=lambda t: t.schema):
            data = pa.concat_tables(pieces)
            if data.num_rows:
                append(self.con, table, data, table_columns(table))


def is_duplicate_stdin(con: duckdb.DuckDBPyConnection, report: SourceReport, content_hash: str) -> bool:
    """stdin has no path: the same bytes piped twice are recognised by their hash, and not stored again."""
    earlier = execute(con, "SELECT min(source_id) FROM sources WHERE content_hash = ?", [content_hash])[0][0]
    if earlier is None:
        return False
    delete_rows(con, LOG_TABLES, report.source_id)
    report.source_id, report.status = earlier, "unchanged"
    report.lines_read = report.lines_typed = report.lines_untyped = 0
    report.by_kind.clear()
    return True


def _sample_lines(head: bytes) -> list[tuple[str, bool]]:
    cut = head.rfind(b"\n")
    data = head[:cut] if cut >= 0 else head
    return LineBlock(data, len(data), False).lines()


def _head_hash(inp: Input, upto: int) -> str | None:
    if not inp.resumable and inp.path == "-":
        return None
    if not inp.resumable:
        with open_bytes(inp) as stream:
            return fingerprint(stream.read(SNIFF_BYTES))
    return fingerprint(read_range(inp.path, 0, min(upto, SNIFF_BYTES)))


def _tail_hash(inp: Input, upto: int) -> str | None:
    if not inp.resumable:
        return None
    return fingerprint(read_range(inp.path, upto - TAIL_BYTES, min(upto, TAIL_BYTES)))


def _start_of_line(inp: Input, end: int, count: int, partial: bool) -> int:
    """The byte offset where the last `count` lines before `end` begin (the last unterminated if `partial`)."""
    wanted = count if partial else count + 1  # the newline ending the line before them is the one sought
    stop = end
    while stop > 0:
        start = max(0, stop - BLOCK_BYTES)
        data = read_range(inp.path, start, stop - start)
        found = data.count(b"\n")
        if found >= wanted:
            at = len(data)
            for _ in range(wanted):
                at = data.rfind(b"\n", 0, at)
            return start + at + 1
        wanted -= found
        stop = start
    return 0


def _seconds(value: int | None) -> timedelta:
    return timedelta(seconds=value or 0)
