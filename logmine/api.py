"""The public Python API: everything the CLI does, callable from a notebook.

    >>> import logmine.api as lm
    >>> lm.ingest(["journal.txt"], db="logmine.duckdb")
    >>> with lm.open_db("logmine.duckdb") as con:
    ...     lm.query(con, "runs")          # a pandas DataFrame
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .ingest.interrupts import Interrupted
from .ingest.interrupts import check as check_interrupted
from .ingest.transaction import Report, ingest, parse_offset
from .query import named_queries
from .query.named_queries import description as query_description
from .query.named_queries import key_columns
from .query.named_queries import names as query_names
from .query.named_queries import summary as query_summary
from .query.named_queries import view as query_view
from .query.rows import RowChunks, Rows
from .query.selection import (
    BAD_ENDS,
    check_selection,
    checked_parameters,
    resolve_run,
    resolve_session,
    resolve_source,
    select_run,
    sole_source_with_runs,
    source_names,
)
from .store import DEFAULT_DB, OFFLINE, NotALogmineDatabase, lock_holder, reading, reading_sandboxed
from .terminal.render import render
from .terminal.summaries import progress_bar, summary_text

# The ingest machinery, pandas and pyarrow are imported by the functions that use them: a command that
# only reads (`logmine query`) starts in a fifth of the time.
if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    import sqlalchemy

    from .live.follow import Follower

__all__ = [  # what this module hands on from the stages; its own functions follow
    "BAD_ENDS", "DEFAULT_DB", "Interrupted", "NotALogmineDatabase", "Report", "RowChunks", "Rows",
    "check_interrupted", "check_selection", "checked_parameters", "ingest", "key_columns", "lock_holder",
    "parse_offset", "progress_bar", "query_description", "query_names", "query_summary", "query_view", "render",
    "resolve_run", "resolve_session", "resolve_source", "select_run", "sole_source_with_runs", "source_names",
    "summary_text",
]

# Names whose modules load pyarrow, PySpark's helpers or JupyterLab's: imported only when asked for.
_LAZY = {
    "InputError": ("inputs.sources", "InputError"),
    "SparkUnavailable": ("fleet.spark_engine", "SparkUnavailable"),
    "Untranslatable": ("fleet.spark_engine", "Untranslatable"),
    "LabError": ("lab.server", "LabError"),
    "PlanError": ("query.plan", "PlanError"),
    "LAB_DB_ENV": ("lab.server", "DB_ENV"),
    "FollowError": ("live.follow", "FollowError"),
    "RuleError": ("live.alerts", "RuleError"),
}


def __getattr__(name: str) -> object:
    """`lm.InputError` (bad input) and the other names of `_LAZY`, imported when first asked for."""
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        return getattr(importlib.import_module(f"{__name__.rpartition('.')[0]}.{module}"), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_db(db: str | Path = DEFAULT_DB) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
    """A read-only connection to a logmine database, for a `with` block."""
    return reading(db)


def open_sandboxed(db: str | Path = DEFAULT_DB) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
    """A read-only connection that reaches no file but the database (`store.reading_sandboxed`), for a `with`
    block: for SQL someone else wrote, as `logmine sql` and the MCP server run it."""
    return reading_sandboxed(db)


@contextmanager
def open_data(folder: str | Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to a folder written by `export_parquet`: the same tables and views as the database it
    came from (views over its Parquet files, the views made from logmine's own SQL, never the folder's), so
    every named query runs on it unchanged; it reads no file outside the folder."""
    from .fleet.parquet import open_folder

    con = open_folder(folder)
    try:
        yield con
    finally:
        con.close()


def export_parquet(con: duckdb.DuckDBPyConnection, out: str | Path) -> dict[str, int]:
    """Write every table as Parquet under `out`, partitioned by host and day where the rows have them
    (layout in `logmine.fleet.parquet`); returns the rows written per table. The files get the database's
    access: a database only its owner reads gives an export only its owner reads."""
    from .fleet.parquet import export
    from .store import database_file, written_like

    with written_like(database_file(con)):
        return export(con, out)


def engine(db: str | Path = DEFAULT_DB) -> sqlalchemy.engine.Engine:
    """A read-only SQLAlchemy engine on a logmine database, for `pandas.read_sql` and notebook tools
    (jupysql's `%sql engine`); it holds the file only while a query runs."""
    import sqlalchemy  # here, not at the top: it would add a quarter second to every command's start

    if not Path(db).exists():
        raise FileNotFoundError(f"{db}: no such database (run `logmine ingest` first)")
    # No pool: each query opens the file and closes it after, so that `logmine ingest` (which needs the file
    # alone) can run between a notebook's cells.
    return sqlalchemy.create_engine(f"duckdb:///{Path(db).resolve()}",
                                    connect_args={"read_only": True, "config": dict(OFFLINE)},
                                    poolclass=sqlalchemy.pool.NullPool)


