"""Runs (server launches), their configurations and what changed between them, from a log's lines.

A run is one launch of the server with its worker processes. Boundaries come from systemd (`Starting`/
`Started` of the unit), from journald PIDs whose lifetimes do not overlap, from a new `server_args=`
dump, or from a uvicorn start after the server process ended (see `run_starts`). Everything
else about a run (load time, memory budget, traffic) is computed by the named queries from the event
tables, joined to `runs` on `source_id` and the line range (the `<table>_by_run` views,
`queries/views/by_run.sql`).
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import duckdb

from ..parsers import failure_families
from ..parsers.sglang_formats import CRASH_KINDS, MARKER_KINDS, PROCESS_END_KINDS, TRAFFIC_KINDS
from ..store import create_table, execute, insert_rows
from .causes import Cause, Sign, find_causes
from .rank_files import place_rank_files

RUNS_COLUMNS = {
    "source_id": "INTEGER", "ordinal": "INTEGER", "first_line_no": "BIGINT", "last_line_no": "BIGINT",
    "pid": "INTEGER", "started_at": "TIMESTAMP", "ready_at": "TIMESTAMP", "ended_at": "TIMESTAMP",
    "end_reason": "VARCHAR", "end_detail": "VARCHAR", "config_id": "VARCHAR", "untimed_markers": "BIGINT",
    "prefill_batches": "BIGINT", "decode_batches": "BIGINT", "http_requests": "BIGINT",
    "last_seen_at": "TIMESTAMP",  # its last stamped line: how far the log goes on a run that never ended
    "start_line_no": "BIGINT",  # the line `started_at` was read from
    "ready_from": "VARCHAR",  # what `ready_at` was read from: `ready_line`, else `first_batch` or `first_request`
    "cause": "VARCHAR", "cause_family": "VARCHAR", "cause_line_no": "BIGINT",  # see causes.py
    "consequences": "INTEGER", "failed_phase": "VARCHAR",
}
CONFIG_COLUMNS = {"config_id": "VARCHAR", "args": "JSON", "n_args": "INTEGER"}
# Every sign of a failure in each run (see causes.py): its root cause and what followed from it.
SIGN_COLUMNS = {"source_id": "INTEGER", "run": "INTEGER", "line_no": "BIGINT", "last_line_no": "BIGINT",
                "ts": "TIMESTAMP", "rank": "VARCHAR", "origin": "VARCHAR", "family": "VARCHAR", "role": "VARCHAR",
                "text": "VARCHAR"}
DIFF_COLUMNS = {"source_id": "INTEGER", "from_run": "INTEGER", "to_run": "INTEGER", "key": "VARCHAR",
                "old": "JSON", "new": "JSON"}

# The lines that count towards a run's PIDs: systemd's own lines carry its PID, not the server's.
SERVER_PID_LINE = "l.pid IS NOT NULL AND coalesce(l.ident, '') <> 'systemd'"
# Each line's run, given the runs' first and last lines ($firsts, $lasts). DuckDB runs the range join as
# a nested loop, one pass over the lines per run; the ASOF join sorts the lines once. Inside the ingest's
# transaction, on 2M lines, the range join takes 0.03 s for 7 runs where the ASOF join takes 0.27 s, and
# they break even at about 32 runs (2 s against 0.07 s at 1500).
RANGE_JOIN_MAX_RUNS = 32
RANGE_JOIN = """JOIN (SELECT unnest($firsts) AS first_line_no, unnest($lasts) AS last_line_no,
                             generate_subscripts($firsts, 1) - 1 AS run_index) AS s
                    ON l.line_no BETWEEN s.first_line_no AND s.last_line_no"""
ASOF_JOIN = """ASOF JOIN (SELECT unnest($firsts) AS first_line_no,
                                 generate_subscripts($firsts, 1) - 1 AS run_index) AS s
                    ON l.line_no >= s.first_line_no"""

@dataclass
class Marker:
    line_no: int
    kind: str
    ts: object
    pid: int | None
    exit_code: str | None  # of a `Main process exited` line: `killed`, `exited`, `dumped`
    exit_status: str | None  # of the same line: `9/KILL`, `1/FAILURE`, `0/SUCCESS`
    server_pid: int | None  # of uvicorn's `Started server process [PID]`

    def exit_text(self) -> str:
        return f"Main process exited, code={self.exit_code}, status={self.exit_status}"


@dataclass
class Run:
    source_id: int
    first_line_no: int
    markers: list[Marker] = field(default_factory=list)
    pids: Counter = field(default_factory=Counter)
    last_line_no: int = 0
    first_ts: object = None
    last_ts: object = None
    untimed_markers: int = 0  # start, stop and exit lines with no time of their own (`-o cat` drops systemd's)
    traffic: Counter = field(default_factory=Counter)  # lines of each of TRAFFIC_KINDS
    first_served: dict = field(default_factory=dict)  # TRAFFIC_KINDS kind -> its first line's time
    first_stamped: int | None = None  # the first line with a time of its own

    def first(self, *kinds: str) -> Marker | None:
        return next((m for m in self.markers if m.kind in kinds), None)

    def has(self, *kinds: str) -> bool:
        return self.first(*kinds) is not None


def rebuild_runs(con: duckdb.DuckDBPyConnection) -> None:
    for name, columns in (("runs", RUNS_COLUMNS), ("configs", CONFIG_COLUMNS), ("config_diffs", DIFF_COLUMNS),
                          ("failure_signs", SIGN_COLUMNS)):
        execute(con, f'DROP TABLE IF EXISTS "{name}"')
        create_table(con, name, columns)
    sources = execute(con, "SELECT source_id, envelope FROM sources WHERE kind = 'log' ORDER BY source_id")
    configs: dict[str, tuple[str, int]] = {}
    all_runs, diffs, signs = [], [], []
    for source_id, envelope in sources:
        rows, source_signs = described(con, source_id, segment(con, source_id, envelope))
        signs += source_signs
        attach_configs(con, source_id, rows, configs)
        all_runs += rows
        diffs += config_diffs(source_id, rows, configs)
    insert_rows(con, "runs", all_runs, RUNS_COLUMNS)
    insert_rows(con, "configs", [{"config_id": c, "args": args, "n_args": n} for c, (args, n) in configs.items()],
                CONFIG_COLUMNS)
    insert_rows(con, "config_diffs", diffs, DIFF_COLUMNS)
    insert_rows(con, "failure_signs", signs, SIGN_COLUMNS)
    place_rank_files(con)


def described(con: duckdb.DuckDBPyConnection, source_id: int, runs: list[Run],
              before: int = 0) -> tuple[list[dict], list[dict]]:
    """The `runs` rows of a source's runs (numbered after `before` earlier ones, the last one its last) with
    their causes, and their `failure_signs` rows."""
    causes = find_causes(con, source_id, [(r.first_line_no, r.last_line_no) for r in runs])
    rows = [describe_run(r, before + i + 1, i + 1 == len(runs), c)
            for i, (r, c) in enumerate(zip(runs, causes, strict=True))]
    signs = [sign_row(source_id, row["ordinal"], sign, "cause" if sign is c.sign else "consequence")
             for row, c in zip(rows, causes, strict=True) if row["cause_line_no"] is not None
             for sign in [c.sign, *c.consequences]]
    return rows, signs


def sign_row(source_id: int, run: int, sign: Sign, role: str) -> dict[str, object]:
    return {"source_id": source_id, "run": run, "line_no": sign.line_no, "last_line_no": sign.last_line_no,
            "ts": sign.ts, "rank": sign.rank, "origin": sign.source, "family": sign.family, "role": role,
            "text": sign.text}


def update_open_runs(con: duckdb.DuckDBPyConnection, grown: set[int], whole: set[int] = frozenset()) -> None:
    """`rebuild_runs` for lines added at the end of their sources, touching only what they can change: the
    last run of each source in `grown` (the one still open when the lines came) and the runs after it; the
    sources of `whole` (new, or read again from their start) are segmented whole. The other runs, and the
    other sources' runs, stay as they were."""
    for name, columns in (("runs", RUNS_COLUMNS), ("configs", CONFIG_COLUMNS), ("config_diffs", DIFF_COLUMNS),
                          ("failure_signs", SIGN_COLUMNS)):
        create_table(con, name, columns)
    configs = {c: (args, n)
               for c, args, n in execute(con, "SELECT config_id, CAST(args AS VARCHAR), n_args FROM configs")}
    known = set(configs)
    all_runs, diffs, signs = [], [], []
    for source_id in sorted(grown | whole):
        found = execute(con, "SELECT envelope FROM sources WHERE source_id = ? AND kind = 'log'", [source_id])
        if not found:
            continue
        last = execute(con, "SELECT ordinal, first_line_no FROM runs WHERE source_id = ? ORDER BY ordinal DESC LIMIT 1",
                       [source_id])
        # From the open run on, under systemd (whose starts are its own lines); the first run, and a source
        # whose launches are told from PIDs and tracebacks, whole (a launch's start may move back to the
        # first line its process printed).
        systemd = bool(execute(con, """SELECT 1 FROM lines WHERE source_id = ?
                                       AND kind IN ('systemd_starting', 'systemd_started') LIMIT 1""", [source_id]))
        before, from_line = (last[0][0] - 1, last[0][1]) \
            if last and last[0][0] > 1 and systemd and source_id not in whole else (0, None)
        rows, source_signs = described(con, source_id, segment(con, source_id, found[0][0], from_line), before)
        signs += source_signs
        attach_configs(con, source_id, rows, configs)
        earlier = execute(con, """SELECT ordinal, config_id FROM runs WHERE source_id = ? AND ordinal <= ?
                                  AND config_id IS NOT NULL ORDER BY ordinal DESC LIMIT 1""", [source_id, before])
        closed = [{"ordinal": o, "config_id": c} for o, c in earlier]
        execute(con, "DELETE FROM runs WHERE source_id = ? AND ordinal > ?", [source_id, before])
        execute(con, "DELETE FROM config_diffs WHERE source_id = ? AND to_run > ?", [source_id, before])
        execute(con, "DELETE FROM failure_signs WHERE source_id = ? AND run > ?", [source_id, before])
        all_runs += rows
        diffs += config_diffs(source_id, closed + rows, configs)
    insert_rows(con, "runs", all_runs, RUNS_COLUMNS)
    insert_rows(con, "configs", [{"config_id": c, "args": args, "n_args": n}
                                 for c, (args, n) in configs.items() if c not in known], CONFIG_COLUMNS)
    insert_rows(con, "config_diffs", diffs, DIFF_COLUMNS)
    insert_rows(con, "failure_signs", signs, SIGN_COLUMNS)
    place_rank_files(con)


