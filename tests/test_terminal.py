"""What a person sees in a real terminal: the CLI run under a pseudo-terminal of a given width."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from logmine import api
from logmine.query import named_queries
from logmine.query.rows import Rows
from logmine.query.selection import shortest_unique_suffixes
from logmine.terminal.render import render

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "examples" / "demo"


def in_terminal(columns: int, *args: str, rows: int = 50, env: dict[str, str] | None = None,
                program: list[str] | None = None) -> str:
    """`logmine ARGS` (or `PROGRAM ARGS`) with stdout on a pseudo-terminal of `columns` x `rows`; what it showed."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "PAGER")} | (env or {})
    command = [*(program or [sys.executable, "-m", "logmine"]), *args]
    process = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower, env=environment)
    os.close(follower)
    output = b""
    while select.select([leader], [], [], 30)[0]:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
    os.close(leader)
    assert process.wait(timeout=30) == 0, output.decode()
    return output.decode().replace("\r\n", "\n")


# Every named query in one process per terminal width (a process each would take 48 starts), each as
# `logmine query NAME` runs it, between marker lines.
EVERY_QUERY = """
import sys
from logmine import cli
from logmine.query import named_queries
for name in named_queries.names():
    print("=== " + name, flush=True)
    cli.main(["query", name, "--db", sys.argv[1], "--no-pager"], standalone_mode=False)
"""


@pytest.mark.parametrize("columns", [80, 120, 200])
def test_every_named_query_fits_the_terminal_and_shows_its_key_columns(demo_db: Path, columns: int) -> None:
    shown = in_terminal(columns, "-c", EVERY_QUERY, str(demo_db), program=[sys.executable])
    outputs = dict(re.findall(r"^=== (\S+)\n(.*?)(?=^=== |\Z)", shown, re.S | re.M))
    assert sorted(outputs) == named_queries.names()
    for name, output in outputs.items():
        too_wide = [line for line in output.splitlines() if len(line) > columns]
        assert not too_wide, (name, too_wide[:2])
        if name in ("unparsed", "new-shapes"):  # every line of the demo is typed
            assert output.strip() == "(0 rows)"
            continue
        # Each key column that holds a value is shown under its label (a label of two words may take two lines).
        with api.open_db(demo_db) as con:
            result = api.query(con, name)
        view = named_queries.view(name)
        filled = [c for c in view.labels if result[c].notna().any()]
        missing = [c for c in filled if not all(re.search(rf"(^|[ │]){re.escape(word)}( |$)", output, re.M)
                                                for word in view.labels[c].split())]
        assert not missing, (name, columns, missing)


def test_a_narrow_terminal_gets_records_and_is_told_what_was_left_out(demo_db: Path) -> None:
    shown = in_terminal(40, "query", "memory-budget", "--db", demo_db, "--run", "3", "--no-pager")
    assert shown.startswith("source journal.txt, run 3\n-[ RECORD 1 ]") and "rank           │ all ranks" in shown
    wide = in_terminal(200, "runs", "--db", demo_db, "--no-pager")
    assert wide.startswith("source journal.txt, on 2026-03-12\n") and "examples/demo" not in wide  # said once
    assert re.search(r"\(\d+ more columns: .*errors", wide.replace("\n", " "))
    picked = in_terminal(80, "runs", "--db", demo_db, "--columns", "ordinal,errors", "--no-pager")
    assert picked.splitlines()[0].split() == ["ordinal", "│", "errors"] and "more column" not in picked


def test_long_output_goes_through_the_pager_unless_told_not_to(demo_db: Path, tmp_path: Path) -> None:
    pager = tmp_path / "pager"
    pager.write_text("#!/bin/sh\nsed 's/^/paged: /'\n")
    pager.chmod(0o755)
    paged = in_terminal(120, "query", "timeline", "--db", demo_db, rows=20, env={"PAGER": str(pager)})
    assert paged.startswith("paged:  ts ")
    direct = in_terminal(120, "query", "timeline", "--db", demo_db, "--no-pager", rows=20, env={"PAGER": str(pager)})
    assert "paged:" not in direct
    short = in_terminal(120, "query", "config-diff", "--db", demo_db, rows=20, env={"PAGER": str(pager)})
    assert "paged:" not in short  # fits the screen


