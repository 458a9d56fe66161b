"""Knowledge tables rebuilt at the end of each ingest, inside its transaction, from the stored
transcripts: `facts` (entities of every message), `claims` (the assistant's numbers checked against
the logs) and `decisions` (each user request, what the agent did about it, the run it produced).

spaCy is imported only when some transcript message has text: a log-only database never pays for it.
"""

from __future__ import annotations

import json
from importlib import resources

import duckdb

from . import named_queries
from .store import create_table, execute

MESSAGE_COLUMNS = {"session_id": "VARCHAR", "message_id": "VARCHAR", "message_index": "INTEGER",
                   "message_first_line": "VARCHAR", "sentence": "INTEGER", "span_start": "INTEGER",
                   "span_end": "INTEGER"}
TABLES: dict[str, dict[str, str]] = {
    "facts": {**MESSAGE_COLUMNS, "role": "VARCHAR", "kind": "VARCHAR", "text": "VARCHAR", "value": "DOUBLE",
              "unit": "VARCHAR", "written_value": "DOUBLE", "written_unit": "VARCHAR", "detail": "VARCHAR"},
    "claims": {**MESSAGE_COLUMNS, "text": "VARCHAR", "value": "DOUBLE", "unit": "VARCHAR", "approximate": "BOOLEAN",
               "arithmetic": "VARCHAR", "source_id": "INTEGER", "run": "INTEGER", "quantity": "VARCHAR",
               "scope": "VARCHAR", "measured": "DOUBLE", "measured_figure": "VARCHAR",
               "measured_source": "VARCHAR", "verdict": "VARCHAR", "cause": "VARCHAR", "sentence_text": "VARCHAR"},
    "decisions": {"session_id": "VARCHAR", "message_id": "VARCHAR", "message_index": "INTEGER",
                  "request_kind": "VARCHAR", "request": "VARCHAR", "answer": "VARCHAR",
                  "answered_through_index": "INTEGER",
                  "tool_calls": "INTEGER", "actions": "JSON", "unit_file_writes": "VARCHAR", "restarts": "VARCHAR",
                  "config_changes": "JSON", "source_id": "INTEGER", "run": "INTEGER", "run_end_reason": "VARCHAR",
                  "run_load_seconds": "DOUBLE", "run_effect": "JSON"},
}


def rebuild(con: duckdb.DuckDBPyConnection) -> None:
    """Recompute facts, claims and decisions for every stored session."""
    for name, columns in TABLES.items():
        execute(con, f'DROP TABLE IF EXISTS "{name}"')
        create_table(con, name, columns)
    messages = execute(con, """
        SELECT m.session_id, m.id, m.idx, m.role, m.text,
               m.created_at + to_seconds(coalesce(k.utc_offset_s, 0)) AS local_time
        FROM messages AS m LEFT JOIN session_clock AS k USING (session_id)
        WHERE m.role IN ('user', 'assistant') AND trim(coalesce(m.text, '')) <> ''
        ORDER BY m.session_id, m.idx""")
    if messages:
        _prose_tables(con, messages)
    _decisions(con)


def _prose_tables(con: duckdb.DuckDBPyConnection, messages: list[tuple]) -> None:
    from . import claims, facts, nlp  # spaCy: only when there is prose to read

    measured = _measured_by_run(con)
    runs = [(s, o, t, json.loads(args) if args else None) for s, o, t, args in execute(con, """
        SELECT r.source_id, r.ordinal, r.started_at, c.args FROM runs AS r LEFT JOIN configs AS c USING (config_id)
        ORDER BY r.started_at""")]
    links: dict[str, list[tuple]] = {}
    for session_id, index, source_id, ordinal in execute(con, """
            SELECT session_id, message_index, source_id, run FROM links ORDER BY session_id, message_index"""):
        links.setdefault(session_id, []).append((index, source_id, ordinal))
    pieces = [(m, offset, line) for m in messages for offset, line in nlp.lines(m[4])]
    fact_rows, claim_rows = [], []
    sentence_no: dict[tuple[str, str], int] = {}  # sentences read so far in each message
    for (message, offset, _), doc in zip(pieces, nlp.read(line for _, _, line in pieces), strict=True):
        session_id, message_id, index, role, text, local_time = message
        base = {"session_id": session_id, "message_id": message_id, "message_index": index,
                "message_first_line": text.strip().split("\n")[0][:200]}
        first = sentence_no.get((session_id, message_id), 0)
        for k, sent in enumerate(doc.sents):
            fact_rows += [{**row, "role": role} for row in facts.fact_rows(sent, base, first + k, offset)]
        if role == "assistant":
            default = claims.run_of_message(local_time, index, links.get(session_id, []), runs)

            def measured_for(settings: dict, default: tuple | None = default, when: object = local_time) -> tuple:
                which = claims.run_with_settings(default, when, settings, runs)
                return which, measured.get(which, {})

            claim_rows += claims.claims_of_doc(doc, base, offset, first, measured_for)
        sentence_no[session_id, message_id] = first + sum(1 for _ in doc.sents)
    _insert(con, "facts", fact_rows)
    _insert(con, "claims", claim_rows)


def _measured_by_run(con: duckdb.DuckDBPyConnection) -> dict[tuple[int, int], dict]:
    from .claims import Measured, knowledge

    slack = {name: q.get("slack", 0.0) for name, q in knowledge()["quantities"].items()}
    found: dict[tuple[int, int], dict] = {}
    for row in named_queries.execute(con, "measurements").itertuples(index=False):
        bytes_per_unit = None if row.bytes_per_unit != row.bytes_per_unit else row.bytes_per_unit  # NaN -> None
        found.setdefault((row.source_id, row.run), {})[(row.quantity, row.scope)] = Measured(
            row.quantity, row.scope, float(row.value), row.unit, bytes_per_unit, row.measured_source,
            slack.get(row.quantity, 0.0))
    return found


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict]) -> None:
    if not rows:
        return
    import pyarrow as pa

    columns = TABLES[table]
    data = pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in rows])
    con.from_arrow(data).project(", ".join(f'TRY_CAST("{c}" AS {t}) AS "{c}"' for c, t in columns.items())) \
        .insert_into(table)


def _decisions(con: duckdb.DuckDBPyConnection) -> None:
    """Each user request, the assistant's actions until the next one, and the run they produced."""
    execute(con, (resources.files("logmine.parsers.knowledge") / "decisions.sql").read_text(encoding="utf-8"))