def segment(con: duckdb.DuckDBPyConnection, source_id: int, envelope: str | None,
            from_line: int | None = None) -> list[Run]:
    """Split a source's lines (read in `envelope`) into runs; only its lines from `from_line` on, the first
    line of a run, when given (`update_open_runs`)."""
    since = from_line or 0
    # A line's own time: `-o cat` and plain files give systemd's lines no time, and the parser carries the
    # previous line's time onto them; for run boundaries that borrowed time would be misleading. A JSON event
    # has its own (`timestamp`), which is all a per-rank event file's lines have.
    own_ts = "CASE WHEN l.log_ts IS NULL AND l.kind IS DISTINCT FROM 'json_event' THEN NULL ELSE l.ts END" \
        if envelope == "plain" else "l.ts"
    # Exit codes and server PIDs come typed from their events, never from the message text.
    markers = [Marker(*row) for row in execute(con, f"""
        SELECT l.line_no, l.kind, {own_ts} AS ts, l.pid, x.code, x.status, e.server_pid
        FROM lines AS l
        LEFT JOIN systemd AS x
            ON x.source_id = l.source_id AND x.line_no = l.line_no AND x.kind = 'systemd_main_exited'
        LEFT JOIN server_events AS e
            ON e.source_id = l.source_id AND e.line_no = l.line_no AND e.kind = 'uvicorn_started'
        WHERE l.source_id = $source AND l.line_no >= $since
            AND l.kind IN ({', '.join("'" + k + "'" for k in MARKER_KINDS)})
        ORDER BY l.line_no""", {"source": source_id, "since": since})]
    systemd = under_systemd(markers) if from_line is None else bool(execute(con, """
        SELECT 1 FROM lines WHERE source_id = ? AND kind IN ('systemd_starting', 'systemd_started') LIMIT 1""",
                                                                           [source_id]))
    # Under systemd a run begins with the unit's start, whatever the PIDs do (see `run_starts`).
    lifetimes = [] if systemd else execute(con, f"""
        SELECT min(line_no), max(line_no) FROM lines AS l
        WHERE source_id = ? AND line_no >= ? AND {SERVER_PID_LINE} AND kind IS DISTINCT FROM 'journald_suppressed'
        GROUP BY pid ORDER BY 1""", [source_id, since])
    extent = execute(con, "SELECT min(line_no), max(line_no), max(ts) FROM lines WHERE source_id = ? AND line_no >= ?",
                     [source_id, since])[0]
    if extent[0] is None:
        return []
    if not systemd:
        markers = sorted(markers + launch_failures(con, source_id), key=lambda m: m.line_no)
    boundaries = run_starts(markers, launch_starts(lifetimes), extent[0], systemd)
    if not systemd:
        boundaries = first_lines_of_launches(con, source_id, boundaries, markers)
    runs = [Run(source_id, b) for b in boundaries]
    for current, following in zip(runs, runs[1:] + [None], strict=True):
        current.last_line_no = following.first_line_no - 1 if following else extent[1]
    index = 0
    for m in markers:
        while index + 1 < len(runs) and m.line_no >= runs[index + 1].first_line_no:
            index += 1
        runs[index].markers.append(m)
    # One grouped query for all runs (a crash loop of thousands of restarts would otherwise pay one per
    # run), by PID within each run.
    bounds: dict[str, object] = {"source": source_id, "since": since, "firsts": [r.first_line_no for r in runs]}
    join = ASOF_JOIN
    if len(runs) <= RANGE_JOIN_MAX_RUNS:
        join, bounds["lasts"] = RANGE_JOIN, [r.last_line_no for r in runs]
    # Grouped by kind rather than counted with a FILTER per kind: DuckDB groups the compressed kind column
    # at half the cost of evaluating the filters on every line (0.09 against 0.21 s CPU on 2M lines).
    # A traceback's lines carry no stamp of their own in plain logs, and say nothing of when a run began.
    untimed_kinds = {kind for kind in MARKER_KINDS if kind != "error"}
    for index, pid, kind, server_line, count, first_ts, last_ts, untimed, stamped in execute(con, f"""
            SELECT s.run_index, l.pid, l.kind, {SERVER_PID_LINE}, count(*), min({own_ts}), max({own_ts}),
                   count(*) FILTER (WHERE {own_ts} IS NULL), min(l.line_no) FILTER (WHERE {own_ts} IS NOT NULL)
            FROM lines AS l {join}
            WHERE l.source_id = $source AND l.line_no >= $since
            GROUP BY ALL""", bounds):
        current = runs[index]
        if server_line:
            current.pids[pid] += count
        if kind in untimed_kinds:
            current.untimed_markers += untimed
        if kind in TRAFFIC_KINDS:
            current.traffic[kind] += count
            current.first_served[kind] = _extreme(min, current.first_served.get(kind), first_ts)
        current.first_stamped = _extreme(min, current.first_stamped, stamped)
        current.first_ts = _extreme(min, current.first_ts, first_ts)
        current.last_ts = _extreme(max, current.last_ts, last_ts)
    if from_line is None and len(runs) > 1 and not runs[0].markers and not runs[0].pids:
        # Lines before the first start (a journal header, a boot marker) belong to the first run.
        runs[1].first_line_no = runs[0].first_line_no
        runs[1].untimed_markers += runs[0].untimed_markers
        runs[1].traffic.update(runs[0].traffic)
        runs[1].first_stamped = _extreme(min, runs[0].first_stamped, runs[1].first_stamped)
        runs = runs[1:]
    return runs


