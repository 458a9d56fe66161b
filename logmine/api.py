"""The public Python API: everything the CLI does, callable from a notebook.

    >>> import logmine.api as lm
    >>> lm.ingest(["journal.txt"], db="logmine.duckdb")
    >>> with lm.open_db("logmine.duckdb") as con:
    ...     lm.query(con, "runs")          # a pandas DataFrame
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from . import named_queries
from .render import (
    RowChunks,
    Rows,
    render,  # noqa: F401 - part of the public API
    shortest_unique_suffixes,
    visible,
)
from .store import DEFAULT_DB, OFFLINE, connect

# The ingest machinery, pandas and pyarrow are imported by the functions that use them: a command that
# only reads (`logmine query`) starts in a fifth of the time.
if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    import sqlalchemy

    from . import transcripts
    from .ingest import IngestReport, Progress
    from .sources import SortedInputs

# DuckDB keeps pages of the tables being written in memory; this bounds it (it spills to disk beyond).
INGEST_MEMORY = "128MB"
FINISH_MEMORY = "2GB"


def __getattr__(name: str) -> object:
    """`lm.InputError` (bad input), imported only when asked for: its module loads pyarrow."""
    if name == "InputError":
        from .sources import InputError

        return InputError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
           progress: Progress | None = None, redact: bool = False, jobs: int | None = None) -> Report:
    """Parse the inputs into typed events in the DuckDB file `db` (created if missing).

    Logs and transcripts are stored, and runs, configs, diffs and links recomputed, in one
    transaction: if the process is interrupted, the tables are as they were before. An input that
    cannot be read costs only itself: its rows are not kept, the others are, and the report's
    `failed` names it with its reason.

    `redact` replaces secrets before they are stored (`logmine.redact`), in this ingest and, kept as a
    setting of the database, in every later one. A database the ingest creates is readable by its owner
    only (and so are its write-ahead log and temporary files).

    `jobs` processes share the work (default: one per core): 1 is this process alone; 2 adds a parse
    worker beside it for each input of 32 MB or more, and starts the next input's parse while this one's
    rows are stored; 3 or more parse several new log files at once, each in a process of its own
    (`logmine.parallel_ingest`), and a new journal of 256 MB or more by byte ranges (`logmine.byte_ranges`).
    The tables are the same whatever `jobs`.
    """
    from . import interrupts
    from .sources import classify_inputs

    utc_offset = parse_offset(tz) if tz else None
    found = classify_inputs(paths)
    interrupts.check()  # before the database file is made
    created = str(db) != ":memory:" and not Path(db).exists()
    umask = os.umask(0o077)  # the database, its write-ahead log and temporary files hold what the logs hold
    try:
        con = connect(db)
        try:
            if found.logs and not created:
                from .source_identity import start_prefix_checks

                start_prefix_checks(con, found.logs)  # on another core, while the parser loads
            report = _ingest_in_transaction(con, found, envelope, utc_offset, progress, redact,
                                            jobs or os.cpu_count() or 1)
        except BaseException:
            con.close()
            if created:  # as it was: no database
                for leftover in (Path(db), Path(f"{db}.wal")):
                    leftover.unlink(missing_ok=True)
            raise
        finally:
            con.close()
    finally:
        os.umask(umask)
    report.logs.db = str(db)
    return report


def _ingest_in_transaction(con: duckdb.DuckDBPyConnection, found: SortedInputs, envelope: str | None,
                           utc_offset: timedelta | None, progress: Progress | None, redact: bool,
                           jobs: int = 1) -> Report:
    import duckdb

    from . import derive, interrupts, knowledge, transcripts
    from .ingest import failure_line, ingest_logs
    from .parallel_ingest import ingest_logs_parallel, worth_a_pool
    from .redact import Redactor
    from .store import execute, save_setting, setting

    execute(con, f"SET memory_limit = '{INGEST_MEMORY}'")
    execute(con, "SET threads = 1")  # the parse worker has the other core
    execute(con, "BEGIN TRANSACTION")
    try:
        redact = redact or setting(con, "redact") == "on"
        if redact:
            save_setting(con, "redact", "on")
        transcripts.ensure_tables(con)
        if jobs > 2 and worth_a_pool(found.logs):  # on two cores the worker beside this process does better
            logs = ingest_logs_parallel(con, found.logs, jobs, envelope=envelope, progress=progress, redact=redact)
        else:
            # One job: this process alone, without the parse worker it otherwise starts for a large input.
            logs = ingest_logs(con, found.logs, envelope=envelope, progress=progress, redact=redact, worker=jobs > 1)
        report = Report(logs)
        execute(con, "RESET threads")  # the worker is done: the queries below may use every core
        # Runs, templates and knowledge work on whole values: one 40 MB log line or 8 MB tool input needs more
        # than the appends' bound, and failing there would lose every input of the ingest.
        execute(con, f"SET memory_limit = '{FINISH_MEMORY}'")
        report.logs.failed[:0] = found.skipped
        report.logs.left = found.left
        redactor = Redactor() if redact and found.transcripts else None
        for path, fmt in found.transcripts:
            interrupts.check()
            try:
                report.transcripts.append(transcripts.ingest_transcript(con, path, fmt, redactor))
            except duckdb.Error:
                raise
            except Exception as exc:  # this transcript is bad: it costs only itself
                report.logs.failed.append(failure_line(str(path), exc))
        interrupts.check()
        derive.rebuild(con, utc_offset=utc_offset)
        untimed = dict(execute(con, "SELECT source_id, sum(untimed_markers) FROM runs GROUP BY ALL"))
        shapes = dict(execute(con, "SELECT source_id, shape FROM new_shape")) if derive.has_table(con, "new_shape") \
            else {}
        for source in report.logs.sources:
            source.untimed_markers = int(untimed.get(source.source_id) or 0)
            source.new_shape = shapes.get(source.source_id)
        interrupts.check()
        knowledge.rebuild(con)  # facts, claims, decisions; spaCy only when a transcript has text
        interrupts.check()  # the last moment at which stopping leaves the database as it was
    except BaseException:
        execute(con, "ROLLBACK")
        raise
    execute(con, "COMMIT")
    return report


def parse_offset(tz: str) -> timedelta:
    """`+01:00`, `-0500`, `UTC` -> the journal's offset from UTC."""
    text = tz.strip().upper().removeprefix("UTC") or "+00:00"
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-").replace(":", "")
    if not digits.isdigit() or len(digits) not in (2, 4):
        from .sources import InputError

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


