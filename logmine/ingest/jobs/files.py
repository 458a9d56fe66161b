"""`logmine ingest --jobs N` for N of 3 or more: log files parsed in N processes at once, stored as a serial
ingest stores them. (With 2, the serial ingest's parse worker beside the main process is the better use of
two cores: it adds no work, where this copies every row twice.)

Each new file goes to a pool process, which parses it with the serial code into a scratch DuckDB file of
its own (source id 1, one thread, no parse worker of its own: the N processes are the parallelism). The
main process takes the results in the order the files were named and copies each file's rows into the
database under the source id a serial ingest would give it (the next free one, so a file that fails
takes none), while the pool parses the next files. Files the database already knows (grown, unchanged,
replaced), stdin, a path named twice and a file whose content continues or copies a source stored
before it are ingested by the main process itself, in their place in the order. A new file of
`byte_ranges.SPLIT_MIN_BYTES` or more is cut into byte ranges parsed in the same pool (`byte_ranges`).
What spans sources (runs, templates, links) is derived afterwards, once, as after a serial ingest: the
tables are the same, row for row.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING

from ..worker.processes import caller_main_hidden, file_sizes, worker_context

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

    import duckdb

    from ..logs import IngestReport, Progress, SourceReport

POOL_LOST = "read here: a --jobs pool process was killed (as by the out-of-memory killer)"  # fits 80 columns


def ingest_logs_parallel(con: duckdb.DuckDBPyConnection, paths: list[str], jobs: int, envelope: str | None = None,
                         progress: Progress | None = None, redact: bool = False) -> IngestReport:
    """`ingest.ingest_logs` with the new files parsed in `jobs` processes; run it inside a transaction."""
    from ...inputs.identity import same_content
    from ...inputs.sources import describe_input
    from ...store import ensure_tables, find_source
    from .. import interrupts
    from ..logs import LOG_TABLES, IngestReport, failure_line, ingest_log, table_columns
    from .ranges import SPLIT_MIN_BYTES, ingest_by_ranges

    ensure_tables(con, {name: table_columns(name) for name in LOG_TABLES})
    report = IngestReport(db="")
    pooled: list[str] = []
    cut: list[str] = []  # large enough to be parsed by byte ranges (`byte_ranges`), by the main loop
    seen: set[str] = set()
    for path in paths:
        resolved = str(Path(path).resolve()) if path != "-" else path
        if path != "-" and resolved not in seen and find_source(con, resolved) is None:
            (cut if _size(path) >= SPLIT_MIN_BYTES else pooled).append(path)
        seen.add(resolved)
    scratch = Path(tempfile.mkdtemp(prefix="logmine-jobs-"))
    try:
        with _pool(jobs, len(pooled) + (jobs if cut else 0)) as pool:
            parsed = pool.map(_parse_to_scratch, [(p, str(scratch / f"{i}.duckdb"), envelope, redact)
                                                   for i, p in enumerate(pooled)])
            remaining = set(range(len(pooled)))
            for path in paths:
                interrupts.check()
                resolved = str(Path(path).resolve()) if path != "-" else path
                found = None
                lost = path in pooled and pooled.index(path) in remaining  # until its parse is found
                if lost:
                    remaining.discard(pooled.index(path))
                    found = _next_parse(parsed)
                if found is not None:
                    source, failure = found
                    if source and same_content(con, describe_input(path)):
                        # A copy or continuation of a source stored before it: the serial code says which.
                        report.sources.append(ingest_log(con, describe_input(path), envelope, progress, redact))
                    elif failure:
                        report.failed.append(failure)
                    else:
                        report.sources.append(_merge(con, source))
                    if progress:
                        progress(path, 1, 1)
                    continue
                try:
                    by_ranges = None
                    if path in cut:
                        try:
                            by_ranges = ingest_by_ranges(con, path, pool, jobs, scratch, envelope, progress, redact)
                        except BrokenProcessPool:
                            lost = True
                    report.sources.append(by_ranges or ingest_log(con, describe_input(path), envelope, progress,
                                                                  redact))
                    if lost and report.sources[-1].note is None:  # a copy says so rather
                        report.sources[-1].note = POOL_LOST
                except Exception as exc:  # noqa: BLE001 - as ingest_logs: a bad input costs only itself
                    import duckdb

                    if isinstance(exc, duckdb.Error):
                        raise
                    report.failed.append(failure_line(path, exc))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return report


def _next_parse(parsed: Iterator[tuple]) -> tuple | None:
    """The pool's next result; None when a pool process was killed (as by the out-of-memory killer), which
    breaks the pool: that input and the ones after it are then read in this process (the results end with
    the error, so the later ones find none)."""
    try:
        return next(parsed)
    except (BrokenProcessPool, StopIteration):
        return None


def worth_a_pool(paths: list[str]) -> bool:
    """Several log files, or one large enough to be parsed by byte ranges."""
    from .ranges import SPLIT_MIN_BYTES

    return len(paths) > 1 or (len(paths) == 1 and _size(paths[0]) >= SPLIT_MIN_BYTES)


def _size(path: str) -> int:
    return sum(size for _, size in file_sizes(path))


@contextlib.contextmanager
def _pool(jobs: int, tasks: int) -> Iterator[object]:
    """Processes forked from logmine's preloaded server; a process that dies breaks the pool (an executor
    says so, where a plain pool would start another one forever), and its files are read in this process."""
    from concurrent.futures import ProcessPoolExecutor

    if tasks == 0:
        yield _NoPool()
        return
    before = set(multiprocessing.active_children())
    pool = _MainHiddenPool(ProcessPoolExecutor(max_workers=max(1, min(jobs, tasks)), mp_context=worker_context(),
                                               initializer=_quiet_stderr))
    try:
        yield pool
    finally:
        if pool.broken:
            # The executor starts its processes as tasks are handed out. One started while it was breaking
            # (after it terminated the others, before it joins them all) is joined without being told to
            # end, and shutdown waited for ever (Python 3.11, seen under load): end every process the
            # pool started, since none of them has work left.
            for process in set(multiprocessing.active_children()) - before:
                process.kill()
        pool.executor.shutdown(wait=True, cancel_futures=True)


def _quiet_stderr() -> None:
    """A pool process says what it did in its results (a file's error too), never on stderr. What else reaches
    stderr there is the executor's teardown: a process started while the pool broke, still waiting for a task
    when the pool closes its queue, dies in an `EOFError` traceback on the user's terminal (Python 3.11)."""
    sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - the process's stderr until it ends


class _MainHiddenPool:
    """The executor, whose processes start as tasks are handed out: with the caller's main module hidden
    (`caller_main_hidden`), or a script read from stdin broke the pool before its first task. It notes
    whether the pool broke, which its results say by raising BrokenProcessPool."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.broken = False

    def map(self, function: Callable, items: list) -> Iterator:
        """Results in the order of `items`; BrokenProcessPool from the first one lost with the pool."""
        futures = []
        with contextlib.suppress(BrokenProcessPool):  # the pool broke while tasks were handed out
            futures = [self.submit(function, item) for item in items]
        return self._results(futures, len(futures) < len(items))

    def _results(self, futures: list[Future], cut_short: bool) -> Iterator:
        for future in futures:
            yield future.result()
        if cut_short:
            raise BrokenProcessPool("a --jobs pool process was killed")

    def submit(self, function: Callable, *args: object) -> Future:
        try:
            with caller_main_hidden():
                future = self.executor.submit(function, *args)
        except BrokenProcessPool:
            self.broken = True
            raise
        future.add_done_callback(self._note_break)
        return future

    def _note_break(self, future: Future) -> None:
        if not future.cancelled() and isinstance(future.exception(), BrokenProcessPool):
            self.broken = True


class _NoPool:
    def map(self, function: object, items: list) -> Iterator:
        return iter(())


def _parse_to_scratch(task: tuple[str, str, str | None, bool]) -> tuple[tuple[str, SourceReport] | None, str | None]:
    """Parse one file into a scratch database: ((database, its report), None), or (None, why it failed)."""
    from ..logs import ingest_logs
    from .scratch import scratch_database

    path, db, envelope, redact = task
    with scratch_database(db) as con:
        result = ingest_logs(con, [path], envelope=envelope, redact=redact, worker=False)
    if result.failed:
        return None, result.failed[0]
    return (db, result.sources[0]), None


def _merge(con: duckdb.DuckDBPyConnection, parsed: tuple[str, SourceReport]) -> SourceReport:
    """Copy a scratch database's rows into `con` as its next source."""
    from ...store import next_source_id
    from ..logs import LOG_TABLES
    from .scratch import copy_scratch

    db, report = parsed
    report.source_id = next_source_id(con)
    copy_scratch(con, db, ["sources", *LOG_TABLES], report.source_id)
    return report