def _extreme(pick: Callable, *values: object) -> object:
    """`pick` (min or max) of the values that are not None; None when all are."""
    present = [v for v in values if v is not None]
    return pick(present) if present else None


def launch_failures(con: duckdb.DuckDBPyConnection, source_id: int) -> list[Marker]:
    """A `launch_failure` marker at each traceback of a launch that died before its `server_args` dump."""
    return [Marker(line_no, "launch_failure", ts, None, None, None, None) for line_no, ts in execute(con, """
        SELECT first_line_no, ts FROM errors
        WHERE source_id = ? AND origin IS NULL AND regexp_matches(text, ?) AND NOT regexp_matches(text, ?)
        ORDER BY first_line_no""", [source_id, failure_families.LAUNCHER_FRAME, failure_families.SERVER_STARTED_FRAME])]


# Walking back from a launch's dump or failure to the first line its process printed: the lines that can
# only be the previous process's stop the walk.
PREVIOUS_PROCESS_KINDS = ("error", "traceback", "server_args", "server_ready", *TRAFFIC_KINDS,
                          "uvicorn_started", "uvicorn_startup", "uvicorn_running", "uvicorn_finished", *CRASH_KINDS,
                          *PROCESS_END_KINDS, "sigterm", "graceful_exit", "systemd_starting", "systemd_started")
