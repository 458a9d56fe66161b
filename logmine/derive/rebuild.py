"""Derived tables and views, rebuilt after every ingest from the stored lines and events.

In order: runs, configurations and their diffs (`runs`); the views in `queries/views/` (the parameter
filters of the named queries, and each event table's `<table>_by_run` view); the templates of the lines
no pattern knows (`templates`); the logs of a shape logmine does not read (`drift`); and the links between
agent transcripts and runs (`transcript_links`).
"""

from __future__ import annotations

from datetime import timedelta
from importlib import resources

import duckdb

from ..parsers.events import EVENT_TABLES
from ..store import execute, has_table
from . import drift, runs, transcript_links
from . import line_templates as templates

# Tables whose `_by_run` view is not the plain `events_by_run` macro (see queries/views/by_run.sql).
OWN_BY_RUN_VIEW = {"kv_cache"}


def rebuild(con: duckdb.DuckDBPyConnection, utc_offset: timedelta | None = None,
            open_runs_of: dict[int, str] | None = None) -> None:
    """Recompute runs, configs, config diffs, the derived views, the untyped lines' templates and the
    links between transcripts and runs. With `open_runs_of` (what a follow's batch read: each source id
    with its ingest status), only the runs of the sources that grew that were open, and the ones after
    them, and the runs of new or replaced sources (`runs.update_open_runs`); the views are made only
    where they are missing."""
    if open_runs_of is None:
        runs.rebuild_runs(con)
    else:
        runs.update_open_runs(con, {s for s, status in open_runs_of.items() if status == "grown"},
                              {s for s, status in open_runs_of.items() if status in ("new", "replaced")})
    if open_runs_of is None or not has_table(con, f"{EVENT_TABLES[-1].name}_by_run"):
        create_views(con)  # a follow's batches keep the views its first commit made
    if has_table(con, "lines"):
        templates.mine(con)
        drift.rebuild_new_shapes(con)
    if has_table(con, "sessions"):
        transcript_links.link_transcripts(con, utc_offset)


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """Run every `queries/views/*.sql` document, with each event table's `<table>_by_run` view made right
    after `by_run.sql` (which defines the `events_by_run` macro they are made of), so that the documents
    after it (`kv_pools.sql`) can read them.

    The per-table views are one line each over the `events_by_run` table macro, since a view cannot
    take the table it reads as a parameter.
    """
    for document in sorted(resources.files("logmine.queries").joinpath("views").iterdir(), key=lambda f: f.name):
        if document.name.endswith(".sql"):
            con.execute(document.read_text())
        if document.name == "by_run.sql":
            for table in EVENT_TABLES:
                if table.name not in OWN_BY_RUN_VIEW:
                    execute(con, f"CREATE OR REPLACE VIEW {table.name}_by_run AS "
                                 f"SELECT * FROM events_by_run('{table.name}')")