def query(con: duckdb.DuckDBPyConnection, name: str, **params: object) -> pd.DataFrame:
    """Run a named query from `queries/` and return its rows.

    `source`, `run` and `session` must name ones that exist (LookupError says which do); a source may
    be given by its path, its display name or any suffix of it that names one source.
    """
    return named_queries.execute(con, name, **check_selection(con, **checked_parameters(name, params)))


def query_rows(con: duckdb.DuckDBPyConnection, name: str, *, at_most: int | None = None, **params: object) -> Rows:
    """`query` as plain Python rows (no pandas): what the CLI prints. With `at_most`, only the first rows
    of a longer result are fetched, and `total` says how many it has."""
    return named_queries.fetch(con, named_queries.text(name), at_most=at_most,
                               **check_selection(con, **checked_parameters(name, params)))


def query_chunks(con: duckdb.DuckDBPyConnection, name: str, **params: object) -> RowChunks:
    """`query_rows` a few thousand rows at a time, fetched as they are read (so while `con` is open): for
    writing a large result without holding it whole."""
    selected = check_selection(con, **checked_parameters(name, params))
    return named_queries.fetch_chunks(con, named_queries.text(name), **selected)


def sql(con: duckdb.DuckDBPyConnection, statement: str, **params: object) -> pd.DataFrame:
    """Any SQL statement over the logmine tables; `$name` parameters are bound from `params`."""
    return named_queries.execute_sql(con, statement, **params)


def sql_rows(con: duckdb.DuckDBPyConnection, statement: str, *, at_most: int | None = None,
             **params: object) -> Rows:
    """`sql` as plain Python rows (no pandas); `at_most` as for `query_rows`."""
    return named_queries.fetch(con, statement, at_most=at_most, **params)


def sql_chunks(con: duckdb.DuckDBPyConnection, statement: str, **params: object) -> RowChunks:
    """`sql_rows` a few thousand rows at a time, as `query_chunks`."""
    return named_queries.fetch_chunks(con, statement, **params)


def tables(con: duckdb.DuckDBPyConnection) -> Rows:
    """Every table and view of the database with its row count and columns."""
    listing = named_queries.fetch(con, named_queries.text("tables"))
    counted = []
    for name, kind, columns in listing.rows:
        (n,) = con.execute(f'SELECT count(*) FROM "{name}"').fetchone()
        counted.append((name, kind, n, columns))
    return Rows(["name", "kind", "rows", "columns"], counted)


def report(con: duckdb.DuckDBPyConnection, fmt: str = "html", runs: list[int] | None = None,
           source: str | None = None, session: str | None = None) -> str:
    """The postmortem report as one self-contained HTML page (`fmt="html"`) or Markdown text."""
    from .report import render_report  # here, not at the top: it loads matplotlib and Jinja2

    # The source, runs and session must exist, named as for any query (a source by a unique path suffix);
    # run ordinals without a source are refused where several sources have runs, as `diff` refuses them.
    selected = check_selection(con, source=source, session=session)
    for run_ in runs or []:
        selected["source"] = check_selection(con, source=selected["source"], run=run_)["source"]
    return render_report(con, fmt=fmt, runs=runs, source=selected["source"], session=session)


def write_report(con: duckdb.DuckDBPyConnection, output: str | Path, fmt: str = "html", **selection: object) -> str:
    """`report` written to the file `output` with the database's access (as `export_parquet`); returns its
    text."""
    from .store import database_file, write_text_like

    text = report(con, fmt=fmt, **selection)
    write_text_like(database_file(con), Path(output), text)
    return text


def summary(con: duckdb.DuckDBPyConnection, source: str | None = None) -> list[str]:
    """The report's summary as sentences (without their citations): how many starts, how each ended,
    what each configuration change did, the last KV pool, the agent's figures checked."""
    from .report import summary_sentences  # here, not at the top: it loads matplotlib and Jinja2

    return summary_sentences(con, source=check_selection(con, source=source)["source"])


def runs(con: duckdb.DuckDBPyConnection, source: str | None = None) -> pd.DataFrame:
    """The `runs` query: one row per server run."""
    return query(con, "runs", source=source)


