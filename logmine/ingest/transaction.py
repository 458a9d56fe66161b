"""One ingest, one transaction: the logs and transcripts stored, runs, templates and knowledge derived, and
everything rolled back if the process is interrupted or the database fails."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from ..store import DEFAULT_DB, connect

if TYPE_CHECKING:
    import duckdb

    from ..inputs.sources import SortedInputs
    from . import transcripts
    from .logs import IngestReport, Progress

# Called inside an ingest's transaction with the connection and the stage ("before" or "after"; see `ingest`).
InTransaction = Callable[["duckdb.DuckDBPyConnection", str], None]

# DuckDB keeps pages of the tables being written in memory; this bounds it (it spills to disk beyond).
INGEST_MEMORY = "128MB"
FINISH_MEMORY = "2GB"


@dataclass
class Report:
    """What one `ingest` did: the logs' line counts and the transcripts' record counts."""

    logs: IngestReport
    transcripts: list[transcripts.TranscriptReport] = field(default_factory=list)
    db_removed: bool = False  # the ingest made the database and stored nothing in it: it was removed

    @property
    def stored_nothing(self) -> bool:
        return not self.logs.sources and not self.transcripts

    def as_dict(self) -> dict:
        summary = self.logs.as_dict()
        summary["transcripts"] = [t.as_dict() for t in self.transcripts]
        summary["db_removed"] = self.db_removed
        return summary


def ingest(paths: list[str], db: str | Path = DEFAULT_DB, envelope: str | None = None, tz: str | None = None,
           progress: Progress | None = None, redact: bool = False, jobs: int | None = None,
           in_transaction: InTransaction | None = None, open_runs_only: bool = False, follow_links: bool = False,
           replace: bool = False) -> Report:
    """Parse the inputs into typed events in the DuckDB file `db` (created if missing).

    Logs and transcripts are stored, and runs, configs, diffs and links recomputed, in one
    transaction: if the process is interrupted, the tables are as they were before. An input that
    cannot be read costs only itself: its rows are not kept, the others are, and the report's
    `failed` names it with its reason.

    `redact` replaces secrets before they are stored (`logmine.ingest.redact`), in this ingest and, kept as a
    setting of the database, in every later one. A database the ingest creates is readable by its owner
    only (and so are its write-ahead log and temporary files).

    `jobs` processes share the work (default: one per core): 1 is this process alone; 2 adds a parse
    worker beside it for each input of 32 MB or more, and starts the next input's parse while this one's
    rows are stored; 3 or more parse several new log files at once, each in a process of its own
    (`logmine.ingest.jobs.files`), and a new journal of 256 MB or more by byte ranges (`logmine.ingest.jobs.ranges`).
    The tables are the same whatever `jobs`; more than the cores this process may use, or than the memory
    available holds (`usable_jobs`), are not started.

    `follow_links`: in the folders named, follow symlinks that lead outside them too
    (`inputs.sources.classify_inputs`).

    A log file truncated or rewritten since its last ingest is read as a new generation: its earlier rows
    and runs are kept under `NAME@N`; `replace` replaces them instead.

    `in_transaction` is called inside the ingest's transaction, with the connection, once `"before"` the
    inputs are read and once `"after"` everything is derived, just before the commit: `logmine follow`
    keeps its journal cursor and its alerts there, so that they are stored with the rows they cover.
    `open_runs_only` derives again only the runs the inputs' new lines can change (the last run of each
    source read, and the runs after it): a follow's batch adds lines at the end of its sources. Without it
    the ingest does so too when its inputs only grew and the database was derived by this logmine
    (`derive.rebuild`), and derives every run again otherwise.
    """
    from ..inputs.sources import classify_inputs
    from . import interrupts

    utc_offset = parse_offset(tz) if tz else None
    found = classify_inputs(paths, follow_links)
    interrupts.check()  # before the database file is made
    created = str(db) != ":memory:" and not Path(db).exists()
    umask = os.umask(0o077)  # the database, its write-ahead log and temporary files hold what the logs hold
    from .logs import REPLACE_CHANGED

    replacing = REPLACE_CHANGED.set(replace)
    try:
        con = connect(db)
        try:
            if found.logs and not created:
                from ..inputs.identity import start_prefix_checks

                start_prefix_checks(con, found.logs)  # on another core, while the parser loads
            report = _ingest_in_transaction(con, found, envelope, utc_offset, progress, redact,
                                            usable_jobs(jobs), in_transaction, open_runs_only)
        except BaseException:
            con.close()
            if created:  # as it was: no database
                _remove_database(db)
            raise
        finally:
            con.close()
    finally:
        os.umask(umask)
        REPLACE_CHANGED.reset(replacing)
    report.logs.db = str(db)
    if created and report.stored_nothing:  # every input failed: an empty database would only mislead
        _remove_database(db)
        report.db_removed = True
    return report


def _remove_database(db: str | Path) -> None:
    for leftover in (Path(db), Path(f"{db}.wal")):
        leftover.unlink(missing_ok=True)


def _ingest_in_transaction(con: duckdb.DuckDBPyConnection, found: SortedInputs, envelope: str | None,
                           utc_offset: timedelta | None, progress: Progress | None, redact: bool,
                           jobs: int = 1, in_transaction: InTransaction | None = None,
                           open_runs_only: bool = False) -> Report:
    import duckdb

    from ..derive import rebuild as derive
    from ..knowledge import rebuild as knowledge
    from ..store import execute, has_table, save_setting, setting
    from . import interrupts, transcripts
    from .jobs.files import ingest_logs_parallel, worth_a_pool
    from .logs import failure_line, ingest_logs
    from .redact import Redactor

    execute(con, f"SET memory_limit = '{INGEST_MEMORY}'")
    execute(con, "SET threads = 1")  # the parse worker has the other core
    execute(con, "BEGIN TRANSACTION")
    try:
        if in_transaction:
            in_transaction(con, "before")
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
        derive.rebuild(con, utc_offset=utc_offset, read={s.source_id: s.status for s in logs.sources},
                       open_runs_only=open_runs_only)
        untimed = dict(execute(con, "SELECT source_id, sum(untimed_markers) FROM runs GROUP BY ALL"))
        shapes = dict(execute(con, "SELECT source_id, shape FROM new_shape")) if has_table(con, "new_shape") \
            else {}
        for source in report.logs.sources:
            source.untimed_markers = int(untimed.get(source.source_id) or 0)
            source.new_shape = shapes.get(source.source_id)
        interrupts.check()
        knowledge.rebuild(con)  # facts, claims, decisions; spaCy only when a transcript has text
        if in_transaction:
            in_transaction(con, "after")
        interrupts.check()  # the last moment at which stopping leaves the database as it was
    except BaseException:
        execute(con, "ROLLBACK")
        raise
    execute(con, "COMMIT")
    return report


# What one parse process of a --jobs pool may hold at its peak (bench/: ~400 MB, with room for a long line).
JOB_MEMORY_BYTES = 768 << 20


def usable_jobs(asked: int | None) -> int:
    """`asked` processes (default: one per core), at most one per core this process may run on and one per
    JOB_MEMORY_BYTES of the memory available now: `--jobs 64` on 2 cores must not start 64 processes
    (`limits.MAX_JOBS` raises the first bound)."""
    from ..parsers.limits import MAX_JOBS

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    ceiling = MAX_JOBS.value() or cores  # more than the cores only where asked (tests of the pools)
    return max(1, min(asked or cores, ceiling, available_memory() // JOB_MEMORY_BYTES))


def available_memory() -> int:
    """MemAvailable of /proc/meminfo, in bytes (unbounded where it cannot be read)."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 1 << 62


UTC_OFFSET = re.compile(r"([+-])(\d\d)(?::?(\d\d))?")


def parse_offset(tz: str) -> timedelta:
    """`+01:00`, `-0500`, `+05`, `UTC`, `UTC+02:00` -> the journal's offset from UTC. Anything else (`+1:3`,
    which must not pass for +13:00, `+25:00`, `+01:75`) raises InputError."""
    text = tz.strip().upper().removeprefix("UTC") or "+00:00"
    shape = UTC_OFFSET.fullmatch(text)
    hours, minutes = (int(shape[2]), int(shape[3] or 0)) if shape else (99, 99)
    if hours > 14 or minutes > 59 or (hours == 14 and minutes):
        from ..inputs.sources import InputError

        raise InputError(f"--tz {tz!r}: expected an offset from UTC as ±HH:MM, from -14:00 to +14:00, e.g. +01:00")
    return (-1 if shape[1] == "-" else 1) * timedelta(hours=hours, minutes=minutes)