PREAMBLE_MAX_LINES = 2000


def first_lines_of_launches(con: duckdb.DuckDBPyConnection, source_id: int, starts: list[int],
                            markers: list[Marker]) -> list[int]:
    """Move each run start found at a `server_args` dump or a launch's failure back to the first line the
    new process printed: the lines before it (imports, warnings, downloads, the command line) are the
    new launch's, back to the last line that is surely the previous process's (a ranked line, a traceback,
    traffic, a shutdown line, an exit-time warning, a fatal line such as the shell's `Killed`)."""
    kinds = {m.line_no: m.kind for m in markers}
    moved = list(starts)
    for i in range(1, len(starts)):
        if kinds.get(starts[i]) not in ("server_args", "launch_failure"):
            continue
        floor = max(moved[i - 1] + 1, starts[i] - PREAMBLE_MAX_LINES)
        last_previous = execute(con, f"""
            SELECT max(line_no) FROM lines
            WHERE source_id = ? AND line_no >= ? AND line_no < ?
              AND (coalesce(dp, pp, attn_cp, moe_dp, tp, ep) IS NOT NULL
                   OR kind IN ({', '.join('?' for _ in PREVIOUS_PROCESS_KINDS)})
                   OR regexp_matches(message, ?) OR regexp_matches(message, ?))""",
            [source_id, floor, starts[i], *PREVIOUS_PROCESS_KINDS, failure_families.EXIT_TRACE,
             failure_families.FATAL_LINE])[0][0]
        start = (last_previous + 1) if last_previous is not None else floor
        # Blank lines after the previous process's last line are still its.
        moved[i] = min(start, starts[i])
    return [line for i, line in enumerate(moved) if i == 0 or line > moved[i - 1]]


