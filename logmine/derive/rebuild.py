"""Derived tables and views, rebuilt after every ingest from the stored lines and events.

In order: runs, configurations and their diffs (`runs`); the views in `queries/views/` (the parameter
filters of the named queries, and each event table's `<table>_by_run` view); the templates of the lines
no pattern knows (`templates`); the logs of a shape logmine does not read (`drift`); and the links
between agent transcripts and runs (`transcript_links`).
"""

from __future__ import annotations

from datetime import timedelta
from importlib import resources

import duckdb

from ..parsers.events import EVENT_TABLES
from ..store import execute
from . import drift, runs, transcript_links
from . import line_templates as templates

# Tables whose `_by_run` view is not the plain `events_by_run` macro (see queries/views/by_run.sql).
OWN_BY_RUN_VIEW = {"kv_cache"}


def rebuild(con: duckdb.DuckDBPyConnection, utc_offset: timedelta | None = None) -> None:
    """Recompute runs, configs, config diffs, the derived views, the untyped lines' templates and the
    links between transcripts and runs."""
    runs.rebuild_runs(con)
    create_views(con)
    if has_table(con, "lines"):
        templates.mine(con)
        drift.rebuild_new_shapes(con)
    if has_table(con, "sessions"):
        transcript_links.link_transcripts(con, utc_offset)


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """Run every `queries/views/*.sql` document, then make each event table's `<table>_by_run` view.

    The per-table views are one line each over the `events_by_run` table macro, since a view cannot
    take the table it reads as a parameter.
    """
    for document in sorted(resources.files("logmine.queries").joinpath("views").iterdir(), key=lambda f: f.name):
        if document.name.endswith(".sql"):
            con.execute(document.read_text())
    for table in EVENT_TABLES:
        if table.name not in OWN_BY_RUN_VIEW:
            execute(con, f"CREATE OR REPLACE VIEW {table.name}_by_run AS SELECT * FROM events_by_run('{table.name}')")


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(execute(con, "SELECT 1 FROM information_schema.tables WHERE table_name = ?", [name]))
