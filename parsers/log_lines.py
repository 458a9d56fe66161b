"""Turn decoded physical lines of one SGLang log into column batches: every line, plus typed events.

The output is storage-agnostic: `ColumnBatch` maps a table name to its columns (lists of equal
length). Values are left as text where the database can cast them in bulk.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .envelopes import ANSI_ESCAPE, Envelopes, TimeContext, read_envelopes
from .events import COMMON_COLUMNS, FLAG, INT16, INT32, INT64, TABLES_BY_NAME, TEXT, TIME
from .json_events import JSON_EVENT_START, json_event_fields
from .launch_config import parse_server_args_repr
from .progress_bars import bar_description, split_carriage_returns
from .rank_guess import GUESSED_COLUMN, LAUNCH_KIND, PER_RANK_TABLES, RankGuess
from .sglang_classifier import Classifier
from .sglang_formats import IN_TRACEBACK_KINDS, JOURNAL_BLOB, JOURNAL_MARKER, RANK_COLUMNS, RAW_KINDS
from .sglang_prefix import Prefixes, parse_prefixes
from .tracebacks import OpenError, TracebackAssembler, could_start_error, error_fields
from .vector_columns import flags, has_byte, patch, records_table

LINE_COLUMNS: dict[str, pa.DataType] = {
    "source_id": INT32, "line_no": INT64, "ts": TIME, "log_ts": TIME, "host": TEXT, "ident": TEXT, "pid": INT32,
    "unit": TEXT, **dict.fromkeys(RANK_COLUMNS, INT16), "level": TEXT, "logger": TEXT, "prefixed": FLAG,
    "kind": TEXT, "group_line_no": INT64, "message": TEXT, "bad_utf8": FLAG,
}
SYSTEMD_TABLE = "systemd"


def table_columns(table: str) -> dict[str, pa.DataType]:
    """Column names and logical types of `lines` or of an event table."""
    if table == "lines":
        return LINE_COLUMNS
    return {**COMMON_COLUMNS, **TABLES_BY_NAME[table].columns}


class ColumnBatch:
    """Rows for several tables, as Arrow tables (several pieces per table until `tables` joins them).

    Event rows carry only their own fields plus `line_no`; the store copies the common columns
    (time, pid, ranks) from the line each event was read from.
    """

    def __init__(self) -> None:
        self.pieces: dict[str, list[pa.Table]] = defaultdict(list)

    def add(self, table: str, data: pa.Table) -> None:
        if data.num_rows:
            self.pieces[table].append(data)

    def tables(self) -> dict[str, pa.Table]:
        return {name: pa.concat_tables(parts, promote_options="permissive") for name, parts in self.pieces.items()}

    def __len__(self) -> int:
        return sum(t.num_rows for t in self.pieces["lines"])


@dataclass
class LineParser:
    """Stateful parser for one source; feed blocks of lines in order with `parse_block`.

    Envelope, prefix and pattern matching run over the whole block (RE2 in pyarrow); the few rows
    whose meaning depends on the lines before them (unprefixed lines, traceback starts) then go through
    a sequential pass that also carries the traceback state from block to block.
    """

    source_id: int
    envelope: str
    time: TimeContext
    fallback_date: str
    classifier: Classifier = field(default_factory=Classifier)
    tracebacks: TracebackAssembler = field(default_factory=TracebackAssembler)
    last_ts: str | None = None
    last_kind: str | None = None
    # The rank and host a per-rank file's name gives (`<host>_<rank>.log`), for lines that say neither.
    file_rank: int | None = None
    file_host: str | None = None
    ranks: RankGuess = field(default_factory=RankGuess)  # for envelopes that dropped the rank tags

    def finish(self, batch: ColumnBatch) -> None:
        """Close the tracebacks still open at the end of the input."""
        errors = [self._error_row(err) for err in self.tracebacks.close_all()]
        if errors:
            batch.add("errors", pa.Table.from_pylist(errors))

    def parse_block(self, first_line_no: int, lines: pa.StringArray, bad_utf8: np.ndarray,
                    batch: ColumnBatch, restarts: np.ndarray | None = None) -> None:
        """Parse consecutive lines numbered from `first_line_no` into `batch`.

        Where `restarts` flags a row, an independent text starts (the next tool output of a transcript):
        it is read as a fresh parser would read it, so many short texts cost one block, not one each.
        """
        n = len(lines)
        if not n:
            return
        ascii_rows = flags(pc.string_is_ascii(lines))
        env = read_envelopes(lines, self.envelope, self.time, ascii_rows, restarts)
        if self.envelope in ("journal-json", "dynamo-jsonl"):  # an ASCII record may decode to a message that is not
            ascii_rows = flags(pc.string_is_ascii(env.message))
        message, continued = _first_lines(env.message, env.matched) if env.matched is not None else (env.message, {})
        body_source, progress = _carriage_returns(message)
        pre = parse_prefixes(body_source, ascii_rows)
        if env.matched is not None:  # the envelope's lines are the logger's records, as a prefix would say
            pre.prefixed = pre.prefixed | env.matched
            _dynamo_own_records(pre, env)
        ts, log_ts = self._times(env, pre, restarts)
        body = pre.body
        classify_rows = np.nonzero(pre.prefixed | flags(pc.not_equal(body, "")))[0]
        found = self.classifier.classify(body, classify_rows, ascii_rows, env.ident, pre.prefixed)
        if env.matched is not None:  # Dynamo's lines, on their own or inside another envelope
            self._guess_ranks(pre, found.kinds, env.matched)
        self._file_identity(pre, env)
        block = Block(first_line_no, body, pre, ts, env.pid, found.kinds, progress, [None] * n, restarts,
                      continued=continued)
        block.records["notices"] = self._log_records(block)
        errors = self._sequential_pass(block)

        columns = {
            "source_id": pa.array(np.full(n, self.source_id, dtype=np.int64)),
            "line_no": pa.array(np.arange(first_line_no, first_line_no + n, dtype=np.int64)),
            "ts": ts, "log_ts": log_ts, "host": env.host, "ident": env.ident, "pid": env.pid, "unit": env.unit,
            **pre.ranks, "level": _either(pre.level, env.level), "logger": _either(pre.logger, env.logger),
            "prefixed": pa.array(pre.prefixed), "kind": pa.array(block.kinds, pa.string()),
            "group_line_no": pa.array(block.groups, pa.int64()), "message": env.message,
            "bad_utf8": pa.array(bad_utf8),
        }
        batch.add("lines", pa.table(columns))
        for table, records in block.records.items():
            if records:
                found.add(table, records_table(records))
        for table, pieces in found.events.items():
            batch.add(table, self._events(table, pieces, first_line_no))
        if errors:
            batch.add("errors", pa.Table.from_pylist(errors))
        if env.traces:
            batch.add("traces", pa.Table.from_pylist([
                {"kind": "trace", **trace, "line_no": first_line_no + row, "source_id": self.source_id}
                for row, trace in env.traces]))

    # ------------------------------------------------------------ columns

    def _guess_ranks(self, pre: Prefixes, kinds: np.ndarray, rankless: np.ndarray) -> None:
        """Number the per-rank lines of an envelope that dropped the rank tags (`rank_guess`), among the
        `rankless` rows (Dynamo's)."""
        numbered = [k for k, table in self.classifier.tables.items() if table in PER_RANK_TABLES] + [LAUNCH_KIND]
        untagged = ~flags(pc.is_valid(pre.ranks[GUESSED_COLUMN]))
        rows = np.nonzero(np.isin(kinds, numbered) & untagged & rankless)[0]
        guessed = [(int(i), self.ranks.rank_of(kinds[i], self.classifier.tables.get(kinds[i]))) for i in rows]
        guessed = [(i, rank) for i, rank in guessed if rank is not None]
        if guessed:
            at = np.array([i for i, _ in guessed])
            pre.ranks[GUESSED_COLUMN] = patch(pre.ranks[GUESSED_COLUMN], at, pa.array([r for _, r in guessed],
                                                                                     pa.int64()))

    def _file_identity(self, pre: Prefixes, env: Envelopes) -> None:
        """The rank and host of a per-rank file's name, on the lines that say neither themselves."""
        if self.file_rank is not None:
            pre.ranks[GUESSED_COLUMN] = pc.fill_null(pre.ranks[GUESSED_COLUMN], self.file_rank)
        if self.file_host is not None:
            env.host = pc.fill_null(env.host, self.file_host)

    def _times(self, env: Envelopes, pre: Prefixes, restarts: np.ndarray | None = None
               ) -> tuple[pa.StringArray, pa.StringArray]:
        """(ts, log_ts): the envelope's time, else the prefix time, else the last time seen.

        A prefix without a date takes the envelope's date, else the date of the last time seen.
        """
        def with_date(date: pa.Array) -> pa.Array:
            clock = pc.binary_join_element_wise(date, " ", pre.time, "")
            return pc.if_else(pc.is_null(pre.ms), clock, pc.binary_join_element_wise(clock, ".", pre.ms, ""))

        known = pc.coalesce(pre.date, pc.utf8_slice_codeunits(env.ts, 0, 10))
        log_ts = with_date(known)
        ts = pc.coalesce(env.ts, log_ts, _json_event_times(pre.body))
        dateless = pc.and_(pa.array(pre.prefixed), pc.is_null(known))
        if pc.any(dateless).as_py():
            last = pc.utf8_slice_codeunits(self._carried(ts, restarts), 0, 10)
            log_ts = pc.if_else(dateless, with_date(pc.fill_null(last, self.fallback_date)), log_ts)
            ts = pc.coalesce(env.ts, log_ts, _json_event_times(pre.body))
        filled = pc.coalesce(ts, self._carried(ts, restarts))
        self.last_ts = filled[-1].as_py()
        return filled, log_ts

    def _carried(self, ts: pa.StringArray, restarts: np.ndarray | None = None) -> pa.StringArray:
        """The last non-null time before each row (the state from earlier blocks included), within its
        text where `restarts` flags where texts start."""
        seeded = pa.concat_arrays([pa.array([self.last_ts], pa.string()), ts])
        carried = pc.fill_null_forward(seeded)[:-1]
        if restarts is None:
            return carried
        rows = np.arange(len(ts))
        last_known = np.r_[-1, np.maximum.accumulate(np.where(flags(pc.is_valid(ts)), rows, -1))[:-1]]
        text_start = np.maximum.accumulate(np.where(restarts, rows, 0))
        return pc.if_else(pa.array(last_known >= text_start), carried, pa.scalar(None, pa.string()))

    def _log_records(self, block: Block) -> list[dict]:
        """The foreign `LEVEL file.py:N:` shape is a structured record even when its text is new to us."""
        pre = block.prefixes
        rows = np.nonzero(pre.prefixed & ~flags(pc.is_null(pre.logger)) & ~block.found_mask())[0]
        records = []
        levels, origins = pre.level.take(rows).to_pylist(), pre.logger.take(rows).to_pylist()
        for i, level, origin in zip(rows, levels, origins, strict=True):
            if block.is_error_start(int(i)):
                continue  # the sequential pass decides
            block.kinds[i] = "log_record"
            records.append(log_record(int(i), level, origin))
        return records

    def _events(self, table: str, pieces: list[pa.Table], first_line_no: int) -> pa.Table:
        data = pa.concat_tables(pieces, promote_options="permissive")
        line_no = pc.add(data.column("_row"), first_line_no)
        data = data.drop_columns(["_row"])
        if table == "server_args":
            parsed = [dict(server_args_fields(args or "")) for args in data.column("args").to_pylist()]
            data = pa.Table.from_pylist(parsed).append_column("kind", data.column("kind"))
        return data.append_column("line_no", line_no).append_column(
            "source_id", pa.array(np.full(data.num_rows, self.source_id, dtype=np.int64)))

    # ------------------------------------------------------------ the sequential pass

    def _sequential_pass(self, block: Block) -> list[dict]:
        """Unprefixed lines and traceback starts, in order; prefixed lines in between only tick."""
        pre = block.prefixes
        stateful = ~pre.prefixed
        candidates = np.nonzero(pre.prefixed & ~block.found_mask())[0]
        for i in candidates:
            stateful[i] = block.is_error_start(int(i))
        prefixed_so_far = np.cumsum(pre.prefixed)
        ticked = 0
        errors: list[dict] = []
        restarts = block.restarts if block.restarts is not None else np.zeros(len(stateful), dtype=bool)
        for i in np.nonzero(stateful | restarts)[0]:
            i = int(i)
            errors += self._tick(int(prefixed_so_far[i]) - ticked)
            ticked = int(prefixed_so_far[i])
            if restarts[i]:  # a new text: nothing open in the one before continues into it
                errors += [self._error_row(err) for err in self.tracebacks.close_all()]
                if not stateful[i]:
                    continue
            if pre.prefixed[i]:
                self._prefixed_error_start(block, i)
            else:
                errors += self._unprefixed(block, i)
        errors += self._tick(int(prefixed_so_far[-1]) - ticked)
        errors += [self._error_row(err) for err in self.tracebacks.take_closed()]
        self.last_kind = block.kinds[-1]
        return errors

    def _tick(self, count: int) -> list[dict]:
        done = []
        while count > 0 and self.tracebacks.open:
            done += [self._error_row(err) for err in self.tracebacks.tick()]
            count -= 1
        return done

    def _prefixed_error_start(self, block: Block, i: int) -> None:
        line_no = block.first_line_no + i
        if self.tracebacks.start(block.body_at(i), line_no, lambda: block.context(self.source_id, i)):
            block.kinds[i], block.groups[i] = "error", line_no
            for rest in block.continued.get(i, ()):  # a record that holds its whole traceback (JSONL)
                self.tracebacks.feed(rest, line_no)
            return
        logger = block.prefixes.logger[i].as_py()
        if logger is not None:
            block.kinds[i] = "log_record"
            block.records["notices"].append(log_record(i, block.prefixes.level[i].as_py(), logger))

    def _unprefixed(self, block: Block, i: int) -> list[dict]:
        body = block.body_at(i)
        line_no = block.first_line_no + i
        kind = block.kinds[i]
        if kind is None and body.startswith(JSON_EVENT_START) and (event := json_event_fields(body)) is not None:
            block.kinds[i] = "json_event"
            block.records.setdefault("json_events", []).append({"_row": i, "kind": "json_event", **event})
            return []
        if kind is None or kind in IN_TRACEBACK_KINDS:
            joined = self.tracebacks.feed(body, line_no)
            if joined is not None:
                block.kinds[i], block.groups[i] = "traceback", joined.first_line_no
                return []
        if kind is None and self.tracebacks.start(body, line_no, lambda: block.context(self.source_id, i)):
            block.kinds[i], block.groups[i] = "error", line_no
            return []
        if kind is None:
            raw = _classify_raw(body, block.progress.get(i))
            if raw is not None:
                kind, table, fields = raw
                if table is not None:
                    block.records.setdefault(table, []).append({"_row": i, "kind": kind, **fields})
            elif block.kind_before(i, self.last_kind) == "python_warning" and body[:1].isspace():
                kind = "python_warning_source"
            block.kinds[i] = kind
            return []
        if self.classifier.tables.get(kind) == SYSTEMD_TABLE:
            return [self._error_row(err) for err in self.tracebacks.close_all()]
        return []

    def _error_row(self, err: OpenError) -> dict[str, object]:
        """The `errors` row of a finished traceback or abort."""
        event = dict(err.context)
        event["kind"] = "error"
        event.update({k: None if v is None else str(v) for k, v in error_fields(err).items()})
        event["line_no"] = err.first_line_no
        return event


@dataclass
class Block:
    """One block's columns plus the per-row results the sequential pass fills in."""

    first_line_no: int
    body: pa.StringArray
    prefixes: Prefixes
    ts: pa.StringArray
    pid: pa.Int64Array
    kinds: np.ndarray  # object array of kind names, None where untyped
    progress: dict[int, str | None]
    groups: list[int | None]
    restarts: np.ndarray | None = None  # rows where an independent text starts
    records: dict[str, list[dict]] = field(default_factory=dict)
    continued: dict[int, list[str]] = field(default_factory=dict)  # the further lines of a record's message

    def body_at(self, i: int) -> str:
        return self.body[i].as_py()

    def kind_before(self, i: int, last_kind: str | None) -> str | None:
        """The kind of the line before row `i` in its text (`last_kind`: the previous block's last)."""
        if self.restarts is not None and self.restarts[i]:
            return None
        return self.kinds[i - 1] if i else last_kind

    def found_mask(self) -> np.ndarray:
        return self.kinds.astype(bool)

    def is_error_start(self, i: int) -> bool:
        """Could this unmatched prefixed line open a traceback or abort (the assembler decides)?"""
        return could_start_error(self.body_at(i))

    def context(self, source_id: int, i: int) -> dict[str, object]:
        """The common columns of row `i`, for an error that starts there."""
        pre = self.prefixes
        row = {"source_id": source_id, "line_no": self.first_line_no + i, "kind": None, "ts": self.ts[i].as_py(),
               "pid": self.pid[i].as_py()}
        return row | {name: values[i].as_py() for name, values in pre.ranks.items()}


def _dynamo_own_records(pre: Prefixes, env: Envelopes) -> None:
    """Dynamo's own (Rust) records, whose target is a module path (`dynamo_runtime::pipeline`), are
    structured records whatever their text, as the foreign `LEVEL file.py:N:` shape is (`log_record`)."""
    rows = np.nonzero(flags(pc.match_substring(env.logger, "::")))[0]
    if len(rows):
        at = pa.array(rows)
        pre.logger = patch(pre.logger, rows, env.logger.take(at))
        pre.level = patch(pre.level, rows, env.level.take(at))


def _either(first: pa.Array, then: pa.Array | None) -> pa.Array:
    return first if then is None else pc.coalesce(first, then)


JSON_EVENT_TIME_RE2 = (r'^\{"timestamp": "(?P<date>\d{4}-\d\d-\d\d)T(?P<clock>\d\d:\d\d:\d\d(?:\.\d{1,6})?)"')


def _json_event_times(body: pa.StringArray) -> pa.StringArray:
    """The time of SGLang's JSON event lines (`parsers.json_events`), which have no prefix; null elsewhere."""
    if not pc.any(pc.starts_with(body, '{"timestamp": "')).as_py():
        return pa.nulls(len(body), pa.string())
    found = pc.extract_regex(body, JSON_EVENT_TIME_RE2)
    stamp = pc.binary_join_element_wise(found.field("date"), " ", found.field("clock"), "")
    return pc.if_else(found.is_valid(), stamp, pa.scalar(None, pa.string()))


def _first_lines(message: pa.StringArray, records: np.ndarray) -> tuple[pa.StringArray, dict[int, list[str]]]:
    """The messages of the `records` rows cut at their first newline, and the lines after it by row (a JSON
    record holds a whole traceback in its one line)."""
    if not has_byte(message, 0x0A):
        return message, {}
    rows = np.nonzero(flags(pc.match_substring(message, "\n")) & records)[0]
    parts = [message[int(i)].as_py().split("\n") for i in rows]
    first = pa.array([p[0] for p in parts], pa.string())
    return patch(message, rows, first), {int(i): p[1:] for i, p in zip(rows, parts, strict=True)}


def log_record(row: int, level: str | None, origin: str) -> dict[str, object]:
    """The notice row of a foreign `LEVEL file.py:N:` line: a structured record even when its text is new."""
    return {"_row": row, "kind": "log_record", "topic": "log_record", "level": level, "origin": origin}


JOURNAL_MARKER_LINE = re.compile(JOURNAL_MARKER)
JOURNAL_BLOB_LINE = re.compile(JOURNAL_BLOB)


def _without_colour(message: pa.StringArray) -> pa.StringArray:
    """The text of lines a terminal would colour (uvicorn's `INFO:`, coloured loggers) without escapes."""
    if not has_byte(message, 0x1B):
        return message
    rows = np.nonzero(flags(pc.match_substring(message, "\x1b[")))[0]
    if not len(rows):
        return message
    plain = pc.replace_substring_regex(message.take(pa.array(rows, pa.int64())), ANSI_ESCAPE, "")
    return patch(message, rows, plain)


def _carriage_returns(message: pa.StringArray) -> tuple[pa.StringArray, dict[int, str | None]]:
    """The text to classify of `\\r`-joined progress-bar lines, and their progress descriptions."""
    message = _without_colour(message)
    if not has_byte(message, 0x0D):
        return message, {}
    rows = np.nonzero(flags(pc.match_substring(message, "\r")))[0]
    if not len(rows):
        return message, {}
    split = [split_carriage_returns(message[int(i)].as_py()) for i in rows]
    texts = pa.array([text for text, _ in split], pa.string())
    return patch(message, rows, texts), {int(i): desc for i, (_, desc) in zip(rows, split, strict=True)}


def _classify_raw(body: str, progress: str | None) -> tuple[str, str | None, dict[str, object]] | None:
    """Shapes that only make sense without an SGLang prefix (`sglang_formats.RAW_KINDS`): bars, journal
    markers, blobs."""
    if not body.strip():
        return "blank", None, {}
    if progress is None:
        # A bar on a line of its own: a capture that turned tqdm's `\r` into newlines.
        progress = bar_description(body)
    if progress is not None:
        return _raw_notice("progress", progress)
    if body.startswith("-- ") and JOURNAL_MARKER_LINE.match(body):
        return _raw_notice("journal_marker", body.strip("- "))
    if body.startswith("[") and body.endswith("blob data]"):
        blob = JOURNAL_BLOB_LINE.match(body)
        if blob:
            return _raw_notice("journal_blob", blob["size"])
    return None


def _raw_notice(kind: str, detail: str) -> tuple[str, str, dict[str, object]]:
    return kind, "notices", {"topic": RAW_KINDS[kind], "detail": detail}


@lru_cache(maxsize=64)  # each rank of a launch prints the same dump; parsing one takes milliseconds
def server_args_fields(args_text: str) -> dict[str, object]:
    """Type the dump with the repr-aware splitter; keep the count so truncated dumps are visible."""
    parsed = parse_server_args_repr(args_text)
    complete = args_text.rstrip().endswith("}" if args_text.startswith("{") else ")")
    return {"args": json.dumps(parsed, default=repr), "n_args": str(len(parsed)), "truncated": str(not complete)}
