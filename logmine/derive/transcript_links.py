"""Agent transcripts joined to runs: which journal lines a session saw, its clock's offset from the
journal's, and which run started with a configuration the agent wrote."""

from __future__ import annotations

import json
from datetime import timedelta

import duckdb

from ..store import create_table, execute

MATCH_COLUMNS = {"transcript_source_id": "INTEGER", "call_id": "VARCHAR", "line_in_output": "INTEGER",
                 "source_id": "INTEGER", "line_no": "BIGINT"}
CLOCK_COLUMNS = {"session_id": "VARCHAR", "utc_offset_s": "INTEGER", "method": "VARCHAR"}
LINK_COLUMNS = {"session_id": "VARCHAR", "message_id": "VARCHAR", "message_index": "INTEGER",
                "call_id": "VARCHAR", "kind": "VARCHAR", "path": "VARCHAR", "host": "VARCHAR",
                "written_at_local": "TIMESTAMP", "changed": "JSON", "source_id": "INTEGER", "run": "INTEGER"}
QUARTER_HOUR = 900


def link_transcripts(con: duckdb.DuckDBPyConnection, utc_offset: timedelta | None) -> None:
    """Match embedded journal lines to ingested ones, infer each session's clock offset, link config writes."""
    for name, columns in (("embedded_matches", MATCH_COLUMNS), ("session_clock", CLOCK_COLUMNS),
                          ("links", LINK_COLUMNS)):
        execute(con, f'DROP TABLE IF EXISTS "{name}"')
        create_table(con, name, columns)
    # A line the agent saw is the same line of the journal when the message text is identical;
    # SGLang's timestamp inside the text makes that nearly unique.
    execute(con, """INSERT INTO embedded_matches
        SELECT e.source_id, e.call_id, e.line_in_output, arg_min(l.source_id, l.line_no), min(l.line_no)
        FROM embedded_lines AS e JOIN lines AS l ON l.message = e.message AND l.kind = e.kind
        GROUP BY ALL""")
    for (session_id,) in execute(con, "SELECT id FROM sessions"):
        seconds, method = session_offset(con, session_id, utc_offset)
        execute(con, "INSERT INTO session_clock VALUES (?, ?, ?)", [session_id, seconds, method])
    link_config_writes(con)


def session_offset(con: duckdb.DuckDBPyConnection, session_id: str,
                   given: timedelta | None) -> tuple[int, str]:
    """Seconds to add to the session's UTC times to get the journal's local time, and how it was found."""
    if given is not None:
        return int(given.total_seconds()), "--tz"
    # The newest journal line a tool call printed was written shortly before the call ended.
    rows = execute(con, """
        SELECT max(epoch(l.ts) - epoch(e.seen_at))
        FROM embedded_lines AS e
        JOIN embedded_matches AS m ON m.transcript_source_id = e.source_id AND m.call_id = e.call_id
             AND m.line_in_output = e.line_in_output
        JOIN lines AS l ON l.source_id = m.source_id AND l.line_no = m.line_no
        WHERE e.session_id = ? AND l.ts IS NOT NULL AND e.seen_at IS NOT NULL
        GROUP BY e.call_id""", [session_id])
    differences = sorted(r[0] for r in rows if r[0] is not None)
    if differences:
        median = differences[len(differences) // 2]
        return round(median / QUARTER_HOUR) * QUARTER_HOUR, "matched journal lines"
    journal = execute(con, "SELECT max(utc_offset_s) FROM sources WHERE envelope IN ('journal-json', 'journal-unix')")
    if journal and journal[0][0] is not None:
        return int(journal[0][0]), "journal epoch timestamps"
    return 0, "assumed UTC (no journal line matched; pass --tz)"


def link_config_writes(con: duckdb.DuckDBPyConnection) -> None:
    """Join each config the agent wrote to the first later run started with those server args."""
    snapshots = execute(con, """
        SELECT c.session_id, c.message_id, c.message_index, c.call_id, c.origin, c.path, c.host,
               c.written_at + to_seconds(k.utc_offset_s) AS local_time, c.args
        FROM config_snapshots AS c JOIN session_clock AS k USING (session_id)
        WHERE c.origin IN ('unit_file', 'launch_command')  -- what the agent set, not what it read
        ORDER BY c.session_id, c.message_index, c.call_id""")
    runs = execute(con, """SELECT r.source_id, r.ordinal, r.started_at, c.args FROM runs AS r
                       LEFT JOIN configs AS c USING (config_id) ORDER BY r.started_at, r.source_id, r.ordinal""")
    configs = {(r[0], r[1]): json.loads(r[3]) if r[3] else None for r in runs}
    for session_id, message_id, index, call_id, _origin, path, host, local_time, args_text in snapshots:
        args = json.loads(args_text)
        started = next((r for r in runs if r[2] is not None and local_time is not None and r[2] >= local_time
                        and r[3] and matches(args, json.loads(r[3]))), None)
        if started is None:
            continue
        previous = configs.get((started[0], started[1] - 1)) or {}
        changed = {k: [previous.get(k), v] for k, v in args.items() if k in previous and not same(previous[k], v)}
        execute(con, "INSERT INTO links VALUES (?, ?, ?, ?, 'config_change', ?, ?, ?, ?, ?, ?)",
            [session_id, message_id, index, call_id, path, host, local_time, json.dumps(changed),
             started[0], started[1]])


def same(a: object, b: object) -> bool:
    """Equal as server args: 4 and 4.0 are the same setting, True and 1 are not."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def matches(written: dict, config: dict) -> bool:
    """Whether a run's server_args dump carries every value the agent wrote."""
    return all(key in config and same(config[key], value) for key, value in written.items())
