"""The public Python API: everything the CLI does, callable from a notebook.

    >>> import logmine.api as lm
    >>> lm.ingest(["journal.txt"], db="logmine.duckdb")
    >>> with lm.open_db("logmine.duckdb") as con:
    ...     lm.query(con, "runs")          # a pandas DataFrame
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pandas as pd

from . import derive, named_queries, transcripts
from .ingest import IngestReport, Progress, ingest_logs
from .inputs import classify_inputs
from .render import render  # noqa: F401 - part of the public API
from .sources import InputError
from .store import DEFAULT_DB, connect, run

if TYPE_CHECKING:
    import sqlalchemy

# DuckDB keeps pages of the tables being written in memory; this bounds it (it spills to disk beyond).
INGEST_MEMORY = "128MB"


@dataclass
class Report:
    """What one `ingest` did: the logs' line counts and the transcripts' record counts."""

    logs: IngestReport
    transcripts: list[transcripts.TranscriptReport] = field(default_factory=list)

    def as_dict(self) -> dict:
        summary = self.logs.as_dict()
        summary["transcripts"] = [t.as_dict() for t in self.transcripts]
        return summary


def ingest(paths: list[str], db: str | Path = DEFAULT_DB, envelope: str | None = None, tz: str | None = None,
           progress: Progress | None = None) -> Report:
    """Parse the inputs into typed events in the DuckDB file `db` (created if missing).

    Logs and transcripts are stored, and runs, configs, diffs and links recomputed, in one
    transaction: if anything fails or the process is interrupted, the tables are as they were before.
    """
    utc_offset = parse_offset(tz) if tz else None
    log_paths, transcript_paths = classify_inputs(paths)
    con = connect(db)
    try:
        run(con, f"SET memory_limit = '{INGEST_MEMORY}'")
        run(con, "SET threads = 1")  # the parse worker has the other core
        transcripts.ensure_tables(con)
        run(con, "BEGIN TRANSACTION")
        try:
            report = Report(ingest_logs(con, log_paths, envelope=envelope, progress=progress))
            run(con, "RESET threads")  # the worker is done: the queries below may use every core
            for path, fmt in transcript_paths:
                report.transcripts.append(transcripts.ingest_transcript(con, path, fmt))
            derive.rebuild(con, utc_offset=utc_offset)
            run(con, "COMMIT")
        except BaseException:
            run(con, "ROLLBACK")
            raise
    finally:
        con.close()
    report.logs.db = str(db)
    return report


def parse_offset(tz: str) -> timedelta:
    """`+01:00`, `-0500`, `UTC` -> the journal's offset from UTC."""
    text = tz.strip().upper().removeprefix("UTC") or "+00:00"
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-").replace(":", "")
    if not digits.isdigit() or len(digits) not in (2, 4):
        raise InputError(f"--tz {tz!r}: expected an offset such as +01:00")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    return sign * timedelta(hours=hours, minutes=minutes)


