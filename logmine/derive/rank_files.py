"""The launch SGLang's per-rank event files belong to: one run with its ranks, not one run per file.

With `--log-requests-target DIR` and `SGLANG_LOG_SCHEDULER_STATUS_TARGET=DIR`, every process of a launch writes
its JSON events to `DIR/<hostname>_<rank>.log` (`log_utils._create_log_target_file`), and nothing else: the
server's own lines (start-up, batches, errors) stay on its stderr. So a rank file alone says neither where a
launch begins nor what it loaded, and segmented on its own it would be a run of its own with no ranks.

The files of a folder whose times overlap are one launch (the ranks of a multi-node launch too: their host
names differ, the folder is shared). Its events belong to the runs of the server's own log beside them, in
the same folder or the one above (where `DIR` usually is), whose time they overlap: each event to the run
that had started last when it was written. A launch with no such log is the run of its lowest rank's file,
and the other ranks' events go to that run by the same rule. `rank_file_runs` holds the result, one row per
range of a rank file's lines and the run they belong to; the runs that `runs.segment` gave the files that
joined another's run are removed, so each run is counted once (queries/views/by_run.sql's `run_lines`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePath

import duckdb

from ..inputs.sources import per_rank_file
from ..store import create_table, execute, insert_rows

RANK_FILE_RUN_COLUMNS = {"source_id": "INTEGER", "first_line_no": "BIGINT", "last_line_no": "BIGINT",
                         "run_source_id": "INTEGER", "run": "INTEGER", "rank": "INTEGER"}


@dataclass
class RankFile:
    source_id: int
    folder: str
    rank: int
    first_ts: datetime
    last_ts: datetime


def place_rank_files(con: duckdb.DuckDBPyConnection) -> None:
    """Rebuild `rank_file_runs` from the stored runs and rank files, and drop the runs of the files that joined
    another source's run (after `runs.rebuild_runs` or `runs.update_open_runs`)."""
    create_table(con, "rank_file_runs", RANK_FILE_RUN_COLUMNS)
    execute(con, "DELETE FROM rank_file_runs")  # emptied, not dropped: the views of by_run.sql read it
    placed, absorbed = [], set()
    for launch in launches(rank_files(con)):
        server = server_log_beside(con, launch)
        lead = None if server is not None else min(launch, key=lambda f: (f.rank, f.source_id))
        starts = run_starts_of(con, server if lead is None else lead.source_id)
        for f in launch:
            placed += [{"source_id": f.source_id, "first_line_no": first, "last_line_no": last,
                        "run_source_id": run_source, "run": run, "rank": f.rank}
                       for first, last, run_source, run in ranges(con, f.source_id, starts)]
            if f is not lead:
                absorbed.add(f.source_id)
    insert_rows(con, "rank_file_runs", placed, RANK_FILE_RUN_COLUMNS)
    for table in ("runs", "failure_signs", "config_diffs"):
        execute(con, f"DELETE FROM {table} WHERE list_contains($absorbed, source_id)", {"absorbed": sorted(absorbed)})


def rank_files(con: duckdb.DuckDBPyConnection) -> list[RankFile]:
    """The log sources named `<host>_<rank>.log` whose typed lines are all SGLang JSON events: a server's own
    log that happens to be named so (`node_0.log`) holds other lines and stays a source of its own runs."""
    named = {source_id: (path, found) for source_id, path in execute(con, "SELECT source_id, path FROM sources "
                                                                     "WHERE kind = 'log' ORDER BY source_id")
             if (found := per_rank_file(PurePath(path).name))}
    if not named:  # nothing to read: the lines of a long server log are not scanned
        return []
    found = execute(con, """
        SELECT source_id, min(ts), max(ts),
               bool_and(kind IS NULL OR kind IN ('json_event', 'blank')) AND bool_or(kind = 'json_event')
        FROM lines WHERE list_contains($named, source_id)
        GROUP BY ALL ORDER BY source_id""", {"named": sorted(named)})
    files = []
    for source_id, first_ts, last_ts, events_only in found:
        path, (_, rank, _) = named[source_id]
        if events_only:
            files.append(RankFile(source_id, str(PurePath(path).parent), rank, first_ts, last_ts))
    return files


