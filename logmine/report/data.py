"""Gather what the report shows from a logmine database: named queries, filtered to the runs, source
and session asked for, and the evidence lines behind the figures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import duckdb
import pandas as pd

from ..query import named_queries
from ..query.selection import source_names
from ..store import has_table
from .model import Citation

# Per-run queries, each keyed by the column that holds the run ordinal.
RUN_QUERIES = {"runs": "ordinal", "load-time": "run", "memory-budget": "run", "ends": "run",
               "evidence": "run", "serving": "run", "serving-trend": "run"}
SESSION_QUERIES = ("links", "requests", "sessions", "tool-calls")
# The column of each session query's rows that names their session.
SESSION_COLUMNS = {"requests": "session_id", "sessions": "id", "tool-calls": "session_id"}
CLAIMS_QUERY = "claims"
CITED_CHARS = 600


@dataclass
class ReportData:
    """The rows each section is made from; `claims` is None when the database cannot answer it."""

    frames: dict[str, pd.DataFrame]
    config_diffs: pd.DataFrame
    messages: pd.DataFrame
    # Every log source of the database by display name -> the name the report gives it (`api.source_names`).
    source_names: dict[str, str]
    claims: pd.DataFrame | None = None
    # What the next configuration of the last run would cost (`logmine.query.plan`): its options and host audit.
    next_configuration: dict | None = None
    _evidence: dict[tuple[str, int, str], list[tuple[str, Citation]]] = field(default_factory=dict)

    def __getitem__(self, name: str) -> pd.DataFrame:
        return self.frames[name]

    def source_name(self, display: str) -> str:
        """A source as `logmine runs` names it: `journal.txt` alone, `demo/journal.txt` beside another
        journal.txt, so that a citation says which file it is in."""
        return self.source_names.get(display, display)

    def cite_line(self, source: str, line_no: int, text: str | None) -> Citation:
        """A log line as evidence: `file:line`, the source's full name, and the line (a traceback's first)."""
        first = (text or "").split("\n", 1)[0]
        return Citation(f"{self.source_name(source)}:{line_no}", source, clip(first))

    def cite(self, source: str, run: int, figure: str, rank: str | None = None) -> list[Citation]:
        """The line behind a figure of a run: the given rank's, else the first rank's (rank 0)."""
        found = self._evidence.get((source, int(run), figure), [])
        if rank is not None:
            found = [f for f in found if f[0] == rank] or found
        return [found[0][1]] if found else []

    def cite_message(self, session: str, message_index: int) -> list[Citation]:
        """A transcript message as evidence: its session, index and text."""
        rows = self.messages[(self.messages["session_id"] == session) & (self.messages["idx"] == message_index)]
        if rows.empty:
            return []
        row = rows.iloc[0]
        return [Citation(f"{short_session(session)}/message {message_index}", f"session {session}, {row['id']}",
                         clip(f"{row['role']}: {row['text'] or ''}"))]


def gather(con: duckdb.DuckDBPyConnection, runs: Sequence[int] | None = None, source: str | None = None,
           session: str | None = None) -> ReportData:
    frames = {}
    for name, run_column in RUN_QUERIES.items():
        df = named_queries.execute(con, name, source=source, run=None, bucket_s=None)
        frames[name] = df[df[run_column].isin(runs)].reset_index(drop=True) if runs else df
    frames["runs"] = frames["runs"].merge(last_seen(con), on=["source", "ordinal"], how="left")
    frames["new-shapes"] = named_queries.execute(con, "new-shapes", source=source) \
        if has_table(con, "new_shape") else pd.DataFrame(columns=["source", "shape", "lines", "untyped", "line"])
    wanted = set(zip(frames["runs"]["source"], frames["runs"]["ordinal"], strict=True))
    for name in SESSION_QUERIES:
        frames[name] = named_queries.execute(con, name, session=session, source=source)
    # A report of one source holds only the sessions that changed its server (linked to any of its runs).
    linked = set(frames["links"]["session"]) if source else None
    if runs:
        frames["links"] = frames["links"][frames["links"]["run"].isin(runs)].reset_index(drop=True)
    for name, column in SESSION_COLUMNS.items():
        frames[name] = of_sessions(frames[name], column, linked)
    diffs = named_queries.execute(con, "config-diff", source=source, run=None)
    keep = [(s, r) in wanted for s, r in zip(diffs["source"], diffs["to_run"], strict=True)]
    diffs = diffs.loc[pd.Series(keep, index=diffs.index, dtype=bool)]
    messages = of_sessions(named_queries.execute_sql(con, """
        SELECT session_id, idx, id, role, text FROM messages WHERE chosen(session_id, $session)
        ORDER BY session_id, idx""", session=session), "session_id", linked)
    checked = claims(con, session)
    checked = None if checked is None else of_sessions(checked, "session", linked)
    data = ReportData(frames, diffs.reset_index(drop=True), messages, source_names(con), checked,
                      next_configuration(con, frames["memory-budget"]))
    for row in frames["evidence"].itertuples(index=False):
        citation = data.cite_line(row.source, row.line_no, row.text)
        data._evidence.setdefault((row.source, int(row.run), row.figure), []).append((row.rank, citation))
    return data


def next_configuration(con: duckdb.DuckDBPyConnection, budget: pd.DataFrame) -> dict | None:
    """The options to more KV capacity of the last reported run that allocated a KV pool, and its host audit."""
    from ..query import host_memory, plan

    pools = budget[(budget["rank"] != "all ranks") & budget["kv_tokens"].notna()]
    if pools.empty:
        return None
    source, run = pools.iloc[-1]["source"], int(pools.iloc[-1]["run"])
    try:
        base = plan.baseline(con, source, run)
    except plan.PlanError:  # a log without the figures the formula needs: the section is left out
        return None
    audit = host_memory.audit(con, source, run)
    return {"source": source, "run": run, "options": plan.options(base, audit["host_available_gb"]),
            "audit": audit}


def of_sessions(df: pd.DataFrame, column: str, sessions: set[str] | None) -> pd.DataFrame:
    """The rows of the given sessions (all rows when `sessions` is None: no source was asked for)."""
    return df if sessions is None else df[df[column].isin(sessions)].reset_index(drop=True)


def last_seen(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The time of each run's last line: how long the log goes on after a run that never ended (one cut
    off while it loaded ends at its last line, not at its start)."""
    return named_queries.execute_sql(con, """
        SELECT s.display AS source, r.ordinal, r.last_seen_at FROM runs AS r JOIN sources AS s USING (source_id)""")


def claims(con: duckdb.DuckDBPyConnection, session: str | None) -> pd.DataFrame | None:
    """Claims the agent made, checked against the logs, once the knowledge-extraction query exists;
    None when it does not or cannot run on this database."""
    if CLAIMS_QUERY not in named_queries.names():
        return None
    try:
        df = named_queries.execute(con, CLAIMS_QUERY, session=session)
    except duckdb.Error:
        return None
    expected = {"session", "message", "text", "value", "unit", "measured", "measured_source", "verdict"}
    return df if expected <= set(df.columns) else None


def clip(text: str) -> str:
    """A cited line short enough to show on hover (a server_args dump is 10-14 KB)."""
    return text if len(text) <= CITED_CHARS else text[:CITED_CHARS - 1] + "…"


def short_session(session: str) -> str:
    return session if len(session) <= 14 else session[:12] + "…"