def test_asking_for_what_does_not_exist_says_what_does(demo_db: Path) -> None:
    def error(*args: str) -> str:
        result = subprocess.run([sys.executable, "-m", "logmine", *args, "--db", demo_db], capture_output=True,
                                text=True)
        assert result.returncode == 2 and result.stdout == ""
        return result.stderr.strip()

    assert error("runs", "--run", "7") == "logmine: no run 7; the runs are journal.txt: 1-3"
    assert error("query", "load-time", "--source", "other.log") == (
        "logmine: no source 'other.log'; the sources are journal.txt")
    assert error("query", "commands", "--session", "ses_x").startswith(
        "logmine: no session 'ses_x'; the sessions are ses_31e9d8b1fffedQZdcgNedb0kzV")
    assert error("query", "runs", "--columns", "nope").startswith("logmine: no column nope; the columns are: source,")
    shown = subprocess.run([sys.executable, "-m", "logmine", "runs", "--source", "journal.txt", "--run", "2",
                            "--db", demo_db, "--format", "tsv"], capture_output=True, text=True).stdout
    assert shown.splitlines()[1].split("\t")[:2] == [f"{DEMO}/journal.txt", "2"]


def test_discoverability(demo_db: Path) -> None:
    helped = in_terminal(80, "query", "--help")
    assert "memory-budget " in helped and max(len(line) for line in helped.splitlines()) <= 80
    listed = subprocess.run([sys.executable, "-m", "logmine", "tables", "--db", demo_db, "--format", "tsv"],
                            capture_output=True, text=True).stdout
    counts = {line.split("\t")[0]: int(line.split("\t")[2]) for line in listed.splitlines()[1:]}
    assert counts["lines"] == 1205 and counts["decode_batches_by_run"] == 789 and counts["runs"] == 3


def test_the_table_rules_in_one_process() -> None:
    """Shortest unique suffixes, cutting text before giving up, records when nothing can be cut."""
    assert shortest_unique_suffixes(["a/x/j.log", "b/x/j.log", "c/k.log", "a/x/j.log"]) == [
        "a/x/j.log", "b/x/j.log", "k.log", "a/x/j.log"]
    rows = Rows(["run", "path", "text"], [(1, "/etc/systemd/system/sglang.service", "word " * 40)])
    table = render(rows, "table", 45).splitlines()
    assert table[0].split() == ["run", "│", "path", "│", "text"] and max(map(len, table)) <= 45
    assert "│ …m/sglang.service │ word" in table[2] and table[2].endswith("…")  # a path keeps its end, text its start
    sources = Rows(["source", "n", "note"],
                   [(f"mattbucci__smoke-256k__{m}.log", 1, "x" * 30) for m in ("Qwen3.6", "GLM")])
    names = [line.split(" │ ")[0].strip() for line in render(sources, "table", 50).splitlines()[2:]]
    assert names == ["…ke-256k__Qwen3.6.log", "…_smoke-256k__GLM.log"]  # a source's name keeps its end, slashes or not
    records = render(Rows(["a_long_figure_name", "another_long_figure"], [(1.5, 2)]), "table", 30)
    assert records.splitlines() == ["-[ RECORD 1 ]-----------------", "a_long_figure_name  │ 1.5",
                                    "another_long_figure │ 2"]
    assert render(rows, "tsv", columns=["text", "run"]).splitlines()[1] == "word " * 39 + "word \t1"


# Log text that would act on a terminal: OSC 52 (write the clipboard), OSC 8 (a link), OSC 0 (the title),
# a C1 CSI and a right-to-left override.
ACTING = "\x1b]52;c;cm0gLXJmIH4=\x07 \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b]0;pwned\x07 \x9b2J \u202etxt"


def test_text_that_would_act_on_a_terminal_is_shown_escaped_there_and_kept_in_piped_csv(tmp_path: Path) -> None:
    name = "odd\x1b]0;t\x07\nname.log"
    log = tmp_path / name
    log.write_text(f"[2026-03-01 10:00:00 TP0] unknown {ACTING}\n")
    db = tmp_path / "t.duckdb"
    summary = in_terminal(200, "ingest", str(log), "--db", str(db))
    # (the progress bar on stderr moves the cursor: only the name's own sequence is looked for)
    assert "\x1b]0;t" not in summary and "odd\\x1b]0;t\\x07\\x0aname.log: new" in summary
    for fmt in ("table", "csv", "tsv", "markdown", "json"):
        shown = in_terminal(400, "unparsed", "--db", str(db), "--format", fmt, rows=200)
        assert not any(c in shown for c in "\x1b\x07\x9b\u202e"), fmt
        assert ("\\u001b]52" if fmt == "json" else "\\x1b]52;c;") in shown, fmt
    piped = subprocess.run([sys.executable, "-m", "logmine", "unparsed", "--db", str(db), "--format", "csv"],
                           capture_output=True, text=True, check=True).stdout
    assert ACTING in piped  # a file of the data keeps it as logged