@contextmanager
def open_data(folder: str | Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to a folder written by `export_parquet`: the same tables and views as the database it
    came from (views over its Parquet files), so every named query runs on it unchanged."""
    from .partitioned import open_folder

    con = open_folder(folder)
    try:
        yield con
    finally:
        con.close()


def export_parquet(con: duckdb.DuckDBPyConnection, out: str | Path) -> dict[str, int]:
    """Write every table as Parquet under `out`, partitioned by host and day where the rows have them
    (layout in `logmine.partitioned`); returns the rows written per table."""
    from .partitioned import export

    return export(con, out)


def engine(db: str | Path = DEFAULT_DB) -> sqlalchemy.engine.Engine:
    """A read-only SQLAlchemy engine on a logmine database, for `pandas.read_sql` and notebook tools
    (jupysql's `%sql engine`); it holds the file only while a query runs."""
    import sqlalchemy  # here, not at the top: it would add a quarter second to every command's start

    if not Path(db).exists():
        raise FileNotFoundError(f"{db}: no such database (run `logmine ingest` first)")
    # No pool: each query opens the file and closes it after, so that `logmine ingest` (which needs the file
    # alone) can run between a notebook's cells.
    return sqlalchemy.create_engine(f"duckdb:///{Path(db).resolve()}",
                                    connect_args={"read_only": True, "config": dict(OFFLINE)},
                                    poolclass=sqlalchemy.pool.NullPool)


def query(con: duckdb.DuckDBPyConnection, name: str, **params: object) -> pd.DataFrame:
    """Run a named query from `queries/` and return its rows.

    `source`, `run` and `session` must name ones that exist (LookupError says which do); a source may
    be given by its path, its display name or any suffix of it that names one source.
    """
    return named_queries.execute(con, name, **check_selection(con, **_taken(name, params)))


def _taken(name: str, params: dict[str, object]) -> dict[str, object]:
    """`params`, refused (LookupError) when one is given that the query does not read: `runs` filtered by a
    session would silently give every run."""
    known = named_queries.parameters(name)
    unread = [p for p, v in params.items() if v is not None and p not in known]
    if unread:
        taken = ", ".join(known) or "none"
        raise LookupError(f"query {name} has no {' or '.join(unread)} parameter (its parameters: {taken})")
    return params


def query_rows(con: duckdb.DuckDBPyConnection, name: str, *, at_most: int | None = None, **params: object) -> Rows:
    """`query` as plain Python rows (no pandas): what the CLI prints. With `at_most`, only the first rows
    of a longer result are fetched, and `total` says how many it has."""
    return named_queries.fetch(con, named_queries.text(name), at_most=at_most,
                               **check_selection(con, **_taken(name, params)))


def query_chunks(con: duckdb.DuckDBPyConnection, name: str, **params: object) -> RowChunks:
    """`query_rows` a few thousand rows at a time, fetched as they are read (so while `con` is open): for
    writing a large result without holding it whole."""
    return named_queries.fetch_chunks(con, named_queries.text(name), **check_selection(con, **_taken(name, params)))


def sql(con: duckdb.DuckDBPyConnection, statement: str, **params: object) -> pd.DataFrame:
    """Any SQL statement over the logmine tables; `$name` parameters are bound from `params`."""
    return named_queries.execute_sql(con, statement, **params)


def sql_rows(con: duckdb.DuckDBPyConnection, statement: str, *, at_most: int | None = None,
             **params: object) -> Rows:
    """`sql` as plain Python rows (no pandas); `at_most` as for `query_rows`."""
    return named_queries.fetch(con, statement, at_most=at_most, **params)


def sql_chunks(con: duckdb.DuckDBPyConnection, statement: str, **params: object) -> RowChunks:
    """`sql_rows` a few thousand rows at a time, as `query_chunks`."""
    return named_queries.fetch_chunks(con, statement, **params)


def check_selection(con: duckdb.DuckDBPyConnection, **params: object) -> dict[str, object]:
    """`params` with `source` resolved to its display name; LookupError naming what exists when the
    source, run or session asked for is not in the database."""
    source, run_, session = params.get("source"), params.get("run"), params.get("session")
    if source is not None:
        params["source"] = resolve_source(con, str(source))
    if run_ is not None:
        found = named_queries.fetch(con, """
            SELECT s.display, list(r.ordinal ORDER BY r.ordinal) FROM runs AS r JOIN sources AS s USING (source_id)
            WHERE $source IS NULL OR s.display = $source GROUP BY ALL ORDER BY min(r.source_id)""",
            source=params.get("source")).rows
        if not any(run_ in ordinals for _, ordinals in found):
            names = source_names(con)  # as among all sources: `journal.txt` alone could be any of them
            where = f" in {names[params['source']]}" if source is not None else ""
            known = [f"{names[display]}: {_spans(ordinals)}" for display, ordinals in found]
            raise LookupError(f"no run {run_}{where}; the runs are {_listing(known, separator='; ')}")
    if session is not None:
        params["session"] = resolve_session(con, str(session))
    return params


def resolve_session(con: duckdb.DuckDBPyConnection, session: str) -> str:
    """The session id named whole or by a unique start (as tables and reports shorten it, `ses_31e9…`)."""
    ids = [r[0] for r in named_queries.fetch(con, "SELECT id FROM sessions ORDER BY id").rows]
    start = session.removesuffix("…")
    matches = [i for i in ids if i == session] or [i for i in ids if start and i.startswith(start)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise LookupError(f"session {session!r} begins several sessions: {_listing(matches)}")
    raise LookupError(f"no session {session!r}; the sessions are {_listing(ids)}")


def resolve_source(con: duckdb.DuckDBPyConnection, source: str) -> str:
    """The display name of the source named by its path, display name, or a unique suffix: whole parts of
    its path first (`kimi-k25/journal.txt`), else any end of it (`qwen3_32b.log`)."""
    known = named_queries.fetch(con, "SELECT display, path FROM sources WHERE kind = 'log' ORDER BY source_id").rows
    exact = [d for d, p in known if source in (d, p)]
    matches = exact or [d for d, p in known if d.endswith("/" + source) or p.endswith("/" + source)] \
        or [d for d, p in known if p.endswith(source)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise LookupError(f"source {source!r} names several sources: {_listing(matches)}")
    raise LookupError(f"no source {source!r}; the sources are "
                      f"{_listing(shortest_unique_suffixes([d for d, _ in known]))}")


def _spans(numbers: list[int]) -> str:
    """[1, 2, 3, 5] -> '1-3, 5'."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _listing(names: list[str], limit: int = 8, separator: str = ", ") -> str:
    if not names:
        return "none"
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return separator.join(names[:limit]) + more


def tables(con: duckdb.DuckDBPyConnection) -> Rows:
    """Every table and view of the database with its row count and columns."""
    listing = named_queries.fetch(con, named_queries.text("tables"))
    counted = []
    for name, kind, columns in listing.rows:
        (n,) = con.execute(f'SELECT count(*) FROM "{name}"').fetchone()
        counted.append((name, kind, n, columns))
    return Rows(["name", "kind", "rows", "columns"], counted)


def report(con: duckdb.DuckDBPyConnection, fmt: str = "html", runs: list[int] | None = None,
           source: str | None = None, session: str | None = None) -> str:
    """The postmortem report as one self-contained HTML page (`fmt="html"`) or Markdown text."""
    from .report import render_report  # here, not at the top: it loads matplotlib and Jinja2

    # The source, runs and session must exist, named as for any query (a source by a unique path suffix);
    # run ordinals without a source are refused where several sources have runs, as `diff` refuses them.
    selected = check_selection(con, source=source, session=session)
    if runs and selected["source"] is None:
        selected["source"] = sole_source_with_runs(con, str(runs[0]), hint="give --source too")
    for run_ in runs or []:
        check_selection(con, source=selected["source"], run=run_)
    return render_report(con, fmt=fmt, runs=runs, source=selected["source"], session=session)


def runs(con: duckdb.DuckDBPyConnection, source: str | None = None) -> pd.DataFrame:
    """The `runs` query: one row per server run."""
    return query(con, "runs", source=source)


def diff(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> pd.DataFrame:
    """Every server arg that differs between two runs, named `SOURCE:ORDINAL` (or `ORDINAL` when one
    source has runs)."""
    from . import runs

    configs = [run_config(con, ref) for ref in (run_a, run_b)]
    changes = runs.config_changes(configs[0], configs[1])
    rows = [{"key": k, run_a: a, run_b: b} for k, (a, b) in changes.items()]
    import pandas as pd

    return pd.DataFrame(rows, columns=["key", run_a, run_b], dtype=object)  # object: keep each value's type


def run_config(con: duckdb.DuckDBPyConnection, ref: str) -> dict:
    """The typed server args of a run named `SOURCE:ORDINAL`, or `ORDINAL` when one source has runs."""
    source, ordinal = resolve_run(con, ref)
    found = named_queries.execute_sql(con, """
        SELECT c.args FROM runs AS r JOIN sources AS s USING (source_id) JOIN configs AS c USING (config_id)
        WHERE r.ordinal = $ordinal AND s.display = $source""", ordinal=ordinal, source=source)
    if found.empty:
        raise LookupError(f"run {ref!r}: no server_args dump")
    return found.iloc[0, 0]


def resolve_run(con: duckdb.DuckDBPyConnection, ref: str) -> tuple[str, int]:
    """The display name of the source and the ordinal of the run `ref` names; LookupError when it names
    none, or could name a run of several sources (a picked one would compare the wrong server)."""
    source, _, ordinal = ref.rpartition(":")
    if not ordinal.isdigit():
        raise LookupError(f"run {ref!r}: expected ORDINAL or SOURCE:ORDINAL")
    checked = check_selection(con, source=source or sole_source_with_runs(con, ref), run=int(ordinal))
    return checked["source"], int(ordinal)


# The ends a postmortem looks for first: the server died, after becoming ready or before.
BAD_ENDS = ("crashed", "failed")


def select_run(con: duckdb.DuckDBPyConnection, run: str | int | None = None,
               source: str | None = None) -> tuple[str, int]:
    """The run a postmortem looks at, as (source display name, ordinal): the one `run` names (ORDINAL, of
    `source` when given or else of the only source with runs, or SOURCE:ORDINAL); without `run`, the last
    to start of those that crashed or failed (of `source` when given), else the last to start. LookupError
    when that names no run or several (the same ordinal in several sources)."""
    if source is not None:
        source = resolve_source(con, source)
    if run is None:
        return _last_run(con, source)
    ref = str(run)
    named, ordinal = resolve_run(con, ref if source is None or ":" in ref else f"{source}:{ref}")
    if source is not None and named != source:
        names = source_names(con)
        raise LookupError(f"run {ref!r} is of {names[named]}, not of the source asked for, {names[source]}")
    return named, ordinal


def _last_run(con: duckdb.DuckDBPyConnection, source: str | None) -> tuple[str, int]:
    """The last run to start that ended badly, else the last to start (ties: the later source's)."""
    found = named_queries.fetch(con, """
        SELECT s.display, r.ordinal FROM runs AS r JOIN sources AS s USING (source_id)
        WHERE $source IS NULL OR s.display = $source
        ORDER BY list_contains($bad_ends, r.end_reason) DESC, r.started_at DESC NULLS LAST, r.source_id DESC,
                 r.ordinal DESC
        LIMIT 1""", source=source, bad_ends=list(BAD_ENDS)).rows
    if not found:
        raise LookupError(f"no server runs in {source_names(con)[source]}" if source else
                          "no server runs in the database (ingest a server log first)")
    display, ordinal = found[0]
    return display, ordinal


def sole_source_with_runs(con: duckdb.DuckDBPyConnection, ref: str, hint: str | None = None) -> str | None:
    """The source a bare ORDINAL means: the only one with runs (None when none has any). Where several have
    runs, LookupError says which and how to name one (`hint`, else SOURCE:ORDINAL)."""
    with_runs = [display for (display,) in named_queries.fetch(con, """
        SELECT s.display FROM runs AS r JOIN sources AS s USING (source_id)
        GROUP BY s.display ORDER BY min(r.source_id)""").rows]
    if len(with_runs) > 1:
        names = source_names(con)
        hint = hint or f"name it as SOURCE:ORDINAL, e.g. {names[with_runs[0]]}:{ref}"
        raise LookupError(f"run {ref!r}: several sources have runs ({_listing([names[d] for d in with_runs])}); "
                          f"{hint}")
    return with_runs[0] if with_runs else None


def source_names(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Each log source's display name cut to the last components that still tell it from the others, as
    `logmine runs` shows them: `journal.txt` alone, `demo/journal.txt` beside `kimi-k25/journal.txt`."""
    displays = [d for (d,) in named_queries.fetch(
        con, "SELECT display FROM sources WHERE kind = 'log' ORDER BY source_id").rows]
    return dict(zip(displays, shortest_unique_suffixes(displays), strict=True))


def unparsed(con: duckdb.DuckDBPyConnection, limit: int = 50) -> pd.DataFrame:
    """Untyped lines grouped by template, most frequent first."""
    return named_queries.execute(con, "unparsed", limit=limit)


def summary_text(summary: dict) -> str:
    """The human summary printed after an ingest."""
    out = []
    for s in summary["sources"]:  # one line per file, short enough for 80 columns: a fleet has many
        out.append(f"{visible(s['path'], one_line=True)}: {s['status']}, {s['format']}, "
                   f"{s['lines_read']:,} lines, {s['lines_untyped']:,} untyped")
        if s.get("note"):
            out.append(f"  {visible(s['note'], one_line=True)}")
        if s.get("new_shape"):
            out.append(f"  new shape: {visible(s['new_shape'], one_line=True)}")
        if s["untimed_markers"]:
            out.append(f"  {s['untimed_markers']:,} start, stop or exit lines have no time of their own (as in "
                       "`journalctl -o cat`): runs may miss the times only they show")
    if summary["sources"]:  # a transcript alone, or inputs that all failed, read no log line
        out.append(f"total: {summary['lines_read']:,} lines read, {summary['lines_typed']:,} typed "
                   f"-> {summary['db']}")
    if summary["lines_untyped"]:
        out.append(f"  {summary['lines_untyped']:,} lines kept untyped: `logmine unparsed` groups them")
    for t in summary.get("transcripts", []):
        out.append(f"{visible(t['path'], one_line=True)}: {t['status']}, {t['format']}")
        out.append(f"  {t['sessions']} sessions, {t['messages']} messages, {t['tool_calls']} tool calls"
                   + (f", {t['unknown_records']} unknown records kept" if t["unknown_records"] else ""))
        out.extend(f"  skipped malformed input: {visible(p, one_line=True)}" for p in t["problems"][:20])
    if summary.get("transcripts") and not summary["sources"]:
        out.append(f"total: {len(summary['transcripts'])} transcript(s) -> {summary['db']}")
    out.extend(visible(line, one_line=True) for line in summary.get("left", []))
    if summary["failed"]:
        out.append(f"not stored, could not be read: {len(summary['failed'])} input(s) (listed on stderr)")
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
                tasks[name] = bar.add_task(visible(name, one_line=True), total=total)
            bar.update(tasks[name], completed=done)

        yield update
