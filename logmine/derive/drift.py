"""Format drift, said out loud: a log whose lines logmine mostly cannot type gets a `new_shape` row.

Three cases. A file in no envelope logmine knows, whose lines carry no SGLang prefix either, is a format
logmine does not know ("lines look like JSON objects with keys time, level, target, message: not a format
logmine knows"). A file in a known envelope (or SGLang's own prefix) whose messages no pattern or
catalogue entry types is a new release or a new writer ("... lines hold messages logmine does not
type"). Either way the lines are stored, untyped; the row names the shape they take (`line_shapes`),
the ingest summary prints it and the report shows it. The third is a file of several hosts' SGLang lines
interleaved (`kubectl logs --prefix` of a leader pod and its workers, `docker compose logs` of two servers, a
journal merged from two machines): runs are read per file, so the hosts' launches fold into one another, and the
row says so. A host with no SGLang line of its own (a router's container beside the server's) is no second server.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ..parsers.line_shapes import describe_lines
from ..parsers.sglang_prefix import parse_prefix
from ..store import append, create_table, execute, typed_table

DRIFT_SHARE = 0.5  # of a source's lines, untyped
DRIFT_MIN_LINES = 10
PREFIXED_SHARE = 0.1  # a plain file with fewer SGLang-prefixed lines than this is in no format logmine knows
SAMPLE_LINES = 200
NEW_SHAPE_COLUMNS = {"source_id": "INTEGER", "envelope": "VARCHAR", "shape": "VARCHAR", "lines": "BIGINT",
                     "untyped": "BIGINT", "first_line_no": "BIGINT", "example": "VARCHAR"}


def rebuild_new_shapes(con: duckdb.DuckDBPyConnection) -> None:
    """Remake `new_shape` from the stored lines."""
    execute(con, 'DROP TABLE IF EXISTS "new_shape"')
    create_table(con, "new_shape", NEW_SHAPE_COLUMNS)
    counts = execute(con, """
        SELECT l.source_id, s.envelope, count(*) AS lines, count(*) FILTER (l.prefixed) AS prefixed,
               count(DISTINCT l.host) FILTER (l.prefixed) AS hosts
        FROM lines AS l JOIN sources AS s USING (source_id)
        WHERE s.kind = 'log'
        GROUP BY ALL ORDER BY l.source_id""")
    # Counted apart, so that the text is read only of the few untyped lines (a `message` in the query
    # above is read for every line: most of an ingest's derive time on a long log).
    untyped_of = dict(execute(con, """
        SELECT source_id, count(*) FROM lines WHERE kind IS NULL AND trim(message) <> '' GROUP BY ALL"""))
    rows = []
    for source_id, envelope, lines, prefixed, hosts in counts:
        if hosts > 1:
            rows.append(_interleaved_hosts(con, source_id, envelope, lines, hosts))
        untyped = untyped_of.get(source_id, 0)
        if untyped < max(DRIFT_MIN_LINES, DRIFT_SHARE * lines):
            continue
        sample = execute(con, "SELECT line_no, message FROM lines WHERE source_id = ? AND kind IS NULL "
                              "AND trim(message) <> '' ORDER BY line_no LIMIT ?", [source_id, SAMPLE_LINES])
        # Described by what follows SGLang's prefix, where a line has one: the messages are what is new.
        looks = describe_lines([parse_prefix(message)[1] for _, message in sample]) or "nothing logmine names"
        if envelope == "plain" and prefixed < PREFIXED_SHARE * lines:
            shape = f"{looks if looks.startswith('lines ') else 'lines look like ' + looks}: not a format logmine knows"
        else:
            shape = f"{untyped:,} of its {lines:,} {envelope} lines hold messages logmine does not type ({looks})"
        rows.append({"source_id": source_id, "envelope": envelope, "shape": shape, "lines": lines,
                     "untyped": untyped, "first_line_no": sample[0][0], "example": sample[0][1][:500]})
    if rows:
        data = pa.table({name: pa.array([r[name] for r in rows]) for name in NEW_SHAPE_COLUMNS})
        append(con, "new_shape", typed_table(data, NEW_SHAPE_COLUMNS), NEW_SHAPE_COLUMNS)


# How to write one host's log alone, by the envelope that interleaved several.
ONE_HOST_COMMAND = {"kubectl": "`kubectl logs POD`", "compose": "`docker compose logs CONTAINER`",
                    "slurm": "`srun --output=NAME-%t.log`, a file per task"}


def _interleaved_hosts(con: duckdb.DuckDBPyConnection, source_id: int, envelope: str, lines: int,
                       hosts: int) -> dict[str, object]:
    """The row of a source whose lines several hosts wrote, cited at the first line of its second host."""
    names = [name for (name,) in execute(con, "SELECT host FROM lines WHERE source_id = ? AND host IS NOT NULL "
                                              "AND prefixed GROUP BY host ORDER BY min(line_no) LIMIT 3", [source_id])]
    line_no, message = execute(con, "SELECT min(line_no), arg_min(message, line_no) FROM lines "
                                    "WHERE source_id = ? AND host = ? AND prefixed", [source_id, names[1]])[0]
    shown = ", ".join(names) + (", ..." if hosts > len(names) else "")
    one_host = ONE_HOST_COMMAND.get(envelope, "journalctl on each machine")
    return {"source_id": source_id, "envelope": envelope, "lines": lines, "untyped": 0, "first_line_no": line_no,
            "shape": f"lines of {hosts} hosts interleaved ({shown}): runs are read per file, so their launches "
                     f"fold into one another; ingest each host's log on its own ({one_host})",
            "example": message[:500]}
