"""The selection vocabulary every command and query shares: a source named by a path or a unique suffix of it,
a run by its ordinal (of the only source with runs) or SOURCE:ORDINAL, a session by a unique start of its id;
refused in one line (LookupError) naming what exists when it names nothing, or several things."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..terminal.table_view import number_spans
from . import named_queries

if TYPE_CHECKING:
    import duckdb


def checked_parameters(name: str, params: dict[str, object]) -> dict[str, object]:
    """`params`, refused (LookupError) when one is given that the query does not read: `runs` filtered by a
    session would silently give every run."""
    known = named_queries.parameters(name)
    unread = [p for p, v in params.items() if v is not None and p not in known]
    if unread:
        taken = ", ".join(known) or "none"
        raise LookupError(f"query {name} has no {' or '.join(unread)} parameter (its parameters: {taken})")
    return params


def check_selection(con: duckdb.DuckDBPyConnection, **params: object) -> dict[str, object]:
    """`params` with `source` resolved to its display name; LookupError naming what exists when the
    source, run or session asked for is not in the database."""
    source, run_, session = params.get("source"), params.get("run"), params.get("session")
    if source is not None:
        params["source"] = resolve_source(con, str(source))
    if run_ is not None and params.get("source") is None:
        # One rule everywhere: a bare ordinal is of the only source with runs; where several have runs it
        # names none of them (run 1 of every log is no answer), and the error says which there are.
        params["source"] = sole_source_with_runs(con, str(run_), hint="give --source too")
    if run_ is not None:
        found = named_queries.fetch(con, """
            SELECT s.display, list(r.ordinal ORDER BY r.ordinal) FROM runs AS r JOIN sources AS s USING (source_id)
            WHERE $source IS NULL OR s.display = $source GROUP BY ALL ORDER BY min(r.source_id)""",
            source=params.get("source")).rows
        if not any(run_ in ordinals for _, ordinals in found):
            names = source_names(con)  # as among all sources: `journal.txt` alone could be any of them
            where = f" in {names[params['source']]}" if source is not None else ""
            known = [f"{names[display]}: {number_spans(ordinals)}" for display, ordinals in found]
            raise LookupError(f"no run {run_}{where}; the runs are {_listing(known, separator='; ')}")
    if session is not None:
        params["session"] = resolve_session(con, str(session))
    return params


def resolve_session(con: duckdb.DuckDBPyConnection, session: str) -> str:
    """The session id named whole or by a unique start (as tables and reports shorten it, `ses_31e9…`)."""
    ids = [r[0] for r in named_queries.fetch(con, "SELECT id FROM sessions ORDER BY id").rows]
    start = session.removesuffix("…")
    matches = [i for i in ids if i == session] or [i for i in ids if start and i.startswith(start)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise LookupError(f"session {session!r} begins several sessions: {_listing(matches)}")
    raise LookupError(f"no session {session!r}; the sessions are {_listing(ids)}")


def resolve_source(con: duckdb.DuckDBPyConnection, source: str) -> str:
    """The display name of the source named by its path, display name, or a unique suffix: whole parts of
    its path first (`kimi-k25/journal.txt`), else any end of it (`qwen3_32b.log`)."""
    known = named_queries.fetch(con, "SELECT display, path FROM sources WHERE kind = 'log' ORDER BY source_id").rows
    exact = [d for d, p in known if source in (d, p)]
    matches = exact or [d for d, p in known if d.endswith("/" + source) or p.endswith("/" + source)] \
        or [d for d, p in known if p.endswith(source)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise LookupError(f"source {source!r} names several sources: {_listing(matches)}")
    raise LookupError(f"no source {source!r}; the sources are "
                      f"{_listing(shortest_unique_suffixes([d for d, _ in known]))}")


def _listing(names: list[str], limit: int = 8, separator: str = ", ") -> str:
    if not names:
        return "none"
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return separator.join(names[:limit]) + more


def resolve_run(con: duckdb.DuckDBPyConnection, ref: str) -> tuple[str, int]:
    """The display name of the source and the ordinal of the run `ref` names; LookupError when it names
    none, or could name a run of several sources (a picked one would compare the wrong server)."""
    source, _, ordinal = ref.rpartition(":")
    if not ordinal.isdigit():
        raise LookupError(f"run {ref!r}: expected ORDINAL or SOURCE:ORDINAL")
    checked = check_selection(con, source=source or sole_source_with_runs(con, ref), run=int(ordinal))
    return checked["source"], int(ordinal)

# The ends a postmortem looks for first: the server died, after becoming ready or before.
BAD_ENDS = ("crashed", "failed")


def select_run(con: duckdb.DuckDBPyConnection, run: str | int | None = None,
               source: str | None = None) -> tuple[str, int]:
    """The run a postmortem looks at, as (source display name, ordinal): the one `run` names (ORDINAL, of
    `source` when given or else of the only source with runs, or SOURCE:ORDINAL); without `run`, the last
    to start of those that crashed or failed (of `source` when given), else the last to start. LookupError
    when that names no run or several (the same ordinal in several sources)."""
    if source is not None:
        source = resolve_source(con, source)
    if run is None:
        return _last_run(con, source)
    ref = str(run)
    named, ordinal = resolve_run(con, ref if source is None or ":" in ref else f"{source}:{ref}")
    if source is not None and named != source:
        names = source_names(con)
        raise LookupError(f"run {ref!r} is of {names[named]}, not of the source asked for, {names[source]}")
    return named, ordinal


def _last_run(con: duckdb.DuckDBPyConnection, source: str | None) -> tuple[str, int]:
    """The last run to start that ended badly, else the last to start (ties: the later source's)."""
    found = named_queries.fetch(con, """
        SELECT s.display, r.ordinal FROM runs AS r JOIN sources AS s USING (source_id)
        WHERE $source IS NULL OR s.display = $source
        ORDER BY list_contains($bad_ends, r.end_reason) DESC, r.started_at DESC NULLS LAST, r.source_id DESC,
                 r.ordinal DESC
        LIMIT 1""", source=source, bad_ends=list(BAD_ENDS)).rows
    if not found:
        raise LookupError(f"no server runs in {source_names(con)[source]}" if source else
                          "no server runs in the database (ingest a server log first)")
    display, ordinal = found[0]
    return display, ordinal


def sole_source_with_runs(con: duckdb.DuckDBPyConnection, ref: str, hint: str | None = None) -> str | None:
    """The source a bare ORDINAL means: the only one with runs (None when none has any). Where several have
    runs, LookupError says which and how to name one (`hint`, else SOURCE:ORDINAL)."""
    with_runs = [display for (display,) in named_queries.fetch(con, """
        SELECT s.display FROM runs AS r JOIN sources AS s USING (source_id)
        GROUP BY s.display ORDER BY min(r.source_id)""").rows]
    if len(with_runs) > 1:
        names = source_names(con)
        hint = hint or f"name it as SOURCE:ORDINAL, e.g. {names[with_runs[0]]}:{ref}"
        raise LookupError(f"run {ref!r}: several sources have runs ({_listing([names[d] for d in with_runs])}); "
                          f"{hint}")
    return with_runs[0] if with_runs else None


def source_names(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Each log source's display name cut to the last components that still tell it from the others, as
    `logmine runs` shows them: `journal.txt` alone, `demo/journal.txt` beside `kimi-k25/journal.txt`."""
    displays = [d for (d,) in named_queries.fetch(
        con, "SELECT display FROM sources WHERE kind = 'log' ORDER BY source_id").rows]
    return dict(zip(displays, shortest_unique_suffixes(displays), strict=True))


def shortest_unique_suffixes(paths: list[str]) -> list[str]:
    """Each path cut to its last components, as few as keep distinct paths distinct."""
    distinct = sorted(set(paths))
    short = {}
    for path in distinct:
        parts = path.split("/")
        for n in range(1, len(parts) + 1):
            suffix = "/".join(parts[-n:])
            if sum(1 for other in distinct if other == suffix or other.endswith("/" + suffix)) == 1:
                short[path] = suffix
                break
        else:
            short[path] = path
    return [short[p] for p in paths]
