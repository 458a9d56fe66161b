"""The command line as a user and our acceptance checks call it, on the bundled example."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from logmine import api
from logmine.query import named_queries
from logmine.terminal.render import TABLE_MAX_ROWS, render_pieces

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "examples" / "demo"
RUN_KEYS = {"source", "ordinal", "pid", "started_at", "ready_at", "ended_at", "end_reason", "load_seconds",
            "weights_seconds", "ranks", "weights_gib_per_rank", "avail_after_weights_gib", "kv_tokens",
            "kv_gib_per_rank", "draft_weights_gib_per_rank", "available_gpu_mem_gib", "host_cache_gb_per_rank",
            "host_cache_gb_total", "prefill_batches", "decode_batches", "http_requests", "retractions", "errors",
            "config"}


def logmine(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "logmine", *args], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = str(tmp_path_factory.mktemp("demo") / "demo.duckdb")
    summary = json.loads(logmine("ingest", str(DEMO / "journal.txt"), str(DEMO / "session.opencode.json"),
                                 "--db", db, "--json"))
    assert summary["lines_read"] == summary["lines_typed"] == 1205
    return db


def test_runs_json_contract(demo_db: str) -> None:
    runs = json.loads(logmine("query", "runs", "--db", demo_db, "--format", "json"))
    assert [set(r) >= RUN_KEYS for r in runs] == [True, True, True]
    assert [(r["ordinal"], r["end_reason"], r["started_at"]) for r in runs] == [
        (1, "restarted", "2026-03-12T10:05:20"), (2, "failed", "2026-03-12T10:33:42"),
        (3, "running", "2026-03-12T10:37:02")]
    assert runs[1]["errors"][0]["kind"] == "host_memory" and runs[2]["host_cache_gb_total"] == 160.46
    assert runs[2]["config"]["hicache_ratio"] == 2.0 and runs[2]["config"]["enable_hierarchical_cache"] is True


def test_config_diff_and_links_json_contract(demo_db: str) -> None:
    diffs = json.loads(logmine("query", "config-diff", "--db", demo_db, "--format", "json"))
    changed = {(d["from_run"], d["to_run"], d["key"], json.dumps(d["old"]), json.dumps(d["new"]))
               for d in diffs if d["key"] != "random_seed"}
    assert changed == {(1, 2, "enable_hierarchical_cache", "false", "true"), (1, 2, "hicache_ratio", "2.0", "3.0"),
                       (2, 3, "hicache_ratio", "3.0", "2.0")}
    links = json.loads(logmine("query", "links", "--db", demo_db, "--format", "json"))
    assert [(k["message_index"], k["kind"], k["changed"], k["run"]) for k in links] == [
        (2, "config_change", {"enable_hierarchical_cache": [False, True], "hicache_ratio": [2.0, 3.0]}, 2),
        (6, "config_change", {"hicache_ratio": [3.0, 2.0]}, 3)]
    (session,) = json.loads(logmine("query", "sessions", "--db", demo_db, "--format", "json"))
    assert (session["journal_utc_offset_s"], session["unit_file_writes"]) == (3600, 2)


def test_every_named_query_renders_in_every_format(demo_db: str) -> None:
    names = [line.split()[0] for line in logmine("query", "--db", demo_db).splitlines() if not line.startswith(" ")]
    assert {"runs", "load-time", "memory-budget", "config-diff", "serving", "errors", "timeline", "sessions",
            "tool-calls", "commands", "config-changes", "links", "requests"} <= set(names)
    with api.open_db(demo_db) as con:
        for name in names:
            rows = api.query(con, name)
            assert not rows.empty or name in ("unparsed", "new-shapes"), name  # the demo has no untyped line
            for fmt in ("table", "csv", "json", "markdown"):
                assert api.render(rows, fmt).strip(), (name, fmt)


def test_sql_and_diff_commands(demo_db: str) -> None:
    out = json.loads(logmine("sql", "SELECT count(*) AS n FROM decode_batches", "--db", demo_db, "--format", "json"))
    assert out == [{"n": 789}]
    diff = json.loads(logmine("diff", "2", "3", "--db", demo_db, "--format", "json"))
    assert {d["key"]: [d["2"], d["3"]] for d in diff}["hicache_ratio"] == [3.0, 2.0]


def refused(*args: str) -> str:
    """The one line `logmine` prints when it refuses a command (exit 2, nothing on stdout)."""
    result = subprocess.run([sys.executable, "-m", "logmine", *args], capture_output=True, text=True, timeout=300)
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    (line,) = result.stderr.splitlines()
    return line


def test_diff_names_a_run_by_its_source_when_several_have_runs(two_journals_db: Path) -> None:
    db = str(two_journals_db)
    assert refused("diff", "1", "2", "--db", db) == (
        "logmine: run '1': several sources have runs (gpu-a/journal.txt, gpu-b/journal.txt); name it as "
        "SOURCE:ORDINAL, e.g. gpu-a/journal.txt:1")
    # A name that fits both journals is refused as `runs --source` refuses it, never read as the first one.
    ambiguous = refused("diff", "journal.txt:1", "journal.txt:2", "--db", db)
    assert ambiguous == refused("runs", "--source", "journal.txt", "--db", db)
    assert ambiguous.startswith("logmine: source 'journal.txt' names several sources: ")
    assert refused("diff", "gpu-b/journal.txt:1", "gpu-b/journal.txt:3", "--db", db) == (
        "logmine: no run 3 in gpu-b/journal.txt; the runs are gpu-b/journal.txt: 1-2")
    diff = json.loads(logmine("diff", "gpu-a/journal.txt:1", "gpu-b/journal.txt:2", "--db", db, "--format", "json"))
    changed = {d["key"]: [d["gpu-a/journal.txt:1"], d["gpu-b/journal.txt:2"]] for d in diff}
    assert changed["served_model_name"] == ["qwen3-32b", "qwen3-8b"]  # run 2 of gpu-b, not of gpu-a
    assert changed["hicache_ratio"] == [2.0, 3.0] and changed["enable_hierarchical_cache"] == [False, True]


def test_the_terminal_table_shows_a_traceback_on_one_short_line() -> None:
    traceback = "Traceback (most recent call last):\n" + '  File "x.py", line 1, in f\n' * 40 + "ValueError: bad"
    table = api.render(pd.DataFrame({"n_lines": [42], "text": [traceback]}), "table")
    body = table.splitlines()[2]  # below the header and its rule
    assert "Traceback (most recent call last): ⏎   File" in body and body.endswith("…")
    assert len(table.splitlines()) == 3
    assert json.loads(api.render(pd.DataFrame({"text": [traceback]}), "json"))[0]["text"] == traceback


def test_a_long_result_shows_its_first_rows_as_a_table_and_every_row_in_the_other_formats() -> None:
    rows = pd.DataFrame({"n": range(TABLE_MAX_ROWS + 250)})
    table = api.render(rows, "table").splitlines()
    assert table[2].strip() == "0" and table[-2].strip() == str(TABLE_MAX_ROWS - 1)
    assert table[-1] == (f"… 250 more rows of {TABLE_MAX_ROWS + 250:,}: --format csv, tsv, json or markdown gives "
                         "them all")
    assert len(json.loads(api.render(rows, "json"))) == TABLE_MAX_ROWS + 250
    assert len(api.render(rows, "csv").splitlines()) == TABLE_MAX_ROWS + 251


def test_a_long_result_in_a_table_fetches_only_the_rows_it_shows(demo_db: str) -> None:
    """The table counts the rest in DuckDB: made into Python rows whole, a 2M-row timeline took 15 s."""
    with duckdb.connect(demo_db, read_only=True) as con:
        first = named_queries.fetch(con, "SELECT n FROM range(2500) t(n) ORDER BY n DESC;\n-- a comment",
                                    at_most=TABLE_MAX_ROWS)
        assert (len(first.rows), first.total, first.rows[0], first.rows[-1]) == (TABLE_MAX_ROWS, 2500, (2499,),
                                                                                  (1500,))
        whole = api.query_rows(con, "timeline", at_most=TABLE_MAX_ROWS)  # 1,205 lines and the agent's events
        assert whole.rows[:TABLE_MAX_ROWS] == api.query_rows(con, "timeline").rows[:TABLE_MAX_ROWS]
        assert whole.total == len(api.query_rows(con, "timeline").rows)
        short = named_queries.fetch(con, "SELECT 1 AS one", at_most=TABLE_MAX_ROWS)
        assert (short.rows, short.total) == ([(1,)], None)
    table = logmine("sql", "SELECT n FROM range(2500) t(n)", "--db", demo_db).splitlines()
    assert table[-1] == "… 1,500 more rows of 2,500: --format csv, tsv, json or markdown gives them all"
    assert "demo.duckdb" in logmine("sql", "PRAGMA database_list", "--db", demo_db)  # no query: run as it is


def test_a_result_written_chunk_by_chunk_is_the_text_render_gives(demo_db: str) -> None:
    """CSV, TSV, JSON and Markdown are written as the rows are read (a 2M-row timeline as CSV held 3 GB
    before): in chunks of three rows, every named query gives `render`'s text, byte for byte."""
    with duckdb.connect(demo_db, read_only=True) as con:
        for name in named_queries.names():
            params = {"source": None, "run": None, "session": None, "limit": 50}
            whole = named_queries.fetch(con, named_queries.text(name), **params)
            for fmt in ("csv", "tsv", "json", "markdown"):
                chunks = named_queries.fetch_chunks(con, named_queries.text(name), rows_per_chunk=3, **params)
                assert "".join(render_pieces(chunks, fmt)) == api.render(whole, fmt), (name, fmt)
        for statement in ("SELECT NULL AS x", "SELECT 1 AS x WHERE false"):  # an empty line; no row at all
            for fmt in ("csv", "tsv", "json", "markdown"):
                pieces = render_pieces(named_queries.fetch_chunks(con, statement, rows_per_chunk=1), fmt)
                assert "".join(pieces) == api.render(named_queries.fetch(con, statement), fmt), (statement, fmt)
    assert logmine("query", "timeline", "--db", demo_db, "--format", "csv", "--columns", "kind,rank").startswith(
        "kind,rank\nsystemd_starting,\n")
    # A column is also asked for by the label the table shows it under: `run` for the runs' `ordinal`.
    assert logmine("runs", "--db", demo_db, "--format", "csv", "--columns", "run,end") == \
        logmine("runs", "--db", demo_db, "--format", "csv", "--columns", "ordinal,end_reason")


