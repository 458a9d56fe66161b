"""One large journal parsed by byte ranges in the processes of `logmine ingest --jobs N` (N of 3 or more).

The file is cut into about 4N ranges at line starts near equal offsets, each at a SGLang statistics line
(`] Decode batch`, `] Prefill batch`): a line that carries its own stamp and prefix, so that nothing before
it decides how it and the lines after it are read. The lines before each cut are counted, and each range is
parsed by a pool process into a scratch database as a serial ingest would parse it, numbered from its first
line. The main process copies each range into the database as soon as it and those before it are done,
while the pool parses the later ones.

The database has one writer: copying the ranges in costs the main process about what storing the rows of
the serial ingest's parse worker costs it, so a single file goes no faster than that writer, and cutting it
pays only where the parse is the slower half (more cores than two, `--redact`, JSON journals). On this
project's 2-core machine a 2M-line journal took 12.3 s with `--jobs 3` against 7.7 s with `--jobs 2`
(with `--redact`: 12.2 against 11.3 s).

Whether a range was read as the serial ingest reads it depends on the range before it, known only once that
one is parsed: the main process takes the ranges in order, and takes one only when the range before it
ended with no traceback open (its lines would have gone on into this range) and, for `journal-short`,
whose stamps have no year, at the year and month this range began from. From the first range that does not
continue so on, the file is read the way a grown file is: the source's record says how far the taken ranges
go, and the serial ingest goes on from there (`ingest.ingest_log`), re-reading an open traceback's lines.
The tables are those of a serial ingest, row for row (tested with cuts inside tracebacks and across a New
Year).

Only the journal formats whose every line has its own stamp are cut; a plain log's lines borrow the time of
the lines before them.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...inputs.sources import BLOCK_BYTES, read_range

if TYPE_CHECKING:
    import duckdb

    from ...inputs.sources import Input
    from ..logs import Parsed, ParsePlan, Progress, SourceReport

# A file this large is cut into ranges; a smaller one is not worth the scratch databases' second copy.
SPLIT_MIN_BYTES = 256 << 20
CUTTABLE_FORMATS = ("journal-short", "journal-iso", "journal-full", "journal-unix", "journal-json")
CUT_MARKERS = (b"] Decode batch", b"] Prefill batch")
CUT_SEARCH_BYTES = 4 << 20  # how far past a target offset a cut line is looked for
# Ranges per process: the main process copies each range into the database as soon as it and those before
# it are parsed, while the pool parses the later ones; with one range per process all would end together.
RANGES_PER_JOB = 4


@dataclass
class RangeEnd:
    """What a parsed range left: its scratch database and the parser's state after its last line."""

    db: str
    last: Parsed  # its final batch (tables dropped): lines read, an open traceback, the stamps' year and month
    end: int  # byte offset after its last line
    first_month: int | None  # the month of its first line's stamp


