"""The `logmine` command: a thin layer over the library API (`logmine.ingest`, `logmine.queries`)."""

from __future__ import annotations

import json
import sys

import click
import duckdb

from . import api
from .render import FORMATS as OUTPUT_FORMATS
from .render import render
from .sources import InputError
from .store import DEFAULT_DB

DB_OPTION = click.option("--db", default=DEFAULT_DB, show_default=True, help="DuckDB database file.")


@click.group()
@click.version_option(package_name="logmine")
def main() -> None:
    """Typed events from SGLang journals and coding-agent transcripts, in DuckDB."""


@main.command()
@click.argument("paths", nargs=-1, required=True)
@DB_OPTION
@click.option("--format", "envelope", default=None,
              help="Force the log envelope: journal-short, journal-iso, journal-unix, journal-json, stamped, plain.")
@click.option("--tz", default=None, help="UTC offset of the journal's local time, e.g. +01:00 (else inferred).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
def ingest(paths: tuple[str, ...], db: str, envelope: str | None, tz: str | None, as_json: bool) -> None:
    """Ingest SGLang logs/journals and agent transcripts (files, directories, or - for stdin)."""
    with api.progress_bar(enabled=not as_json) as progress:
        try:
            report = api.ingest(list(paths), db=db, envelope=envelope, tz=tz, progress=progress)
        except (InputError, FileNotFoundError) as exc:
            fail(str(exc))
    summary = report.as_dict()
    if as_json:
        click.echo(json.dumps(summary, indent=2, default=str))
        return
    click.echo(api.summary_text(summary))


@main.command()
@DB_OPTION
@click.option("--format", "fmt", type=click.Choice(OUTPUT_FORMATS), default="table", show_default=True)
@click.option("--limit", default=50, show_default=True, help="How many templates to show.")
def unparsed(db: str, fmt: str, limit: int) -> None:
    """Lines logmine could not type, grouped by template, most frequent first."""
    with api.open_db(db) as con:
        click.echo(render(api.unparsed(con, limit=limit), fmt))


def fail(message: str) -> None:
    click.echo(f"logmine: {message}", err=True)
    sys.exit(2)


def run() -> None:
    """Entry point that turns database errors into one-line messages."""
    try:
        main(standalone_mode=True)
    except duckdb.Error as exc:
        fail(f"database error: {str(exc).splitlines()[0]}")
