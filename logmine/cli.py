"""The `logmine` command: a thin layer over the library API in `logmine.api`.

Each command imports what it needs inside its function (the ingest machinery, pandas, JupyterLab), so
that `logmine --help` and a query start fast.
"""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from . import api
from .terminal.pager import emit, emit_pieces
from .terminal.render import FORMATS as OUTPUT_FORMATS
from .terminal.render import TABLE_MAX_ROWS, clip, render, render_pieces, select_chunks, visible
from .terminal.suggestions import nearest
from .terminal.table_view import TableView

if TYPE_CHECKING:
    import pandas as pd

# Exit codes: 1 when some inputs could not be read (the others were stored), 2 when nothing was done.
INPUT_FAILED = 1
DB_OPTION = click.option("--db", default=api.DEFAULT_DB, show_default=True, help="DuckDB database file.")


class EnvelopeOption(click.Option):
    """ingest's --format, whose help lists the envelopes: read only when help is shown, since the
    parsers take a quarter second to import."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = "Force the log envelope: " + ", ".join(api.envelope_formats()) + "."
        return super().get_help_record(ctx)


def output_options(command: Callable) -> Callable:
    """--format, --columns and --no-pager, for every command that prints a result."""
    command = click.option("--no-pager", is_flag=True, help="Print long output directly, not through less.")(command)
    command = click.option("--columns", default=None, metavar="A,B,...",
                           help="Only these columns, in this order (`all`: every column).")(command)
    return click.option("--format", "fmt", type=click.Choice(OUTPUT_FORMATS), default="table", show_default=True,
                        help="table: what fits the terminal; the others give every column and row.")(command)


def show(data: api.Rows | api.RowChunks | pd.DataFrame, fmt: str, columns: str | None, no_pager: bool,
         key_columns: Sequence[str] = (), view: TableView | None = None) -> None:
    """Print a result: a table fitted to the terminal (shaped by the query's `view`), or every row in
    `fmt`, written as it is read when the result comes in chunks."""
    picked = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    if picked and view:  # a column asked for by the label the table shows it under (`run` for `ordinal`)
        by_label = {label: name for name, label in view.labels.items()}
        picked = [c if c in data.columns else by_label.get(c, c) for c in picked]
    if isinstance(data, api.RowChunks):
        emit_pieces(render_pieces(select_chunks(data, picked) if picked else data, fmt))
        return
    emit(render(data, fmt, columns=picked, key_columns=key_columns, view=view), pager=fmt == "table" and not no_pager)


class Commands(click.Group):
    """The commands, where a mistyped one is answered with the nearest (`did you mean runs?`) and a query's
    name with the command that runs it (`logmine errors` -> `logmine query errors`)."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            queries = api.query_names()
            if name in queries:
                fail(f"no command {name!r}; the query is run by `logmine query {name}`")
            near = [f"`logmine {c}`" for c in nearest(name, sorted(self.commands))]
            near += [f"`logmine query {q}`" for q in nearest(name, queries)]
            fail(f"no command {name!r}; " + (f"did you mean {' or '.join(near[:3])}?" if near else
                                              "`logmine --help` lists the commands"))
        return super().resolve_command(ctx, args)


@click.group(cls=Commands, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", default=None, help=f"With no command: the summary of this database (default {api.DEFAULT_DB}).")
@click.version_option(package_name="logmine")
@click.pass_context
def main(ctx: click.Context, db: str | None) -> None:
    """Typed events from SGLang journals and coding-agent transcripts, in DuckDB.

    With no command, the story of the database (`logmine summary`) when there is one, else this help."""
    if ctx.invoked_subcommand is not None:
        if db is not None:  # `logmine --db FILE runs` means that database, as `logmine runs --db FILE` does
            ctx.default_map = {name: {"db": db} for name in ctx.command.commands} | (ctx.default_map or {})
        return
    if db is None and not Path(api.DEFAULT_DB).exists():
        click.echo(ctx.get_help())
        return
    ctx.invoke(summary, db=db or api.DEFAULT_DB)


@main.command(short_help="Store SGLang logs and agent transcripts in the database.")
@click.argument("paths", nargs=-1, required=True)
@DB_OPTION
@click.option("--format", "envelope", default=None, cls=EnvelopeOption)
@click.option("--tz", default=None, help="UTC offset of the journal's local time, e.g. +01:00 (else inferred).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--redact", is_flag=True,
              help="Replace secrets (tokens, keys, passwords) before they are stored, now and in every later "
                   "ingest into this database.")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Processes that share the parse (default: one per core; 1: this one alone; 2: a parse "
                   "worker beside it, the next file read ahead; 3+: several files, or byte ranges of one "
                   "large journal, at once).")
@click.option("--replace", is_flag=True,
              help="A log truncated or rewritten since its last ingest replaces its stored rows (by default they "
                   "are kept as an earlier generation, NAME@N, beside the new content).")
@click.option("--follow-links", is_flag=True,
              help="In the folders named, follow symlinks that lead outside them too (never into /proc, /sys).")
@click.option("--engine", type=click.Choice(["duckdb", "spark"]), default="duckdb", show_default=True,
              help="spark: parse the log files in Spark tasks into a Parquet folder (--out) instead of --db; "
                   "PATHS may then be Hadoop URIs too (hdfs://, s3a://, gs://, file://...).")
@click.option("--master", default="local[2]", show_default=True, help="Spark master URL (with --engine spark).")
@click.option("--out", default=None, metavar="FOLDER",
              help="The Parquet folder a Spark ingest writes (an old one replaced once the new one is complete).")
def ingest(paths: tuple[str, ...], db: str, envelope: str | None, tz: str | None, as_json: bool,
           redact: bool, jobs: int | None, replace: bool, follow_links: bool, engine: str, master: str,
           out: str | None) -> None:
    """Ingest SGLang logs/journals and agent transcripts (files, directories, or - for stdin)."""
    api.prepare_ingest(list(paths), db, jobs, spark=engine == "spark")
    if engine == "spark":
        spark_ingest_command(list(paths), out, master, envelope, as_json, redact)
        return

    with api.progress_bar(enabled=not as_json) as progress:
        try:
            report = api.ingest(list(paths), db=db, envelope=envelope, tz=tz, progress=progress, redact=redact,
                                jobs=jobs, follow_links=follow_links, replace=replace)
        except (api.InputError, FileNotFoundError) as exc:
            fail(str(exc))
    api.check_interrupted(committed=True)
    summary = report.as_dict()
    if as_json:
        click.echo(json.dumps(summary, indent=2, default=str))
    else:
        emit(api.summary_text(summary), pager=False)
    for line in summary["failed"]:
        click.echo(f"logmine: {visible(line, one_line=True)}", err=True)
    if summary["failed"]:
        sys.exit(INPUT_FAILED)


@main.command(short_help="Keep the database current while the server runs, and raise alerts.")
@click.argument("paths", nargs=-1)
@DB_OPTION
@click.option("--unit", default=None, help="Follow this systemd unit's journal (journalctl -u UNIT -f).")
@click.option("--journal-file", default=None, metavar="FILE", help="Follow one journal file (journalctl --file).")
@click.option("--journal-dir", default=None, metavar="DIR",
              help="Follow a folder of journal files (journalctl --directory).")
@click.option("--rules", default=None, metavar="FILE", help="A TOML file of alert rules, added to the built-in ones.")
@click.option("--no-builtin-rules", is_flag=True, help="Only the rules of --rules.")
@click.option("--on-alert", default=None, metavar="CMD",
              help="Run CMD (by the shell) for each alert, the alert as JSON on stdin.")
@click.option("--alerts-jsonl", default=None, metavar="FILE", help="Append each alert to FILE as one JSON line.")
def follow(paths: tuple[str, ...], db: str, unit: str | None, journal_file: str | None, journal_dir: str | None,
           rules: str | None, no_builtin_rules: bool, on_alert: str | None, alerts_jsonl: str | None) -> None:
    """Follow a journal (--unit, --journal-file, --journal-dir) and/or log files, folders and agent transcripts
    (PATHS) into the database until Ctrl-C, which stops after the commit under way; readers (query, report,
    notebooks) open the database between commits."""
    from .terminal.follow_status import StatusView

    view = StatusView(sys.stdout, sys.stdout.isatty())
    try:
        follower = api.follow(db, unit=unit, journal_file=journal_file, journal_dir=journal_dir, paths=list(paths),
                              rules=rules, builtin_rules=not no_builtin_rules, on_alert=on_alert,
                              alerts_jsonl=alerts_jsonl, sinks=[view], on_commit=view.show)
        follower.on_wait = view.above
        follower.stop_on_signals()
        follower.run()
    except (api.FollowError, api.RuleError) as exc:
        fail(str(exc))


def spark_ingest_command(paths: list[str], out: str | None, master: str, envelope: str | None, as_json: bool,
                         redact: bool) -> None:
    if not out:
        fail("--engine spark writes a Parquet folder: give --out FOLDER")
    try:
        report = api.spark_ingest(paths, out, master=master, envelope=envelope, redact=redact)
    except (api.InputError, api.SparkUnavailable) as exc:
        fail(str(exc))
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        for s in report["sources"]:
            click.echo(f"{visible(s['path'], one_line=True)}: {s['lines_read']:,} lines read, "
                       f"{s['lines_typed']:,} typed")
        click.echo(f"total: {report['lines_read']:,} lines read, {report['lines_typed']:,} typed -> {out}")
    for line in report["failed"]:
        click.echo(f"logmine: {visible(line, one_line=True)}", err=True)
    if report["failed"]:
        sys.exit(INPUT_FAILED)


@main.command(short_help="Lines logmine could not type, grouped by template.")
@DB_OPTION
@click.option("--limit", default=50, show_default=True, help="How many templates to show.")
@click.option("--source", default=None, help="Only this source (path, or any suffix of it that names one).")
@output_options
def unparsed(db: str, limit: int, source: str | None, fmt: str, columns: str | None, no_pager: bool) -> None:
    """Lines logmine could not type, grouped by template, most frequent first."""
    with api.open_db(db) as con:
        rows = api.query_rows(con, "unparsed", limit=limit, source=source)
    show(rows, fmt, columns, no_pager, view=api.query_view("unparsed"))


@main.command(short_help="Server runs: start, ready, end and why, load, memory.")
@DB_OPTION
@click.option("--run", "run_", type=int, default=None, help="Only this run ordinal.")
@click.option("--source", default=None, help="Only this source (path, or any suffix of it that names one).")
@output_options
def runs(db: str, run_: int | None, source: str | None, fmt: str, columns: str | None, no_pager: bool) -> None:
    """Server runs: start, ready, end and why, load time, KV pool, traffic."""
    query_command(db, "runs", fmt, columns, no_pager, run=run_, source=source)


@main.command(short_help="The story in one screen: the report's summary and the runs.")
@DB_OPTION
@click.option("--source", default=None, help="Only this source (path, or any suffix of it that names one).")
@click.option("--no-pager", is_flag=True, help="Print long output directly, not through less.")
def summary(db: str, source: str | None = None, no_pager: bool = False) -> None:
    """The report's summary (`logmine report` gives the evidence of each sentence), then the runs."""
    width = min(shutil.get_terminal_size().columns, 120) if sys.stdout.isatty() else 100
    with api.open_db(db) as con:
        sentences = api.summary(con, source=source)
        rows = api.query_rows(con, "runs", at_most=TABLE_MAX_ROWS, source=source)
    story = "\n\n".join(textwrap.fill(s, width=width) for s in sentences) or "No server runs in the database."
    table = render(rows, "table", view=api.query_view("runs"))
    emit(f"{story}\n\n{table}", pager=not no_pager)


class QueryCommand(click.Command):
    """`logmine query`, whose help lists the named queries."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = api.query_names()
        room = (formatter.width or 80) - formatter.current_indent - max(map(len, names)) - 6
        with formatter.section("Named queries (`logmine query` gives the whole descriptions)"):
            formatter.write_dl([(name, clip(api.query_summary(name), room)) for name in names])


@main.command(cls=QueryCommand, short_help="Run a named query (without NAME: list them).")
@click.argument("name", required=False)
@DB_OPTION
@click.option("--run", "run_", type=int, default=None, help="Only this run ordinal.")
@click.option("--source", default=None, help="Only this source (path, or any suffix of it that names one).")
@click.option("--session", default=None, help="Only this agent session id.")
@click.option("--data", default=None, metavar="FOLDER",
              help="Query a folder written by `logmine export --parquet` (or a Spark ingest) instead of --db.")
@click.option("--engine", type=click.Choice(["duckdb", "spark"]), default="duckdb", show_default=True,
              help="spark: run the query on Spark SQL (translated from DuckDB's dialect); needs --data.")
@click.option("--master", default="local[2]", show_default=True, help="Spark master URL (with --engine spark).")
@output_options
def query(name: str | None, db: str, run_: int | None, source: str | None, session: str | None, data: str | None,
          engine: str, master: str, fmt: str, columns: str | None, no_pager: bool) -> None:
    """Run a named query from queries/ (without NAME: list them)."""
    if name is None:
        width = shutil.get_terminal_size().columns
        for known in api.query_names():  # each description wrapped at words, under its name's column
            click.echo(textwrap.fill(api.query_description(known), width=max(width, 40),
                                     initial_indent=f"{known:<16} ", subsequent_indent=" " * 17))
        return
    if engine == "spark":
        if not data:
            fail("--engine spark reads a Parquet folder: give --data FOLDER (`logmine export --parquet` writes one)")
        view = api.query_view(name)
        try:
            rows = api.spark_query_rows(master, data, name, run=run_, source=source, session=session)
        except (api.Untranslatable, api.SparkUnavailable) as exc:
            fail(str(exc))
        show(rows, fmt, columns, no_pager, view=view)
        return
    query_command(db, name, fmt, columns, no_pager, data=data, run=run_, source=source, session=session)


def query_command(db: str, name: str, fmt: str, columns: str | None, no_pager: bool, data: str | None = None,
                  **params: object) -> None:
    view = api.query_view(name)  # first, so that an unknown name fails before the database opens
    with api.open_data(data) if data else api.open_db(db) as con:
        if fmt == "table":
            show(api.query_rows(con, name, at_most=TABLE_MAX_ROWS, **params), fmt, columns, no_pager, view=view)
        else:  # written as it is read, while the database is open
            show(api.query_chunks(con, name, **params), fmt, columns, no_pager, view=view)


@main.command(short_help="The database as Parquet files for DuckDB, Spark, Trino.")
@DB_OPTION
@click.option("--parquet", "out", required=True, metavar="FOLDER",
              help="Write every table here as Parquet, partitioned by host=/day= (each table's folder is replaced).")
def export(db: str, out: str) -> None:
    """Export the database as Parquet files that DuckDB, Spark and Trino read (`query --data` queries them)."""
    with api.open_db(db) as con:
        try:
            written = api.export_parquet(con, out)
        except FileExistsError as exc:
            fail(str(exc) if not exc.filename else f"{exc.filename}: exists and is not a folder")
        except OSError as exc:
            fail(f"{exc.filename or out}: cannot write ({exc.strerror})")
    click.echo(f"{out}: {len(written)} tables, {sum(written.values()):,} rows", err=True)


@main.command(short_help="The tables and views, with their rows and columns.")
@DB_OPTION
@output_options
def tables(db: str, fmt: str, columns: str | None, no_pager: bool) -> None:
    """The tables and views of the database, with their row counts and columns."""
    with api.open_db(db) as con:
        rows = api.tables(con)
    show(rows, fmt, columns, no_pager, ["rows", *api.key_columns("tables")])


@main.command(short_help="Run any SQL over the logmine tables.")
@click.argument("statement")
@DB_OPTION
@output_options
def sql(statement: str, db: str, fmt: str, columns: str | None, no_pager: bool) -> None:
    """Run any SQL over the logmine tables (`logmine tables` lists them): read-only, and no file but the
    database can be read or written (`COPY ... TO`, `read_csv`, `ATTACH` and extensions are refused)."""
    if not statement.strip():
        fail("no SQL statement given (`logmine tables` lists what there is to query)")
    with api.open_sandboxed(db) as con:
        if fmt == "table":
            show(api.sql_rows(con, statement, at_most=TABLE_MAX_ROWS), fmt, columns, no_pager)
        else:
            show(api.sql_chunks(con, statement), fmt, columns, no_pager)


@main.command(short_help="Server args that differ between two runs.")
@click.argument("run_a")
@click.argument("run_b")
@DB_OPTION
@output_options
def diff(run_a: str, run_b: str, db: str, fmt: str, columns: str | None, no_pager: bool) -> None:
    """Server args that differ between two runs (SOURCE:ORDINAL, or ORDINAL when one source has runs)."""
    with api.open_db(db) as con:
        show(api.diff(con, run_a, run_b), fmt, columns, no_pager)


@main.command(short_help="Open the database in JupyterLab, on the bundled notebooks.")
@DB_OPTION
@click.option("--port", type=int, default=None, help="Port to serve on (default: a free one).")
@click.option("--run", "run_", default=None, metavar="[SOURCE:]ORDINAL",
              help="The run the postmortem notebook shows (default: the last that ended badly, else the last); "
                   "a bare ORDINAL is of --source, or of the only source with runs.")
@click.option("--source", default=None, help="The source whose run the postmortem notebook shows (path, or any "
              "suffix of it that names one).")
@click.option("--browser/--no-browser", default=False, show_default=True, help="Open the lab in a web browser.")
@click.option("--ip", default="127.0.0.1", show_default=True,
              help="Address to listen on (0.0.0.0: every one); the token is always required.")
def lab(db: str, port: int | None, run_: str | None, source: str | None, browser: bool, ip: str) -> None:
    """Open the database in JupyterLab, on copies of the bundled notebooks (explore, postmortem) kept in
    a folder beside it (DB stem + -notebooks), made the first time and never overwritten."""
    try:
        server = api.start_lab(db, port=port, run=run_, source=source, open_browser=browser, ip=ip)
    except api.LabError as exc:
        fail(str(exc))
    click.echo(f"JupyterLab on {server.url}\n  notebooks in {server.root} (your copies), database {db} "
               f"(${api.LAB_DB_ENV} in the notebooks)\n  Ctrl-C stops it")
    hint = server.ssh_hint()
    if hint:
        click.echo(f"  {hint}")
    code = server.serve()
    if code is None:
        click.echo("JupyterLab stopped")
    elif code:
        fail(f"JupyterLab exited (code {code})")


MCP_TOKEN_ENV = "LOGMINE_MCP_TOKEN"


@main.command(short_help="Serve the database to coding agents over MCP (stdio or HTTP).")
@DB_OPTION
@click.option("--http", "http_port", type=click.IntRange(1, 65535), default=None, metavar="PORT",
              help=f"Serve streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio; clients must send "
                   f"`Authorization: Bearer TOKEN`, TOKEN from ${MCP_TOKEN_ENV} (else made up and printed on stderr).")
@click.option("--follow", "follow_paths", multiple=True, metavar="PATH",
              help="Keep the database current with these log files or folders while serving (`logmine follow`).")
@click.option("--follow-unit", default=None, metavar="UNIT", help="... and with this systemd unit's journal.")
@click.option("--follow-journal-file", default=None, metavar="FILE", help="... and with this journal file.")
def mcp(db: str, http_port: int | None, follow_paths: tuple[str, ...], follow_unit: str | None,
        follow_journal_file: str | None) -> None:
    """Serve the database to coding agents over the Model Context Protocol: tools (runs, run_summary, query,
    sql, check_figures, what_changed, errors, tail) and resources (the report, the tables), each call on a
    read-only connection that reaches no other file. With --follow, a `logmine follow` beside the server
    keeps the database current, so every answer is of the logs as they are now."""
    import os
    import secrets

    if follow_paths or follow_unit or follow_journal_file:
        api.follow_in_background(db, list(follow_paths), unit=follow_unit, journal_file=follow_journal_file)

    token = os.environ.get(MCP_TOKEN_ENV)
    made_up = http_port is not None and not token
    token = secrets.token_urlsafe(32) if made_up else token

    def announce(url: str) -> None:  # once the database and the port are known to be good
        if made_up:
            click.echo(f"logmine mcp: {url}, send `Authorization: Bearer {token}` (set ${MCP_TOKEN_ENV} to choose "
                       "the token)", err=True)

    try:
        from .mcp.server import serve  # the SDK loads with it
    except ImportError as exc:
        fail(f"the MCP server needs the mcp package ({exc.name} is missing): pip install 'logmine[mcp]'")
    try:
        serve(db, http_port=http_port, token=token, announce=announce)
    except OSError as exc:
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        fail(f"127.0.0.1:{http_port}: cannot serve ({why})" if http_port and exc.errno else str(exc))


@main.command(short_help="Write a postmortem that cites a log line for each figure.")
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
    fmt = fmt or api.report_format(output)
    selection = {"runs": list(runs) or None, "source": source, "session": session}
    with api.open_db(db) as con:
        if output == "-":
            click.echo(api.report(con, fmt=fmt, **selection))
            return
        try:
            text = api.write_report(con, output, fmt=fmt, **selection)
        except OSError as exc:
            fail(f"{output}: cannot write the report ({exc.strerror})")
    click.echo(f"{output}: {fmt} report, {len(text):,} characters", err=True)


# The terminal view: the figure is in the claim's text, the measured one as the log printed it.
# Short headers for the claims query's key columns (its `-- Columns:` line), so the table fits 80 columns.
CLAIM_HEADERS = {"message_index": "msg", "text": "claim", "measured_figure": "measured", "measured_source": "source"}


@main.command(short_help="The agents' numbers checked against the logs.")
@DB_OPTION
@click.option("--session", default=None, help="Only this agent session id.")
@click.option("--run", "run_", type=int, default=None, help="Only claims about this run ordinal.")
@output_options
def claims(db: str, session: str | None, run_: int | None, fmt: str, columns: str | None, no_pager: bool) -> None:
    """The agents' numbers checked against the logs, inconsistent first."""
    with api.open_db(db) as con:
        df = api.query(con, "claims", session=session, run=run_)
    if fmt == "table" and not columns:
        df = df[api.key_columns("claims")].assign(measured_source=df["measured_source"].map(
            lambda s: s.rsplit("/", 1)[-1] if isinstance(s, str) else s)).rename(columns=CLAIM_HEADERS)
    show(df, fmt, columns, no_pager)


@main.command(short_help="What the next configuration would cost, from a run's own figures.")
@DB_OPTION
@click.option("--run", "run_", default=None, metavar="[SOURCE:]ORDINAL",
              help="The run whose figures the plan starts from (default: the last that allocated a KV pool).")
@click.option("--source", default=None, help="The source of --run (path, or any suffix of it that names one).")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="A server arg to change, e.g. mem_fraction_static=0.92 (repeatable).")
@click.option("--options", "with_options", is_flag=True, help="Also list the standard ways to more KV capacity.")
@click.option("--audit", "with_audit", is_flag=True,
              help="Also audit the run's host memory: HiCache pools pinned per node against the host's free memory.")
@click.option("--sglang-version", default=None, metavar="X.Y.Z",
              help="The release, for the audit's pinning (else the one a session's pip output shows).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="json: one object with every figure, its logged inputs and formula.")
def plan(db: str, run_: str | None, source: str | None, settings: tuple[str, ...], with_options: bool,
         with_audit: bool, sglang_version: str | None, fmt: str) -> None:
    """Predict the KV pool, headroom and HiCache host pool of a changed configuration from a run's logged
    figures, with SGLang's own formulas; say where SGLang would not start."""
    with api.open_db(db) as con:
        try:
            result = api.plan(con, list(settings), run=run_, source=source, with_options=with_options)
            if with_audit:
                result["host_audit"] = api.host_memory_audit(con, run=f"{result['source']}:{result['run']}",
                                                             version=sglang_version)
        except ValueError as exc:  # a setting plan cannot predict (api.PlanError), a bad release
            fail(str(exc))
        names = api.source_names(con)
    if fmt == "json":
        click.echo(json.dumps(result, indent=2, default=str))
        return
    click.echo(plan_text(result, names.get(result["source"], result["source"])))


PLAN_ROWS = [("KV tokens per rank", "kv_tokens_per_rank"), ("KV GiB per rank", "kv_gib_per_rank"),
             ("headroom GiB per rank", "headroom_gib_per_rank"), ("host pool GB per rank", "host_cache_gb_per_rank"),
             ("host pool GB in all", "host_cache_gb_total")]


def plan_text(result: dict, source: str) -> str:
    """The plan as a terminal reads it: the run beside the prediction, then where each figure comes from."""
    changes = ", ".join(f"{k} {c['from']} -> {c['to']}" for k, c in result["changes"].items()) or "no change"
    rows = [[label, _figure(result["baseline"].get(key)), _figure(result[key])] for label, key in PLAN_ROWS]
    out = [f"run {result['run']} of {source}, {changes}:",
           render(api.Rows(["figure", f"run {result['run']}", "predicted"], rows), "table")]
    out += [textwrap.fill(f"! {line}", 80, subsequent_indent="  ") for line in result["outside_formula"]]
    out += [textwrap.fill(f"note: {line}", 80, subsequent_indent="  ") for line in result["notes"]]
    for label, key in PLAN_ROWS[:1] + PLAN_ROWS[3:4]:
        figure = result["figures"][key]
        out.append(textwrap.fill(f"{label}: {figure['formula']}", 80, subsequent_indent="  "))
    audit = result.get("host_audit")
    if audit:
        pinned = ("no HiCache host pool" if audit["pinned_gb_per_node"] is None else
                  f"{audit['pinned_gb_per_node']} GB pinned per node ({audit['ranks_per_node']} ranks x "
                  f"{audit['pinned_gb_per_rank']} GB, {audit['requested_from']})")
        host = ("" if audit["host_available_gb"] is None else
                f"; host available {audit['host_available_gb']} GB ({audit['host_available_from']})")
        release = f"; SGLang v{audit['sglang_version']}: {audit['allocator']}" if audit["sglang_version"] else ""
        out.append(textwrap.fill(f"host audit: {pinned}{host}{release}", 80, subsequent_indent="  "))
        out += [textwrap.fill(f"! {finding}", 80, subsequent_indent="  ") for finding in audit["findings"]]
    for option in result.get("options", []):
        settings = " ".join(f"--set {k}={v}" for k, v in option["set"].items())
        host = (f", host pool {option['host_cache_gb_per_rank']} GB per rank / {option['host_cache_gb_total']} GB "
                "in all" if option["host_cache_gb_per_rank"] is not None else "")
        delta = option["kv_tokens_delta"]
        out.append(textwrap.fill(
            f"option: {option['option']} ({settings}): {_figure(option['kv_tokens_per_rank'])} KV tokens per rank "
            f"({'n/a' if delta is None else f'{delta:+,}'}), headroom {_figure(option['headroom_gib_per_rank'])} "
            f"GiB{host}; {option['caveat']}" + "".join(f"; ! {line}" for line in option["outside_formula"]),
            80, subsequent_indent="  "))
    return "\n".join(out)


def _figure(value: object) -> str:
    if value is None:
        return ""
    return f"{value:,}" if isinstance(value, int) else f"{value:,.2f}" if isinstance(value, float) else str(value)


def fail(message: str) -> None:
    click.echo(f"logmine: {visible(message, one_line=True)}", err=True)
    sys.exit(2)


def start() -> None:
    """Entry point that turns database errors into one-line messages."""
    try:
        main(standalone_mode=True)
    except (LookupError, FileNotFoundError, api.NotALogmineDatabase) as exc:
        fail(str(exc).strip("'\""))
    except api.Interrupted as exc:
        click.echo(f"logmine: {exc.message()}", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("logmine: interrupted; the database's tables are as they were", err=True)
        sys.exit(130)
    except Exception as exc:
        duckdb = sys.modules.get("duckdb")  # imported by whichever command opened a database
        if duckdb is None or not isinstance(exc, duckdb.Error):
            raise
        message = f"database error: {str(exc).splitlines()[0]}"
        if isinstance(exc, (duckdb.BinderException, duckdb.CatalogException)) and sys.argv[1:2] not in (["ingest"],
                                                                                                    ["sql"]):
            # a table or column the queries expect is missing: the file was made by an older logmine
            message += " (a database made by another logmine version: ingest the inputs into a new one)"
        fail(locked_message(exc) or message)


def locked_message(exc: Exception) -> str | None:
    """What to do when another process holds the database: a reader blocks an ingest, an ingest blocks readers."""
    holder = api.lock_holder(exc)
    if holder is None:
        return None
    db, pid, command = holder
    command = clip(" ".join(command.split()), 80)
    if sys.argv[1:2] == ["ingest"]:
        if " ingest" in command:
            return f"{db} is being written by another ingest, process {pid} ({command}); run this again when it is done"
        return (f"{db} is open in process {pid} ({command}); an ingest needs it alone: close it there (a "
                "notebook: run its last cell or restart the kernel) and ingest again; the database is unchanged")
    return f"{db} is being written by process {pid} ({command}); run this again when it is done"