def diff(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> pd.DataFrame:
    """Every server arg that differs between two runs, named `SOURCE:ORDINAL` (or `ORDINAL` when one
    source has runs)."""
    from .derive import runs

    configs = [run_config(con, ref) for ref in (run_a, run_b)]
    changes = runs.config_changes(configs[0], configs[1])
    rows = [{"key": k, run_a: a, run_b: b} for k, (a, b) in changes.items()]
    import pandas as pd

    return pd.DataFrame(rows, columns=["key", run_a, run_b], dtype=object)  # object: keep each value's type


def run_config(con: duckdb.DuckDBPyConnection, ref: str) -> dict:
    """The typed server args of a run named `SOURCE:ORDINAL`, or `ORDINAL` when one source has runs."""
    source, ordinal = resolve_run(con, ref)
    found = named_queries.execute_sql(con, """
        SELECT c.args FROM runs AS r JOIN sources AS s USING (source_id) JOIN configs AS c USING (config_id)
        WHERE r.ordinal = $ordinal AND s.display = $source""", ordinal=ordinal, source=source)
    if found.empty:
        raise LookupError(f"run {ref!r}: no server_args dump")
    return found.iloc[0, 0]


def unparsed(con: duckdb.DuckDBPyConnection, limit: int = 50, source: str | None = None) -> pd.DataFrame:
    """Untyped lines grouped by template, most frequent first (of one source when `source` names one)."""
    return query(con, "unparsed", limit=limit, source=source)


def prepare_ingest(paths: list[str], db: str | Path, jobs: int | None, spark: bool = False) -> None:
    """Ready this process for an ingest, before the rest of the machinery loads: the parse worker's server
    started early when a worker is likely (it loads the parser meanwhile), pyarrow told there is no pandas,
    and the process tuned for a long ingest."""
    from .ingest.worker.processes import arrow_without_pandas, start_early, tune_for_ingest, worker_likely

    if not spark and jobs != 1 and worker_likely(paths, db):
        start_early()
    arrow_without_pandas()
    if not spark:
        tune_for_ingest()


def spark_ingest(paths: list[str], out: str, master: str, envelope: str | None = None,
                 redact: bool = False) -> dict:
    """`ingest --engine spark`: the log files parsed in Spark tasks into the Parquet folder `out`."""
    from .fleet import spark_ingest as spark

    return spark.ingest(paths, out, master=master, envelope=envelope, redact=redact).as_dict()


def spark_query_rows(master: str, data: str | Path, name: str, **params: object) -> Rows:
    """A named query run on Spark SQL over the Parquet folder `data`."""
    from .fleet import spark_engine

    spark = spark_engine.session(master)
    spark_engine.register_folder(spark, data)
    return spark_engine.query_rows(spark, data, name, **params)


def envelope_formats() -> list[str]:
    """The log envelopes `ingest --format` can force."""
    from .parsers.envelopes import FORMATS

    return list(FORMATS)


def start_lab(db: str | Path, **options: object) -> object:
    """`logmine lab`: JupyterLab on copies of the bundled notebooks; the server, to `serve()`."""
    from .lab import server

    return server.start(db, **options)


def report_format(path: str) -> str:
    """The report format a file name asks for by its suffix (html when there is none, e.g. `-`)."""
    from .report import format_for

    return format_for(path)


def plan(con: duckdb.DuckDBPyConnection, settings: dict[str, object] | list[str] | None = None,
         run: str | int | None = None, source: str | None = None, with_options: bool = False) -> dict:
    """What the configuration of a run would cost with `settings` changed (`{"mem_fraction_static": 0.92}` or
    `["mem_fraction_static=0.92"]`): the KV pool per rank in tokens and GiB, the headroom left, the HiCache
    host pool per rank, per node and in all, each figure with the logged figures and formula behind it
    (`logmine.query.plan`). Without `run`, the last run that allocated a KV pool. `with_options` adds `options`,
    the standard ways to more KV capacity with their predicted effect. PlanError (a ValueError) for a setting
    it cannot predict."""
    from .query import host_memory
    from .query import plan as model

    base = model.baseline(con, *_plan_run(con, run, source))
    result = model.predict(base, model.parse_settings(settings or {}))
    result["baseline"] = {"kv_tokens_per_rank": base.kv_tokens, "kv_gib_per_rank": base.kv_gib,
                          "headroom_gib_per_rank": base.final_available_gib,
                          "host_cache_gb_per_rank": base.host_cache_gb,
                          "host_cache_gb_total": None if base.host_cache_gb is None
                          else round(base.host_cache_gb * model.world_size(base.config), 2)}
    if with_options:
        audit = host_memory.audit(con, base.source, base.run)
        result["options"] = model.options(base, audit["host_available_gb"])
    return result


def host_memory_audit(con: duckdb.DuckDBPyConnection, run: str | int | None = None, source: str | None = None,
                      version: str | None = None) -> dict:
    """The HiCache host pool a run's ranks requested, what they pin after the release's rounding (`version`,
    else the SGLang release a session's tool output shows), per node, against the host's available memory
    where a session or the log shows it; `findings` lists what cannot fit (`logmine.query.host_memory`)."""
    from .query import host_memory

    return host_memory.audit(con, *select_run(con, run, source), version=version)


def _plan_run(con: duckdb.DuckDBPyConnection, run: str | int | None, source: str | None) -> tuple[str, int]:
    """The run `run` names, else the last to start of those that allocated a KV pool."""
    if run is not None:
        return select_run(con, run, source)
    display = resolve_source(con, source) if source is not None else None
    found = named_queries.fetch(con, """
        SELECT s.display, r.ordinal FROM runs AS r JOIN sources AS s USING (source_id)
        WHERE ($source IS NULL OR s.display = $source) AND EXISTS (
            SELECT 1 FROM kv_cache_by_run AS k WHERE k.source_id = r.source_id AND k.run = r.ordinal
              AND k.kind = 'kv_cache_allocated')
        ORDER BY r.started_at DESC NULLS LAST, r.source_id DESC, r.ordinal DESC LIMIT 1""", source=display).rows
    if not found:
        raise LookupError("no run allocated a KV pool" + (f" in {source_names(con)[display]}" if display else ""))
    return found[0][0], found[0][1]
# What an agent asks over MCP (`logmine.mcp`), as functions a notebook can call too.

def run_summary(con: duckdb.DuckDBPyConnection, run: str | int | None = None,
                source: str | None = None) -> dict[str, object]:
    """One run in full: its `runs` row, where its start-up time went (`load-time`), its memory budget per
    rank and in all (`memory-budget`), every sign of how it ended (`ends`) and one sentence saying why it
    ended, with the lines it rests on (`ended`, as the report says it). `run` and `source` as for
    `select_run` (without `run`: the last run that ended badly, else the last)."""
    display, ordinal = select_run(con, run, source)
    picked = {"source": display, "run": ordinal}
    return {"source": source_names(con)[display], "run": ordinal,
            "summary": query_rows(con, "runs", **picked), "load_time": query_rows(con, "load-time", **picked),
            "memory_budget": query_rows(con, "memory-budget", **picked), "ends": query_rows(con, "ends", **picked),
            "ended": end_story(con, display, ordinal)}


def end_story(con: duckdb.DuckDBPyConnection, source: str, run: int) -> dict[str, object]:
    """Why a run ended, in the report's words (`sentence`), with the log lines and agent messages it rests
    on (`evidence`: `ref` as `file:line` or `session/message N`, and the line itself)."""
    from .report.data import gather  # matplotlib and Jinja2 come with the report
    from .report.ends import end_story as story

    data = gather(con, runs=[run], source=source)
    row = data["runs"].iloc[0]
    told = story(data, row)
    return {"sentence": f"Run {run} of {data.source_name(source)} {told.words}.",
            "evidence": [{"ref": c.ref, "text": c.text} for c in told.cites]}


def what_changed(con: duckdb.DuckDBPyConnection, from_run: str | int, to_run: str | int) -> dict[str, object]:
    """What changed between two runs (`SOURCE:ORDINAL`, or `ORDINAL` when one source has runs): every server
    arg that differs, the agent messages that wrote the configuration the later run started with (`links`),
    and both runs' `runs` rows side by side, for the effect."""
    (source_a, run_a), (source_b, run_b) = resolve_run(con, str(from_run)), resolve_run(con, str(to_run))
    changes = diff(con, str(from_run), str(to_run))
    names = source_names(con)
    runs_ = [query_rows(con, "runs", source=s, run=r) for s, r in ((source_a, run_a), (source_b, run_b))]
    links = query_rows(con, "links", source=source_b)
    at = links.columns.index("run")
    return {"from": f"{names[source_a]}:{run_a}", "to": f"{names[source_b]}:{run_b}",
            "changes": Rows(["key", "old", "new"], [tuple(r) for r in changes.itertuples(index=False)]),
            "changed_by": Rows(links.columns, [r for r in links.rows if r[at] == run_b]),
            "runs": Rows(runs_[0].columns, runs_[0].rows + runs_[1].rows)}


def errors(con: duckdb.DuckDBPyConnection, run: int | None = None, source: str | None = None) -> dict[str, Rows]:
    """The errors of a run (or of every run): each traceback or abort (`errors`), and every sign of a bad
    end with its evidence line and the agent command that stopped the run, if one did (`ends`)."""
    return {"errors": query_rows(con, "errors", run=run, source=source),
            "ends": query_rows(con, "ends", run=run, source=source)}


def tail(con: duckdb.DuckDBPyConnection, source: str | None = None, n: int = 20) -> Rows:
    """The last `n` typed events of a log source (of every source when None), oldest first: line number,
    time, rank, event kind and the message."""
    source = resolve_source(con, source) if source is not None else None
    return named_queries.fetch(con, """
        SELECT * FROM (
            SELECT s.display AS source, l.line_no, l.ts, concat_ws(' ', 'DP' || l.dp, 'PP' || l.pp, 'TP' || l.tp,
                   'EP' || l.ep) AS rank, l.kind, l.message
            FROM lines AS l JOIN sources AS s USING (source_id)
            WHERE l.kind IS NOT NULL AND ($source IS NULL OR s.display = $source)
            ORDER BY l.ts DESC NULLS LAST, l.source_id DESC, l.line_no DESC LIMIT $n)
        ORDER BY ts NULLS FIRST, source, line_no""", source=source, n=max(int(n), 0))


def check_figures(con: duckdb.DuckDBPyConnection, text: str, run: str | int | None = None,
                  source: str | None = None) -> list[dict]:
    """Every byte, second and token figure of a draft, checked against what the logs measured as the `claims`
    of a session are: its verdict (consistent, inconsistent, unverifiable) and how it was reached
    (`derivation`), the measured figure and its `file:line` (the file named as `logmine runs` names it),
    and the cause (GiB written as GB, wrong arithmetic). Judged against the run `run` names (as `select_run`
    reads it) when given, else against the latest run (and the runs before it, for what the text looks back
    on). Nothing is stored."""
    from .knowledge import rebuild

    which = None
    if run is not None:
        display, ordinal = select_run(con, run, source)
        (source_id,), = named_queries.fetch(con, "SELECT source_id FROM sources WHERE display = $d", d=display).rows
        which = (source_id, ordinal)
    displays = {source_id: display for display, source_id in
                named_queries.fetch(con, "SELECT display, source_id FROM sources").rows}
    names = source_names(con)
    found = rebuild.check_text(con, text, run=which)
    for figure in found:
        figure["source"] = names.get(displays.get(figure.pop("source_id")))
        if figure["measured_source"]:
            where, _, line = figure["measured_source"].rpartition(":")
            figure["measured_source"] = f"{names.get(where, where)}:{line}"
    return found


def follow(db: str | Path = DEFAULT_DB, *, unit: str | None = None, journal_file: str | None = None,
           journal_dir: str | None = None, paths: list[str] | None = None, rules: str | Path | None = None,
           builtin_rules: bool = True, on_alert: str | None = None, alerts_jsonl: str | Path | None = None,
           sinks: list | None = None, on_commit: Callable | None = None) -> Follower:
    """A follower that keeps `db` current with a journal (a systemd `unit`, a `journal_file` or a
    `journal_dir`) and/or log files and folders (`paths`), raising the alerts of the built-in rules and
    of the TOML file `rules`; call its `run()` (it returns when `stop()` is called, from a signal handler or
    another thread). Each alert goes to `sinks` (`logmine.live.alerts.Sink`s), to the JSON-lines file
    `alerts_jsonl`, to the shell command `on_alert` (the alert as JSON on its stdin) and into the `alerts`
    table; `on_commit(commit)` is called after each commit (`logmine.live.follow.Commit`: lines, alerts, the
    current run's status)."""
    import sys

    from .live import alerts
    from .live.follow import Follower, FollowError, JournalSpec

    if sum(x is not None for x in (unit, journal_file, journal_dir)) > 1:
        raise FollowError("give one of --unit, --journal-file and --journal-dir")
    journal = JournalSpec(unit, journal_file, journal_dir) if (unit or journal_file or journal_dir) else None
    if journal is None and not paths:
        raise FollowError("nothing to follow: give --unit, --journal-file, --journal-dir or PATHs")
    for given in (journal_file, journal_dir):
        if given is not None and not Path(given).exists():
            raise FollowError(f"{given}: no such journal file or folder")
    chosen = list(sinks or [])
    if alerts_jsonl:
        chosen.append(alerts.JsonLinesSink(alerts_jsonl))
    if on_alert:
        chosen.append(alerts.CommandSink(on_alert, on_error=lambda line: print(f"logmine: {line}", file=sys.stderr)))
    return Follower(str(db), journal, list(paths or []), alerts.load_rules(rules, builtin_rules), chosen,
                    on_commit=on_commit)
