"""Knowledge tables rebuilt at the end of each ingest, inside its transaction, from the stored
transcripts: `facts` (entities of every message), `claims` (the assistant's numbers checked against
the logs) and `decisions` (each user request, what the agent did about it, the run it produced).

Reading prose is the slow part, and its result depends on the prose alone: each message is read once
(`prose_read` keeps a hash of its text and of the reader), its facts and claim readings are kept, and
only the verdicts and decisions, which depend on the runs, are recomputed at every ingest. spaCy is
imported only when some message has text not read yet: a log-only ingest never pays for it.
"""

from __future__ import annotations

import functools
import hashlib
import json
from datetime import datetime
from importlib import resources
from pathlib import Path

import duckdb

from ..query import named_queries
from ..store import create_tables, execute, insert_rows

MESSAGE_COLUMNS = {"session_id": "VARCHAR", "message_id": "VARCHAR", "message_index": "INTEGER",
                   "message_first_line": "VARCHAR", "sentence": "INTEGER", "span_start": "INTEGER",
                   "span_end": "INTEGER"}
TABLES: dict[str, dict[str, str]] = {
    "facts": {**MESSAGE_COLUMNS, "role": "VARCHAR", "kind": "VARCHAR", "text": "VARCHAR", "value": "DOUBLE",
              "unit": "VARCHAR", "written_value": "DOUBLE", "written_unit": "VARCHAR", "detail": "VARCHAR"},
    "claims": {**MESSAGE_COLUMNS, "text": "VARCHAR", "value": "DOUBLE", "unit": "VARCHAR", "approximate": "BOOLEAN",
               "arithmetic": "VARCHAR", "source_id": "INTEGER", "run": "INTEGER", "quantity": "VARCHAR",
               "scope": "VARCHAR", "measured": "DOUBLE", "measured_figure": "VARCHAR",
               "measured_source": "VARCHAR", "verdict": "VARCHAR", "derivation": "VARCHAR", "cause": "VARCHAR",
               "sentence_text": "VARCHAR"},
    "decisions": {"session_id": "VARCHAR", "message_id": "VARCHAR", "message_index": "INTEGER",
                  "request_kind": "VARCHAR", "request": "VARCHAR", "answer": "VARCHAR",
                  "answered_through_index": "INTEGER",
                  "tool_calls": "INTEGER", "actions": "JSON", "unit_file_writes": "VARCHAR", "restarts": "VARCHAR",
                  "config_changes": "JSON", "source_id": "INTEGER", "run": "INTEGER", "run_end_reason": "VARCHAR",
                  "run_load_seconds": "DOUBLE", "run_effect": "JSON"},
}
# What reading a message left, kept between ingests: which text was read by which reader, and the
# readings of its claims (judged again at every ingest, as the runs they speak of may change).
READ_TABLES: dict[str, dict[str, str]] = {
    "prose_read": {"session_id": "VARCHAR", "message_id": "VARCHAR", "text_md5": "VARCHAR", "reader": "VARCHAR"},
    "claim_readings": {"session_id": "VARCHAR", "message_id": "VARCHAR", "reading": "JSON"},
}
READER_MODULES = ("nlp.py", "facts.py", "claims.py", "quantities.py")
PROSE = """
    SELECT m.session_id, m.id AS message_id, m.idx, m.role, m.text, md5(m.text) AS text_md5,
           m.created_at + to_seconds(coalesce(k.utc_offset_s, 0)) AS local_time
    FROM messages AS m LEFT JOIN session_clock AS k USING (session_id)
    WHERE m.role IN ('user', 'assistant') AND trim(coalesce(m.text, '')) <> ''"""


@functools.cache
def reader_version() -> str:
    """A hash of everything reading prose depends on (the pipeline's code and data files): a new logmine
    that reads differently reads every message again."""
    digest = hashlib.sha256()
    here = Path(__file__).parent
    for name in READER_MODULES:
        digest.update((here / name).read_bytes())
    for entry in sorted(resources.files("logmine.parsers.knowledge").iterdir(), key=lambda e: e.name):
        if entry.is_file():
            digest.update(entry.name.encode() + entry.read_bytes())
    return digest.hexdigest()[:16]