@contextmanager
def open_db(db: str | Path = DEFAULT_DB) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to a logmine database."""
    con = connect(db, read_only=True)
    try:
        yield con
    finally:
        con.close()


def engine(db: str | Path = DEFAULT_DB) -> sqlalchemy.engine.Engine:
    """A read-only SQLAlchemy engine on a logmine database, for `pandas.read_sql` and notebook tools."""
    import sqlalchemy  # here, not at the top: it would add a quarter second to every command's start

    if not Path(db).exists():
        raise FileNotFoundError(f"{db}: no such database (run `logmine ingest` first)")
    return sqlalchemy.create_engine(f"duckdb:///{Path(db).resolve()}", connect_args={"read_only": True})


def query(con: duckdb.DuckDBPyConnection, name: str, **params: object) -> pd.DataFrame:
    """Run a named query from `queries/` and return its rows."""
    return named_queries.run(con, name, **params)


def sql(con: duckdb.DuckDBPyConnection, statement: str, **params: object) -> pd.DataFrame:
    """Any SQL statement over the logmine tables; `$name` parameters are bound from `params`."""
    return named_queries.run_sql(con, statement, **params)


def report(con: duckdb.DuckDBPyConnection, fmt: str = "html", runs: list[int] | None = None,
           source: str | None = None, session: str | None = None) -> str:
    """The postmortem report as one self-contained HTML page (`fmt="html"`) or Markdown text."""
    from .report import render_report  # here, not at the top: it loads matplotlib and Jinja2

    return render_report(con, fmt=fmt, runs=runs, source=source, session=session)


def runs(con: duckdb.DuckDBPyConnection, source: str | None = None) -> pd.DataFrame:
    """The `runs` query: one row per server run."""
    return query(con, "runs", source=source)


def diff(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> pd.DataFrame:
    """Every server arg that differs between two runs, named `ORDINAL` or `SOURCE:ORDINAL`."""
    configs = [run_config(con, ref) for ref in (run_a, run_b)]
    changes = derive.config_changes(configs[0], configs[1])
    rows = [{"key": k, run_a: a, run_b: b} for k, (a, b) in changes.items()]
    return pd.DataFrame(rows, columns=["key", run_a, run_b], dtype=object)  # object: keep each value's type


def run_config(con: duckdb.DuckDBPyConnection, ref: str) -> dict:
    """The typed server args of a run named `ORDINAL` (first source) or `SOURCE:ORDINAL`."""
    source, _, ordinal = ref.rpartition(":")
    if not ordinal.isdigit():
        raise LookupError(f"run {ref!r}: expected ORDINAL or SOURCE:ORDINAL")
    found = named_queries.run_sql(con, """
        SELECT c.args FROM runs AS r JOIN sources AS s USING (source_id) JOIN configs AS c USING (config_id)
        WHERE r.ordinal = $ordinal AND ($source = '' OR s.display = $source OR s.path = $source
                                        OR s.display LIKE '%' || $source)
        ORDER BY r.source_id LIMIT 1""", ordinal=int(ordinal), source=source)
    if found.empty:
        raise LookupError(f"run {ref!r}: no such run with a server_args dump")
    return found.iloc[0, 0]


def unparsed(con: duckdb.DuckDBPyConnection, limit: int = 50) -> pd.DataFrame:
    """Untyped lines grouped by template, most frequent first."""
    return named_queries.run(con, "unparsed", limit=limit)


def summary_text(summary: dict) -> str:
    """The human summary printed after an ingest."""
    out = []
    for s in summary["sources"]:
        out.append(f"{s['path']}: {s['status']}, format {s['format']}, {s['lines_read']:,} lines read, "
                   f"{s['lines_typed']:,} typed, {s['lines_untyped']:,} untyped")
    out.append(f"total: {summary['lines_read']:,} lines read, {summary['lines_typed']:,} typed, "
               f"{summary['lines_untyped']:,} kept untyped (see `logmine unparsed`) -> {summary['db']}")
    for t in summary.get("transcripts", []):
        out.append(f"{t['path']}: {t['status']}, {t['format']}, {t['sessions']} sessions, {t['messages']} messages, "
                   f"{t['tool_calls']} tool calls, {t['unknown_records']} unknown records kept")
        out.extend(f"  skipped malformed input: {p}" for p in t["problems"][:20])
    kinds = summary["by_kind"]
    if kinds:
        width = max(len(k) for k in kinds)
        out.append("lines by event kind:")
        out.extend(f"  {kind:<{width}}  {count:>10,}" for kind, count in kinds.items())
    return "\n".join(out)


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[Progress | None]:
    """A rich progress bar on a terminal (stderr); nothing when output is piped."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, TimeRemainingColumn
    from rich.progress import Progress as RichProgress

    with RichProgress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                      TimeRemainingColumn(), transient=True) as bar:
        tasks: dict[str, int] = {}

        def update(name: str, done: int, total: int | None) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total)
            bar.update(tasks[name], completed=done)

        yield update
