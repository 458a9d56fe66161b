"""The `logmine` command: a thin layer over the library API in `logmine.api`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import duckdb

from . import api, named_queries
from .parsers.envelopes import FORMATS as ENVELOPES
from .process_tuning import tune_for_ingest
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
              help="Force the log envelope: " + ", ".join(ENVELOPES) + ".")
@click.option("--tz", default=None, help="UTC offset of the journal's local time, e.g. +01:00 (else inferred).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
def ingest(paths: tuple[str, ...], db: str, envelope: str | None, tz: str | None, as_json: bool) -> None:
    """Ingest SGLang logs/journals and agent transcripts (files, directories, or - for stdin)."""
    tune_for_ingest()
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


RUN_COLUMNS = ["source", "ordinal", "pid", "started_at", "ready_at", "ended_at", "end_reason", "load_seconds",
               "weights_seconds", "ranks", "kv_tokens", "kv_gib_per_rank", "host_cache_gb_total", "http_requests"]


@main.command()
@DB_OPTION
@click.option("--source", default=None, help="Only this source (display name or path).")
@click.option("--format", "fmt", type=click.Choice(OUTPUT_FORMATS), default="table", show_default=True)
def runs(db: str, source: str | None, fmt: str) -> None:
    """Server runs: start, ready, end and why, load time, KV pool, traffic."""
    with api.open_db(db) as con:
        df = api.runs(con, source=source)
    if fmt == "table":
        df = df[RUN_COLUMNS].assign(source=df["source"].map(lambda p: p.rsplit("/", 1)[-1]))
    click.echo(render(df, fmt))


@main.command()
@click.argument("name", required=False)
@DB_OPTION
@click.option("--run", "run_", type=int, default=None, help="Only this run ordinal.")
@click.option("--source", default=None, help="Only this source (display name or path).")
@click.option("--session", default=None, help="Only this agent session id.")
@click.option("--format", "fmt", type=click.Choice(OUTPUT_FORMATS), default="table", show_default=True)
def query(name: str | None, db: str, run_: int | None, source: str | None, session: str | None, fmt: str) -> None:
    """Run a named query from queries/ (without NAME: list them)."""
    if name is None:
        for known in named_queries.names():
            click.echo(f"{known:<16} {named_queries.description(known)}")
        return
    with api.open_db(db) as con:
        click.echo(render(api.query(con, name, run=run_, source=source, session=session), fmt))


@main.command()
@click.argument("statement")
@DB_OPTION
@click.option("--format", "fmt", type=click.Choice(OUTPUT_FORMATS), default="table", show_default=True)
def sql(statement: str, db: str, fmt: str) -> None:
    """Run any SQL over the logmine tables."""
    with api.open_db(db) as con:
        click.echo(render(api.sql(con, statement), fmt))


@main.command()
@click.argument("run_a")
@click.argument("run_b")
@DB_OPTION
@click.option("--format", "fmt", type=click.Choice(OUTPUT_FORMATS), default="table", show_default=True)
def diff(run_a: str, run_b: str, db: str, fmt: str) -> None:
    """Server args that differ between two runs (ORDINAL or SOURCE:ORDINAL)."""
    with api.open_db(db) as con:
        click.echo(render(api.diff(con, run_a, run_b), fmt))


@main.command()
@DB_OPTION
@click.option("-o", "--output", required=True, help="FILE.html, FILE.md, or - for standard output.")
@click.option("--format", "fmt", type=click.Choice(["html", "markdown"]), default=None,
              help="Override the format the output's suffix asks for (html for -).")
@click.option("--run", "runs", type=int, multiple=True, help="Only this run ordinal (repeatable).")
@click.option("--source", default=None, help="Only this source (display name or path).")
@click.option("--session", default=None, help="Only this agent session id.")
def report(db: str, output: str, fmt: str | None, runs: tuple[int, ...], source: str | None,
           session: str | None) -> None:
    """Write a postmortem: what happened, why, what it cost, with the log line behind every figure."""
    from .report import format_for  # here, not at the top: the report loads matplotlib and Jinja2

    fmt = fmt or format_for(output)
    with api.open_db(db) as con:
        text = api.report(con, fmt=fmt, runs=list(runs) or None, source=source, session=session)
    if output == "-":
        click.echo(text)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"{output}: cannot write the report ({exc.strerror})")
    click.echo(f"{output}: {fmt} report, {len(text):,} characters", err=True)


def fail(message: str) -> None:
    click.echo(f"logmine: {message}", err=True)
    sys.exit(2)


def run() -> None:
    """Entry point that turns database errors into one-line messages."""
    try:
        main(standalone_mode=True)
    except duckdb.Error as exc:
        fail(f"database error: {str(exc).splitlines()[0]}")
    except (LookupError, FileNotFoundError) as exc:
        fail(str(exc).strip("'\""))
    except KeyboardInterrupt:
        click.echo("logmine: interrupted; the database's tables are as they were", err=True)
        sys.exit(130)