def under_systemd(markers: list[Marker]) -> bool:
    """Whether the server was started by a systemd unit (whose start lines are in the source)."""
    return any(m.kind in ("systemd_starting", "systemd_started") for m in markers)


def launch_starts(lifetimes: list[tuple[int, int]]) -> set[int]:
    """First lines of the launches that journald PIDs show, given each PID's (first line, last line).

    A worker process (scheduler, tokenizer, detokenizer) logs within the lifetime of the launch that
    spawned it, so PIDs whose lifetimes overlap are one launch; a launch begins where a PID starts
    after every earlier one has ended.
    """
    starts, end = set(), None
    for first, last in lifetimes:
        if end is not None and first > end:
            starts.add(first)
        end = last if end is None else max(end, last)
    return starts


LAUNCHED_TOGETHER_S = 60  # between the dumps of servers one launcher starts at once (each loads for longer)


def launched_together(earlier: object, later: object) -> bool:
    """Whether two dumps' times are those of servers started at once (unknown times are not)."""
    if earlier is None or later is None:
        return False
    return abs((later - earlier).total_seconds()) <= LAUNCHED_TOGETHER_S


def run_starts(markers: list[Marker], pid_launches: set[int], first_line: int,
               has_systemd: bool | None = None) -> list[int]:
    """First line of each run: a run is one launch of the server, with all its worker processes.

    Under systemd a run begins with the unit's `Starting` (or a `Started` without one). Elsewhere it
    begins where a new process lifetime begins (`launch_starts`), at a second `server_args=` dump
    within one run, or at a uvicorn `Started server process` after the run's process has ended (several
    tokenizer workers each log one while the launch is starting). A dump that follows the run's last one
    within LAUNCHED_TOGETHER_S, while that run is still starting, is a server launched beside it
    (`sglang_router.launch_server` starts one server per DP rank, each with its own dump): the same run.
    """
    if has_systemd is None:
        has_systemd = under_systemd(markers)
    starts = [first_line]
    previous_systemd = None
    run_has_args = run_has_ended = run_launch_failed = run_is_past_start = False
    last_dump_ts = None
    events = [(m.line_no, m.kind, m.ts) for m in markers] + [(line, "launch", None) for line in pid_launches]
    for line_no, kind, ts in sorted(events, key=lambda event: event[:2]):
        new_run = False
        if kind in ("server_ready", "error"):
            run_is_past_start = True
        if has_systemd:
            new_run = kind == "systemd_starting" or (
                kind == "systemd_started" and previous_systemd != "systemd_starting")
            if kind in ("systemd_starting", "systemd_started"):
                previous_systemd = kind
        elif kind == "launch":
            new_run = True
        elif kind == "server_args":
            beside = run_has_args and not (run_has_ended or run_is_past_start) and launched_together(last_dump_ts, ts)
            new_run = (run_has_args and not beside) or run_launch_failed
            last_dump_ts = ts
        elif kind == "launch_failure":
            # A launch that died before its dump is a run of its own, unless it is the run under way's.
            new_run = run_has_args or run_has_ended or run_launch_failed
            run_launch_failed = True
        elif kind == "uvicorn_started":
            new_run = run_has_ended
        elif kind in PROCESS_END_KINDS:
            run_has_ended = True
        if new_run:
            run_has_args, run_has_ended, run_is_past_start = kind == "server_args", False, False
            run_launch_failed = kind == "launch_failure"
            if line_no > starts[-1]:
                starts.append(line_no)
        elif kind == "server_args":
            run_has_args = True
    return starts