def rebuild(con: duckdb.DuckDBPyConnection) -> None:
    """Bring facts, claims and decisions up to date with every stored session and run."""
    create_tables(con, {**TABLES, **READ_TABLES})
    execute(con, "ALTER TABLE claims ADD COLUMN IF NOT EXISTS derivation VARCHAR")  # a database of before it
    # The prose as stored now, its text hashed once for the three uses below.
    execute(con, f"CREATE OR REPLACE TEMP TABLE prose AS {PROSE}")
    _forget_unread(con)
    unread = execute(con, """
        SELECT p.* FROM prose AS p
        ANTI JOIN prose_read AS r ON r.session_id = p.session_id AND r.message_id = p.message_id
            AND r.text_md5 = p.text_md5 AND r.reader = ?
        ORDER BY p.session_id, p.idx""", [reader_version()])
    if unread:
        _read(con, unread)
    # a message may have moved in its session (a transcript re-exported with more before it)
    execute(con, """UPDATE facts AS f SET message_index = m.idx FROM messages AS m
                    WHERE m.session_id = f.session_id AND m.id = f.message_id AND m.idx <> f.message_index""")
    execute(con, "DELETE FROM claims")
    _judge(con)
    execute(con, "DELETE FROM decisions")
    # A decision starts with a user's request; a journal ingested alone has none (0.09 s saved on 2M lines).
    if execute(con, "SELECT EXISTS (SELECT 1 FROM messages WHERE role = 'user')")[0][0]:
        _decisions(con)
    execute(con, "DROP TABLE prose")


def _forget_unread(con: duckdb.DuckDBPyConnection) -> None:
    """Drop what was read of messages that are gone, changed, or were read by another reader."""
    execute(con, """
        DELETE FROM prose_read AS r
        WHERE r.reader <> ? OR NOT EXISTS (
            SELECT 1 FROM prose AS p
            WHERE p.session_id = r.session_id AND p.message_id = r.message_id AND p.text_md5 = r.text_md5)""",
            [reader_version()])
    for table in ("facts", "claim_readings"):
        execute(con, f"""
            DELETE FROM "{table}" AS t WHERE NOT EXISTS (
                SELECT 1 FROM prose_read AS r WHERE r.session_id = t.session_id AND r.message_id = t.message_id)""")


def _read(con: duckdb.DuckDBPyConnection, messages: list[tuple]) -> None:
    """Read each message's lines with spaCy: its facts, and the readings of the assistant's claims."""
    from . import claims, facts, nlp  # spaCy: only when there is prose not read yet

    pieces = [(m, offset, line) for m in messages for offset, line in nlp.lines(m[4])]
    code = {m[:2]: nlp.code_blocks(m[4]) for m in messages if m[3] == "assistant"}  # (session, message) -> code
    headers = {m[:2]: nlp.table_headers(m[4]) for m in messages if m[3] == "assistant"}
    fact_rows, readings = [], []
    sentence_no: dict[tuple[str, str], int] = {}  # sentences read so far in each message
    for (message, offset, _), doc in zip(pieces, nlp.read(line for _, _, line in pieces), strict=True):
        session_id, message_id, index, role, text, _, _ = message
        base = {"session_id": session_id, "message_id": message_id, "message_index": index,
                "message_first_line": first_line(text)}
        first = sentence_no.get((session_id, message_id), 0)
        for k, sent in enumerate(doc.sents):
            fact_rows += [{**row, "role": role} for row in facts.fact_rows(sent, base, first + k, offset)]
        if role == "assistant":
            spans = in_line(code[session_id, message_id], offset, len(doc.text))
            readings += [{"session_id": session_id, "message_id": message_id, "reading": json.dumps(r)}
                         for r in claims.read_claims(doc, offset, first, spans,
                                                     headers[session_id, message_id].get(offset))]
        sentence_no[session_id, message_id] = first + sum(1 for _ in doc.sents)
    insert_rows(con, "facts", fact_rows, TABLES["facts"])
    insert_rows(con, "claim_readings", readings, READ_TABLES["claim_readings"])
    read = [{"session_id": m[0], "message_id": m[1], "text_md5": m[5], "reader": reader_version()} for m in messages]
    insert_rows(con, "prose_read", read, READ_TABLES["prose_read"])