def cut_points(inp: Input, parts: int) -> list[tuple[int, int]]:
    """(byte offset, line number) of the start of each range; one pair (0, 1) when the file is not cut."""
    targets = [inp.size * k // parts for k in range(1, parts)]
    offsets = [0]
    for target in targets:
        data = read_range(inp.path, target, CUT_SEARCH_BYTES)
        whole = data.find(b"\n") + 1  # the window's first whole line (the target falls inside a line)
        found = [at for at in (data.find(marker, whole) for marker in CUT_MARKERS) if at >= 0] if whole else []
        if not found:
            continue
        start = target + data.rfind(b"\n", 0, min(found)) + 1  # the start of that line
        if start > offsets[-1]:
            offsets.append(start)
    starts, line_no, done = [(0, 1)], 1, 0
    for offset in offsets[1:]:
        line_no += _count_lines(inp.path, done, offset)
        done = offset
        starts.append((offset, line_no))
    return starts


def _count_lines(path: str, start: int, stop: int) -> int:
    with open(path, "rb") as f:
        f.seek(start)
        count = 0
        while start < stop:
            block = f.read(min(BLOCK_BYTES, stop - start))
            if not block:
                break
            count += block.count(b"\n")
            start += len(block)
    return count


def parse_range(task: tuple[ParsePlan, str]) -> RangeEnd:
    """Parse one range into a scratch database (run in a pool process)."""
    from ...store import ensure_tables, execute
    from ..logs import LOG_TABLES, BatchAppender, SourceReport, parse_batches, table_columns, typed_batch
    from .scratch import scratch_database

    plan, db = task
    with scratch_database(db) as con:
        ensure_tables(con, {name: table_columns(name) for name in LOG_TABLES})
        appender = BatchAppender(con)
        report = SourceReport(plan.inp.display, plan.source_id, "new")
        for parsed in parse_batches(plan):
            appender.add(typed_batch(parsed.tables, stats=True), report)
        appender.close()
        first = execute(con, "SELECT month(ts) FROM lines WHERE ts IS NOT NULL ORDER BY line_no LIMIT 1")
    parsed.tables = {}
    return RangeEnd(db, parsed, plan.start_offset + parsed.consumed, first[0][0] if first else None)


def continues(before: RangeEnd, after: RangeEnd, plan: ParsePlan) -> bool:
    """Whether `after`, parsed from the file's starting state, is what the serial parse makes of it."""
    if before.last.reopen_line is not None or before.last.partial:
        return False  # a traceback ran on into it (or the range before ended inside a line)
    if plan.envelope != "journal-short":
        return True
    reached = before.last.time
    return reached.year == plan.time.year and (after.first_month is None or reached.last_month <= after.first_month)


def ingest_by_ranges(con: duckdb.DuckDBPyConnection, path: str, pool: object, jobs: int, scratch: Path,
                     envelope: str | None = None, progress: Progress | None = None,
                     redact: bool = False) -> SourceReport | None:
    """Ingest a new file by ranges parsed in `pool` (see the module); None when it is not cut (too small, a
    format without a stamp on every line, a copy or continuation of a stored source, or a range that
    failed), and the caller ingests it the serial way, which says what is wrong with it if anything is.
    A pool process killed meanwhile raises BrokenProcessPool, the ranges stored so far dropped."""
    from ...inputs.identity import same_content
    from ...inputs.sources import describe_input
    from ...store import delete_rows, execute, next_source_id
    from ..logs import LOG_TABLES, plan_parse

    try:
        inp = describe_input(path)
        if inp.compression is not None or (inp.size or 0) < SPLIT_MIN_BYTES or same_content(con, inp):
            return None
        source_id = next_source_id(con)
        plan, stream = plan_parse(con, inp, envelope, None, 0, 1, source_id, redact)
        stream.close()
    except Exception:  # noqa: BLE001 - the serial ingest that follows says what is wrong with it
        return None
    if plan.envelope not in CUTTABLE_FORMATS:
        return None
    try:
        return _ingest_ranges(con, inp, plan, pool, jobs * RANGES_PER_JOB, scratch, progress, redact)
    except Exception as exc:  # noqa: BLE001 - as if never cut: the serial ingest reads it, or names its fault
        from concurrent.futures.process import BrokenProcessPool

        import duckdb

        if isinstance(exc, duckdb.Error):
            raise
        delete_rows(con, LOG_TABLES, source_id)
        execute(con, "DELETE FROM sources WHERE source_id = ?", [source_id])
        if isinstance(exc, BrokenProcessPool):
            raise  # the caller reads it, and says why
        return None


def _ingest_ranges(con: duckdb.DuckDBPyConnection, inp: Input, plan: ParsePlan, pool: object, parts: int,
                   scratch: Path, progress: Progress | None, redact: bool) -> SourceReport | None:
    from ...inputs.identity import content_hash
    from ...store import execute
    from .. import interrupts
    from ..logs import LOG_TABLES, ingest_log, store_source_record
    from .scratch import copy_scratch

    starts = cut_points(inp, parts)
    if len(starts) < 2:
        return None
    ends = [offset for offset, _ in starts[1:]] + [inp.size]
    tasks = [(dataclasses.replace(plan, start_offset=offset, first_line=line_no, end_offset=end,
                                  time=dataclasses.replace(plan.time, last_month=0) if offset else plan.time),
              str(scratch / f"range-{k}.duckdb"))
             for k, ((offset, line_no), end) in enumerate(zip(starts, ends, strict=True))]
    taken: list[RangeEnd] = []
    futures = [pool.submit(parse_range, task) for task in tasks]
    for future in futures:
        interrupts.check()
        parsed = future.result()
        if taken and not continues(taken[-1], parsed, plan):
            for later in futures:
                later.cancel()  # those not started yet: read in order below
            break
        copy_scratch(con, parsed.db, LOG_TABLES, plan.source_id)
        Path(parsed.db).unlink()  # its disk is free for the ranges still to come
        taken.append(parsed)
        if progress:
            progress(inp.display, parsed.end, inp.size)
    last = taken[-1]
    store_source_record(con, inp, plan.source_id, plan, last.end, last.last, content_hash(inp, last.end))
    report = ingest_log(con, inp, plan.envelope, progress, redact)  # on from there, if anything is left
    report.status = "new"
    report.note = f"read in {len(taken)} byte ranges at once" + \
        ("" if len(taken) == len(tasks) else f" of {len(tasks)}, the rest in order")
    counts = execute(con, "SELECT kind, count(*) FROM lines WHERE source_id = ? GROUP BY ALL", [plan.source_id])
    report.by_kind = Counter({kind: n for kind, n in counts if kind is not None})
    report.lines_untyped = sum(n for kind, n in counts if kind is None)
    report.lines_typed = sum(report.by_kind.values())
    report.lines_read = report.lines_typed + report.lines_untyped
    return report