def describe_run(r: Run, ordinal: int, is_last: bool, cause: Cause | None = None) -> dict[str, object]:
    cause = cause or Cause()
    started = r.first("systemd_started")
    ready_at, ready_from = ready_time(r)
    exited = r.first("systemd_main_exited")
    stopped = r.first("systemd_stopped", "systemd_deactivated")
    reason, detail = end_reason(r, is_last, cause, ready_at is not None)
    ended_at = next((m.ts for m in (exited, stopped) if m is not None and m.ts is not None), None)
    if ended_at is None and reason != "running":
        ended_at = r.last_ts
    pid = r.pids.most_common(1)[0][0] if r.pids else None
    if pid is None:
        uvicorn = r.first("uvicorn_started")
        pid = uvicorn.server_pid if uvicorn else None
    from_systemd = started is not None and started.ts is not None
    # The cause is named for a run that died; a run stopped on purpose keeps only its first error's line.
    died = reason in ("failed", "crashed") or (reason == "ended" and cause.sign is not None)
    sign = cause.sign if died else None
    return {
        "source_id": r.source_id, "ordinal": ordinal, "first_line_no": r.first_line_no,
        "last_line_no": r.last_line_no, "pid": pid, "started_at": started.ts if from_systemd else r.first_ts,
        "ready_at": ready_at, "ended_at": ended_at, "end_reason": reason,
        "end_detail": detail, "config_id": None, "untimed_markers": r.untimed_markers,
        **{column: r.traffic[kind] for kind, column in TRAFFIC_KINDS.items()}, "last_seen_at": r.last_ts,
        "start_line_no": started.line_no if from_systemd else r.first_stamped, "ready_from": ready_from,
        "cause": sign.text if sign else None, "cause_family": sign.family if sign else None,
        "cause_line_no": sign.line_no if sign else None,
        "consequences": len(cause.consequences) if sign else None,
        "failed_phase": cause.failed_phase if reason in ("failed", "ended") and ready_at is None else None,
    }


def ready_time(r: Run) -> tuple[object, str | None]:
    """When the run was ready, and what says so: SGLang's ready line, else (a second node, a decode worker
    of a prefill/decode split, which never print one) its first served batch or request."""
    ready = r.first("server_ready")
    if ready is not None:
        return ready.ts, "ready_line"
    batches = [r.first_served.get(k) for k in ("prefill_batch", "decode_batch")]
    batch = _extreme(min, *batches)
    if batch is not None:
        return batch, "first_batch"
    request = r.first_served.get("http_request")
    return (request, "first_request") if request is not None else (None, None)