def in_line(spans: list[tuple[int, int]], offset: int, length: int) -> list[tuple[int, int]]:
    """The spans that reach into the line at `offset`, in the line's own characters."""
    return [(max(a - offset, 0), b - offset) for a, b in spans if a < offset + length and b > offset]


def first_line(text: str) -> str:
    """How a message is named in the knowledge tables: its first line, cut at 200 characters."""
    return text.strip().split("\n")[0][:200]


def _judge(con: duckdb.DuckDBPyConnection) -> None:
    """Every claim reading judged against the figures of the run it speaks of."""
    from . import verdicts

    readings = execute(con, """
        SELECT c.session_id, c.message_id, p.idx, p.text, p.local_time, c.reading
        FROM claim_readings AS c JOIN prose AS p USING (session_id, message_id)
        ORDER BY c.session_id, p.idx""")
    if not readings:
        return
    measured = _measured_by_run(con)
    runs = _runs(con)
    links: dict[str, list[tuple]] = {}
    for session_id, index, source_id, ordinal in execute(con, """
            SELECT session_id, message_index, source_id, run FROM links ORDER BY session_id, message_index"""):
        links.setdefault(session_id, []).append((index, source_id, ordinal))
    rows = []
    for session_id, message_id, index, text, local_time, reading_json in readings:
        reading = json.loads(reading_json)
        default = verdicts.run_of_message(local_time, index, links.get(session_id, []), runs)
        which = verdicts.run_with_settings(default, local_time, reading["settings"], runs)
        rows.append({"session_id": session_id, "message_id": message_id, "message_index": index,
                     "message_first_line": first_line(text),
                     **verdicts.judged_among_runs(reading, which, local_time, runs, measured)})
    insert_rows(con, "claims", rows, TABLES["claims"])


def _runs(con: duckdb.DuckDBPyConnection) -> list:
    """Every run as `verdicts.Run`, in the order they started."""
    from .verdicts import Run

    return [Run(s, o, t, json.loads(args) if args else None, last) for s, o, t, args, last in execute(con, """
        SELECT r.source_id, r.ordinal, r.started_at, c.args, r.last_seen_at
        FROM runs AS r LEFT JOIN configs AS c USING (config_id)
        ORDER BY r.started_at""")]


CHECKED_FIELDS = ("text", "value", "unit", "verdict", "derivation", "cause", "quantity", "scope", "source_id", "run",
                  "measured", "measured_figure", "measured_source", "arithmetic", "sentence_text")


