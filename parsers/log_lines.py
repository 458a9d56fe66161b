"""Turn decoded physical lines of one SGLang log into column batches: every line, plus typed events.

The output is storage-agnostic: `ColumnBatch` maps a table name to its columns (lists of equal
length). Values are left as text where the database can cast them in bulk.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

from .envelopes import READERS, TimeContext
from .events import COMMON_COLUMNS, TABLES_BY_NAME
from .launch_config import parse_server_args_repr
from .sglang import (
    BLOB,
    JOURNAL_MARKER,
    Classified,
    Classifier,
    OpenError,
    TracebackAssembler,
    error_fields,
    parse_prefix,
    split_carriage_returns,
)

LINE_COLUMNS: dict[str, str] = {
    "source_id": "INTEGER", "line_no": "BIGINT", "ts": "TIMESTAMP", "log_ts": "TIMESTAMP",
    "host": "VARCHAR", "ident": "VARCHAR", "pid": "INTEGER", "unit": "VARCHAR",
    "dp": "SMALLINT", "pp": "SMALLINT", "attn_cp": "SMALLINT", "moe_dp": "SMALLINT", "tp": "SMALLINT",
    "ep": "SMALLINT", "level": "VARCHAR", "logger": "VARCHAR", "prefixed": "BOOLEAN", "kind": "VARCHAR",
    "group_line_no": "BIGINT", "message": "VARCHAR", "bad_utf8": "BOOLEAN",
}
# Columns the parser fills with Python ints/bools; every other value is text cast by the database.
NATIVE_COLUMNS = frozenset({"source_id", "line_no", "pid", "dp", "pp", "attn_cp", "moe_dp", "tp", "ep",
                            "group_line_no", "prefixed", "bad_utf8"})
# Kinds whose text is itself a line of a traceback, so it joins the open traceback too.
IN_TRACEBACK_KINDS = frozenset({"host_memory_short", "not_enough_memory"})
SYSTEMD_TABLE = "systemd"


def table_columns(table: str) -> dict[str, str]:
    """Column names and DuckDB types of `lines` or of an event table."""
    if table == "lines":
        return LINE_COLUMNS
    return {**COMMON_COLUMNS, **TABLES_BY_NAME[table].columns}


class ColumnBatch:
    """Rows for several tables, as lists of dicts (turned into Arrow in one call per table).

    Event rows carry only their own fields plus `line_no`; the store copies the common columns
    (time, pid, ranks) from the line each event was read from.
    """

    def __init__(self) -> None:
        self.rows: dict[str, list[dict]] = defaultdict(list)

    def add(self, table: str, row: dict[str, object]) -> None:
        self.rows[table].append(row)

    def __len__(self) -> int:
        return len(self.rows["lines"])


@dataclass
class LineParser:
    """Stateful parser for one source; feed lines in order with `parse`."""

    source_id: int
    envelope: str
    time: TimeContext
    fallback_date: str
    classifier: Classifier = field(default_factory=Classifier)
    tracebacks: TracebackAssembler = field(default_factory=TracebackAssembler)
    last_ts: str | None = None
    last_date: str | None = None
    last_kind: str | None = None

    def __post_init__(self) -> None:
        self.read_envelope = READERS[self.envelope]

    def parse(self, line_no: int, text: str, bad_utf8: bool, batch: ColumnBatch) -> None:
        env = self.read_envelope(text, self.time)
        message = env.message
        row: dict[str, object] = {
            "source_id": self.source_id, "line_no": line_no, "host": env.host, "ident": env.ident,
            "pid": env.pid, "unit": env.unit, "message": message, "bad_utf8": bad_utf8,
        }
        body_source = message
        progress = None
        if "\r" in message:
            body_source, progress = split_carriage_returns(message)
        prefix, body = parse_prefix(body_source)
        log_ts = None
        if prefix is not None and prefix.time:
            date = prefix.date or (env.ts or "")[:10] or self.last_date or self.fallback_date
            log_ts = f"{date} {prefix.time}" + (f".{prefix.ms}" if prefix.ms else "")
            row.update(prefix.ranks)
            row["level"], row["logger"] = prefix.level, prefix.logger
        elif prefix is not None:
            row["level"] = prefix.level
        ts = env.ts or log_ts or self.last_ts
        if ts:
            self.last_ts = ts
            self.last_date = ts[:10]
        row["ts"], row["log_ts"] = ts, log_ts
        row["prefixed"] = prefix is not None and prefix.time is not None

        if row["prefixed"]:
            for err in self.tracebacks.tick():
                self._emit_error(err, batch)
            self._classify_prefixed(body, row, batch)
        else:
            self._classify_unprefixed(body, progress, row, batch)
        self.last_kind = row.get("kind")
        batch.add("lines", row)

    def finish(self, batch: ColumnBatch) -> None:
        for err in self.tracebacks.close_all():
            self._emit_error(err, batch)

    # ------------------------------------------------------------ classification

    def _classify_prefixed(self, body: str, row: dict, batch: ColumnBatch) -> None:
        found = self.classifier.classify(body)
        if found is None and self.tracebacks.start(body, row["line_no"], self._context(row)):
            row["kind"], row["group_line_no"] = "error", row["line_no"]
            return
        if found is None and row.get("logger"):
            # The foreign `LEVEL file.py:N:` shape is a structured record even when its text is new to us.
            found = Classified("log_record", "notices", {"topic": "log_record", "level": row["level"],
                                                         "origin": row["logger"]})
        self._store(found, row, batch)

    def _classify_unprefixed(self, body: str, progress: str | None, row: dict, batch: ColumnBatch) -> None:
        found = self.classifier.classify(body) if body else None
        if found is None or found.kind in IN_TRACEBACK_KINDS:
            joined = self.tracebacks.feed(body, row["line_no"])
            if joined is not None:
                row["group_line_no"] = joined.first_line_no
                row["kind"] = "traceback"
                self._store(found, row, batch)
                return
        if found is None and self.tracebacks.start(body, row["line_no"], self._context(row)):
            row["kind"], row["group_line_no"] = "error", row["line_no"]
            return
        if found is None:
            found = self._classify_raw(body, progress)
        if found is None and self.last_kind == "python_warning" and body[:1].isspace():
            found = Classified("python_warning_source", None, {})
        if found is not None and found.table == SYSTEMD_TABLE:
            for err in self.tracebacks.close_all():
                self._emit_error(err, batch)
        self._store(found, row, batch)

    @staticmethod
    def _classify_raw(body: str, progress: str | None) -> Classified | None:
        """Shapes that only make sense without an SGLang prefix: bars, journal markers, blobs."""
        if not body.strip():
            return Classified("blank", None, {})
        if progress is not None:
            return Classified("progress", "notices", {"topic": "progress", "detail": progress})
        if body.startswith("-- ") and JOURNAL_MARKER.match(body):
            return Classified("journal_marker", "notices", {"topic": "journal", "detail": body.strip("- ")})
        if body.startswith("[") and body.endswith("blob data]"):
            blob = BLOB.match(body)
            if blob:
                return Classified("journal_blob", "notices", {"topic": "journal", "detail": blob["size"]})
        return None

    def _store(self, found: Classified | None, row: dict, batch: ColumnBatch) -> None:
        if found is None:
            return
        if row.get("kind") is None:
            row["kind"] = found.kind
        if found.table is None:
            return
        fields = found.fields
        if found.kind == "server_args":
            fields = server_args_fields(str(fields.get("args", "")))
        fields["source_id"], fields["line_no"], fields["kind"] = row["source_id"], row["line_no"], found.kind
        batch.add(found.table, fields)

    @staticmethod
    def _context(row: dict) -> dict[str, object]:
        return {name: row.get(name) for name in COMMON_COLUMNS}

    def _emit_error(self, err: OpenError, batch: ColumnBatch) -> None:
        event = dict(err.context)
        event["kind"] = "error"
        event.update({k: None if v is None else str(v) for k, v in error_fields(err).items()})
        event["line_no"] = err.first_line_no
        batch.add("errors", event)


def server_args_fields(args_text: str) -> dict[str, object]:
    """Type the dump with the repr-aware splitter; keep the count so truncated dumps are visible."""
    parsed = parse_server_args_repr(args_text)
    complete = args_text.rstrip().endswith(")")
    return {"args": json.dumps(parsed, default=repr), "n_args": str(len(parsed)), "truncated": str(not complete)}