def launches(files: list[RankFile]) -> list[list[RankFile]]:
    """The rank files of each launch: a folder's files whose times overlap; a new launch begins where a file
    begins after every earlier one of its folder has ended."""
    groups: list[list[RankFile]] = []
    end: dict[str, datetime] = {}
    for f in sorted(files, key=lambda f: (f.folder, f.first_ts, f.source_id)):
        if f.folder in end and f.first_ts <= end[f.folder]:
            groups[-1].append(f)
            end[f.folder] = max(end[f.folder], f.last_ts)
        else:
            groups.append([f])
            end[f.folder] = f.last_ts
    return groups


def server_log_beside(con: duckdb.DuckDBPyConnection, launch: list[RankFile]) -> int | None:
    """The source of the server's own log the launch's events were written beside: a log
    that is no rank file, in the launch's folder or the one above, with a run whose time overlaps the events';
    of several (one log per node), the first node's (`node_rank` 0)."""
    folder = PurePath(launch[0].folder)
    overlapping = execute(con, """
        SELECT r.source_id, s.path
        FROM runs AS r JOIN sources AS s USING (source_id) LEFT JOIN configs AS c USING (config_id)
        WHERE s.kind = 'log' AND NOT list_contains($ranks, r.source_id)
          AND r.started_at <= $last AND coalesce(r.ended_at, r.last_seen_at, r.started_at) >= $first
        ORDER BY coalesce(TRY_CAST(json_extract(c.args, '$.node_rank') AS INTEGER), 0), r.source_id""",
        {"ranks": [f.source_id for f in launch], "first": min(f.first_ts for f in launch),
         "last": max(f.last_ts for f in launch)})
    return next((source for source, path in overlapping if PurePath(path).parent in (folder, folder.parent)), None)


def run_starts_of(con: duckdb.DuckDBPyConnection, source_id: int) -> list[tuple[int, int, datetime]]:
    """(source, run, started_at) of a source's runs that have a start time, in order."""
    return execute(con, "SELECT source_id, ordinal, started_at FROM runs WHERE source_id = ? "
                        "AND started_at IS NOT NULL ORDER BY ordinal", [source_id])


def ranges(con: duckdb.DuckDBPyConnection, source_id: int,
           starts: list[tuple[int, int, datetime]]) -> list[tuple[int, int, int, int]]:
    """(first line, last line, run's source, run) of a rank file's lines: each line in the run that had started
    last at its time, the lines before the first run's start in the first run. The ranges follow the lines'
    order, so no line is in two runs even where a file's times step back (two processes write rank 0's)."""
    if not starts:
        return []
    firsts = execute(con, """
        SELECT s.i, min(l.line_no)
        FROM lines AS l ASOF JOIN (SELECT unnest($starts) AS started_at, generate_subscripts($starts, 1) - 1 AS i) AS s
            ON l.ts >= s.started_at
        WHERE l.source_id = $source AND s.i > 0
        GROUP BY ALL ORDER BY 1""", {"source": source_id, "starts": [ts for _, _, ts in starts]})
    first_line, last_line = execute(con, "SELECT min(line_no), max(line_no) FROM lines WHERE source_id = ?",
                                    [source_id])[0]
    bounds = [(first_line, 0)]  # (a range's first line, its run's index in `starts`)
    for index, line in firsts:
        if line > bounds[-1][0]:
            bounds.append((line, index))
        else:  # the run started before the range's first line was written (or the times stepped back)
            bounds[-1] = (bounds[-1][0], index)
    ends = [line - 1 for line, _ in bounds[1:]] + [last_line]
    return [(first, end, *starts[index][:2]) for (first, index), end in zip(bounds, ends, strict=True)]