def end_reason(r: Run, is_last: bool, cause: Cause | None = None,
               was_ready: bool | None = None) -> tuple[str, str | None]:
    """restarted, stopped, crashed (died after ready), failed (died while starting), ended (the process
    ended, as exit-time warnings or a later launch show, with no line saying how) or running."""
    cause = cause or Cause()
    was_ready = r.has("server_ready") if was_ready is None else was_ready
    exited = r.first("systemd_main_exited")
    detail = exited.exit_text() if exited else None
    if r.has("systemd_stopping"):
        # systemctl stop/restart: SGLang kills itself with SIGKILL, which is still an operator stop.
        return ("stopped" if is_last else "restarted"), stop_words(r) or detail or "systemctl stop"
    crash = next((m for m in r.markers if m.kind in CRASH_KINDS and m.line_no not in cause.not_failures), None)
    failed_exit = exited is not None and (exited.exit_status or "").split("/")[0] != "0"
    died = cause.sign is not None and cause.sign.source in ("error", "line")
    if crash or failed_exit or r.has("systemd_failed_result") or died:
        why = cause.words() or (crash.kind if crash else None)
        why = "; ".join(w for w in (why, detail) if w) or None
        return ("crashed" if was_ready else "failed"), why
    if r.has("sigterm"):
        return ("stopped" if is_last else "restarted"), "SIGTERM"
    if cause.interrupted is not None:
        return ("stopped" if is_last else "restarted"), "Ctrl-C, KeyboardInterrupt"
    if not is_last:
        # A later launch ended this one: say so where no line of it said how.
        if under_systemd(r.markers) or any(m.kind in PROCESS_END_KINDS for m in r.markers):
            return "restarted", None
        return "ended", "no shutdown line"
    if exited or r.has("systemd_stopped", "systemd_deactivated"):
        return "stopped", detail
    if r.has("uvicorn_finished"):  # the HTTP server shut down with no signal logged (a plain or Dynamo log)
        return "stopped", "uvicorn shut down"
    if cause.exit_trace is not None:
        return "ended", "no shutdown line; exit-time warnings show the process was ended"
    return "running", None


def stop_words(r: Run) -> str | None:
    """How a `systemctl stop` ended where the server outlived the unit's stop timeout (TimeoutStopSec) and systemd
    killed it; None where it stopped in time."""
    timed_out = r.first("systemd_stop_timeout")
    if timed_out is None:
        return None
    stopping = r.first("systemd_stopping")
    after = ""
    if stopping is not None and stopping.ts is not None and timed_out.ts is not None:
        after = f" {(timed_out.ts - stopping.ts).total_seconds():.0f} s"
    exited = r.first("systemd_main_exited")
    how = f" ({exited.exit_text()})" if exited else ""
    return f"killed by systemd{after} after systemctl stop, when it had not stopped within the unit's stop timeout{how}"


def attach_configs(con: duckdb.DuckDBPyConnection, source_id: int, rows: list[dict],
                   configs: dict[str, tuple[str, int]]) -> None:
    dumps = execute(con, "SELECT line_no, args, n_args FROM server_args WHERE source_id = ? ORDER BY line_no",
                [source_id])
    lines = [d[0] for d in dumps]
    for row in rows:
        first = bisect.bisect_left(lines, row["first_line_no"])  # the run's first dump
        if first == len(dumps) or dumps[first][0] > row["last_line_no"]:
            continue
        dump = dumps[first]
        canonical = json.dumps(json.loads(dump[1]), sort_keys=True)
        config_id = hashlib.sha1(canonical.encode()).hexdigest()[:12]
        configs.setdefault(config_id, (canonical, dump[2]))
        row["config_id"] = config_id


def config_changes(old: dict, new: dict) -> dict[str, tuple[object, object]]:
    """Every key whose value differs (a key missing on one side counts as None there)."""
    changed = {}
    for key in list(old) + [k for k in new if k not in old]:
        a, b = old.get(key), new.get(key)
        if a != b or type(a) is not type(b):
            changed[key] = (a, b)
    return changed


def config_diffs(source_id: int, rows: list[dict], configs: dict[str, tuple[str, int]]) -> list[dict]:
    """`config_diffs` rows: what changed from each run with a configuration to the next one."""
    diffs = []
    with_config = [r for r in rows if r["config_id"]]
    for before, after in zip(with_config, with_config[1:], strict=False):
        old = json.loads(configs[before["config_id"]][0])
        new = json.loads(configs[after["config_id"]][0])
        for key, (a, b) in config_changes(old, new).items():
            diffs.append({"source_id": source_id, "from_run": before["ordinal"], "to_run": after["ordinal"],
                          "key": key, "old": json.dumps(a), "new": json.dumps(b)})
    return diffs