def test_a_query_name_is_a_name_not_a_path(demo_db: str, tmp_path: Path) -> None:
    (tmp_path / "x.sql").write_text("SELECT 'ran' AS leaked")
    relative = Path("..") / Path(tmp_path).relative_to(Path(tmp_path).anchor) / "x"
    result = subprocess.run([sys.executable, "-m", "logmine", "query", "../" * 12 + str(relative), "--db", demo_db],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "no query named" in result.stderr and "ran" not in result.stdout


def test_a_database_made_by_an_older_version_gets_one_line_saying_so(tmp_path: Path) -> None:
    import duckdb

    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE runs (source_id INTEGER, ordinal INTEGER)")  # an older runs table
    con.execute("CREATE TABLE sources (source_id INTEGER, display VARCHAR, path VARCHAR, kind VARCHAR)")
    con.close()
    result = subprocess.run([sys.executable, "-m", "logmine", "query", "runs", "--db", str(db)],
                            capture_output=True, text=True)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "made by another logmine version" in result.stderr and "Traceback" not in result.stderr


def failure(*args: str) -> str:
    """The one line `logmine ARGS` prints when it refuses, checked to be one line and no traceback."""
    result = subprocess.run([sys.executable, "-m", "logmine", *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


@pytest.mark.parametrize("command", [["runs"], ["ingest", str(DEMO / "journal.txt")]])
def test_a_sqlite_file_given_as_the_database_is_refused_before_duckdb_reaches_for_the_network(
        tmp_path: Path, command: list[str]) -> None:
    """DuckDB would download its SQLite extension to open the file (and then write to it)."""
    import sqlite3

    sqlite = tmp_path / "opencode.db"
    sqlite3.connect(sqlite).execute("CREATE TABLE session (id TEXT)").connection.commit()
    before = sqlite.read_bytes()
    assert "a SQLite database, not a logmine one" in failure(*command, "--db", str(sqlite))
    assert sqlite.read_bytes() == before


def test_user_mistakes_get_one_line(demo_db: str, tmp_path: Path) -> None:
    assert "no SQL statement given" in failure("sql", "  ", "--db", demo_db)
    typo = failure("sql", "SELECT * FROM nosuch", "--db", demo_db)
    assert "nosuch does not exist" in typo and "another logmine version" not in typo
    (tmp_path / "afile").write_text("")
    assert f"{tmp_path / 'afile'}: exists and is not a folder" in failure(
        "export", "--db", demo_db, "--parquet", str(tmp_path / "afile"))
    assert "cannot write" in failure("export", "--db", demo_db, "--parquet", str(tmp_path / "afile" / "pq"))


def test_a_source_by_any_end_of_its_path_and_a_session_by_its_start(demo_db: str) -> None:
    with api.open_db(demo_db) as con:
        (session,) = [r[0] for r in con.execute("SELECT id FROM sessions").fetchall()]
        (display,) = con.execute("SELECT display FROM sources WHERE kind = 'log'").fetchone()
        assert api.check_selection(con, source="nal.txt", session=session[:8] + "…") == {
            "source": display, "session": session}
        with pytest.raises(LookupError, match="no session 'nosuch'"):
            api.check_selection(con, session="nosuch")


def test_a_filter_the_query_does_not_take_is_refused(demo_db: str) -> None:
    """`runs --session` gave every run, as if filtered."""
    assert "query runs has no session parameter (its parameters: source, run)" in failure(
        "query", "runs", "--session", "ses_x", "--db", demo_db)


def test_a_fifo_given_as_the_database_is_refused_not_waited_on(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "db.fifo"
    os.mkfifo(fifo)
    assert f"{fifo}: not a regular file, so not a database" in failure("tables", "--db", str(fifo))