def check_text(con: duckdb.DuckDBPyConnection, text: str, when: datetime | None = None,
               run: tuple[int, int] | None = None) -> list[dict]:
    """The figures of a text that is not stored (a draft an agent is about to send), each judged as the
    claims of a stored message are: against `run` (source id, ordinal) when given, else against the run
    current at `when` (host-local time; by default the time of the latest line of any run), falling back
    on earlier runs for what the text looks back on. Each row has the fields of CHECKED_FIELDS; nothing is
    stored, so the database may be opened read-only.

    A message of a session is checked only against the figures its cue words name. A draft is checked
    against everything the run measured too, but a figure no cue word names ("4 x 10.42 = ~41.7 GB per
    GPU") is only ever judged against one by a GiB/GB mix-up (the rule of a cue farther than the figure's
    own clause): agreeing with some figure of the run by chance says nothing of what it is."""
    from . import claims, nlp, verdicts

    runs = _runs(con)
    if when is None:
        when = max((r.last_seen or r.started_at for r in runs if r.last_seen or r.started_at), default=None)
    measured = _measured_by_run(con)
    blocks, headers = nlp.code_blocks(text), nlp.table_headers(text)
    pieces = list(nlp.lines(text))
    rows, first = [], 0
    for (offset, _), doc in zip(pieces, nlp.read(line for _, line in pieces), strict=True):
        for reading in claims.read_claims(doc, offset, first, in_line(blocks, offset, len(doc.text)),
                                          headers.get(offset)):
            named = {name for name, _, _ in reading["cues"]}
            dimension = reading["quantity"][2]  # Quantity.dimension
            added = {name for name, q in verdicts.knowledge()["quantities"].items()
                     if q["dimension"] == dimension and name not in named}
            reading["cues"] += [[name, False, len(doc)] for name in sorted(added)]
            which = run or verdicts.run_of_message(when, 0, [], runs)
            which = verdicts.run_with_settings(which, when, reading["settings"], runs)
            judged = verdicts.judged_among_runs(reading, which, when, runs, measured)
            if judged["quantity"] in added and " written as " not in (judged["cause"] or ""):
                judged.update(measured=None, measured_figure=None, measured_source=None, quantity=None, scope=None,
                              verdict="unverifiable" if judged["verdict"] == "consistent" else judged["verdict"])
            rows.append({field: judged.get(field) for field in CHECKED_FIELDS})
        first += sum(1 for _ in doc.sents)
    return rows


def _measured_by_run(con: duckdb.DuckDBPyConnection) -> dict[tuple[int, int], dict]:
    from .verdicts import Measured, knowledge

    slack = {name: q.get("slack", 0.0) for name, q in knowledge()["quantities"].items()}
    found: dict[tuple[int, int], dict] = {}
    for row in named_queries.execute(con, "measurements").itertuples(index=False):
        bytes_per_unit = None if row.bytes_per_unit != row.bytes_per_unit else row.bytes_per_unit  # NaN -> None
        found.setdefault((row.source_id, row.run), {})[(row.quantity, row.scope)] = Measured(
            row.quantity, row.scope, float(row.value), row.unit, bytes_per_unit, row.measured_source,
            slack.get(row.quantity, 0.0) + float(row.spread or 0.0),
            row.derivation if isinstance(row.derivation, str) else None)
    phases = {q["phase"]: name for name, q in knowledge()["quantities"].items() if "phase" in q}
    if phases and found:
        _phase_durations(con, phases, slack, found)
    return found


def _phase_durations(con: duckdb.DuckDBPyConnection, phases: dict[str, str], slack: dict[str, float],
                     found: dict[tuple[int, int], dict]) -> None:
    """Each phase of a start as `logmine query load-time` times it: rank 0's duration, the other ranks'
    spread added to its slack (the phases are derived there, once)."""
    from .verdicts import Measured

    ids = dict(execute(con, "SELECT display, source_id FROM sources"))
    frame = named_queries.execute(con, "load-time")
    for (display, run), ranks in frame.groupby(["source", "run"], sort=False):
        first = ranks.iloc[0]  # rank 0 first, as the query orders them
        for column, name in phases.items():
            value = first[column]
            if value != value or value is None:  # NaN: the phase did not happen in this run
                continue
            spread = float((ranks[column] - value).abs().max())
            found.setdefault((ids[display], int(run)), {})[(name, "rank")] = Measured(
                name, "rank", round(float(value), 4), "s", None, f"{display} (load-time {column}, {first['rank']})",
                slack.get(name, 0.0) + (spread if spread == spread else 0.0),
                f"the {column.removesuffix('_s').replace('_', ' ')} phase of load-time")


def _decisions(con: duckdb.DuckDBPyConnection) -> None:
    """Each user request, the assistant's actions until the next one, and the run they produced."""
    execute(con, (resources.files("logmine.queries") / "knowledge" / "decisions.sql").read_text(encoding="utf-8"))
