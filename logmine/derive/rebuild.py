"""Derived tables and views, rebuilt after every ingest from the stored lines and events.

In order: runs, configurations and their diffs (`runs`); the views in `queries/views/` (the parameter
filters of the named queries, and each event table's `<table>_by_run` view); the templates of the lines
no pattern knows (`templates`); the logs of a shape logmine does not read (`drift`); and the links between
agent transcripts and runs (`transcript_links`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator
from datetime import timedelta
from importlib import resources
from importlib.resources.abc import Traversable

import duckdb

from ..parsers.events import EVENT_TABLES
from ..store import execute, has_table, save_setting, setting
from . import drift, runs, transcript_links
from . import line_templates as templates

# Tables whose `_by_run` view is not the plain `events_by_run` macro (see queries/views/by_run.sql).
OWN_BY_RUN_VIEW = {"kv_cache"}


def rebuild(con: duckdb.DuckDBPyConnection, utc_offset: timedelta | None = None,
            read: dict[int, str] | None = None, open_runs_only: bool = False) -> None:
    """Recompute runs, configs, config diffs, the derived views, the untyped lines' templates and the
    links between transcripts and runs.

    `read` is what the ingest read: each source id with its ingest status. The runs are derived again only
    where the new lines can change them (`runs.update_open_runs`: the run of each source that grew that was
    open, and the ones after it, and the runs of new or replaced sources) with `open_runs_only` (a follow's
    batch), or when every source read only grew or was unchanged and the derived tables were made by this
    code (`derivation_digest`); the views are then made only where they are missing. Otherwise (a first
    ingest, a new, replaced or copied file, a database derived by other code) every run of every source is
    derived again.
    """
    digest = derivation_digest()
    partial = read is not None and (open_runs_only or (set(read.values()) <= {"grown", "unchanged"}
                                                       and setting(con, "derived_by") == digest))
    if partial:
        runs.update_open_runs(con, {s for s, status in read.items() if status == "grown"},
                              {s for s, status in read.items() if status in ("new", "replaced", "generation")})
    else:
        runs.rebuild_runs(con)
    if not partial or not has_table(con, f"{EVENT_TABLES[-1].name}_by_run"):
        create_views(con)
    if not open_runs_only:
        save_setting(con, "derived_by", digest)
    if has_table(con, "lines"):
        templates.mine(con)
        drift.rebuild_new_shapes(con)
    if has_table(con, "sessions"):
        transcript_links.link_transcripts(con, utc_offset)


@functools.cache
def derivation_digest() -> str:
    """A digest of the code the derived tables come from: this package, the parsers' format knowledge it
    reads (kinds, families, catalogue) and the views' SQL. A database derived by other code (an older
    logmine) is derived again whole at its next ingest, not only where it grew."""
    digest = hashlib.blake2b(digest_size=16)
    for package in ("logmine.derive", "logmine.parsers", "logmine.queries"):
        for document in _code_files(resources.files(package)):
            digest.update(document.name.encode())
            digest.update(document.read_bytes())
    return digest.hexdigest()


def _code_files(folder: Traversable) -> Iterator[Traversable]:
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            if entry.name != "__pycache__":
                yield from _code_files(entry)
        elif entry.name.endswith((".py", ".sql", ".tsv")):
            yield entry


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
