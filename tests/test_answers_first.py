"""The first screen answers the question (issue 26): the views of `runs`, `load-time` and `memory-budget`
in a real terminal at 80 and 120 columns, the summary, help for small mistakes, one value per figure."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from logmine import api
from logmine.inputs.sources import looks_binary
from logmine.terminal.table_view import rank_span

from .test_terminal import in_terminal

# A run that fails while it starts, as SGLang v0.5 logs it to a plain file: the exception is its cause.
FAILED_RUN = """\
[2026-03-05 10:00:00] server_args=ServerArgs(model_path='/models/Qwen3-8B', served_model_name='qwen3-8b', \
tp_size=1, mem_fraction_static=0.9, random_seed=1066034123)
[2026-03-05 10:00:05 TP0] Init torch distributed begin.
[2026-03-05 10:00:06 TP0] Init torch distributed ends. mem usage=0.00 GB
[2026-03-05 10:00:06 TP0] Load weight begin. avail mem=78.50 GB
[2026-03-05 10:00:40 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=63.20 GB, \
mem usage=15.30 GB.
[2026-03-05 10:00:41 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sglang/python/sglang/srt/managers/scheduler.py", line 2310, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)
  File "/sglang/python/sglang/srt/model_executor/model_runner.py", line 1320, in init_memory_pool
    raise RuntimeError("Not enough memory. Please try to increase --mem-fraction-static.")
RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.

[2026-03-05 10:00:42] Received sigquit from a child process. It usually means the child failed.
"""


def table_rows(shown: str) -> list[str]:
    """The data rows of a terminal table: the lines between its rule and its note."""
    lines = shown.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("─"))
    rows = []
    for line in lines[rule + 1:]:
        if not line or line.startswith("("):  # the note on what was left out, or what follows the table
            break
        rows.append(line)
    return rows


@pytest.mark.parametrize("columns", [80, 120])
def test_runs_shows_when_each_start_began_and_how_long_it_took(kimi_db: Path, columns: int) -> None:
    shown = in_terminal(columns, "runs", "--db", str(kimi_db), "--no-pager")
    assert shown.startswith("source journal.txt, on 2026-03-01\n")
    rows = table_rows(shown)
    assert len(rows) == 3 and max(map(len, shown.splitlines())) <= columns
    for row, (ordinal, started) in zip(rows, [(1, "22:41:10"), (2, "23:31:07"), (3, "23:33:42")], strict=True):
        assert row.split()[0] == str(ordinal) and started in row
    assert "690.0" in rows[0] and "736.0" in rows[2] and "159277" in rows[0] and "10.42" in rows[2]
    assert "44.77" in rows[2] and "restarted" in rows[0] and "running" in rows[2]


@pytest.mark.parametrize("columns", [80, 120])
def test_memory_budget_of_run_3_in_at_most_three_rows(kimi_db: Path, columns: int) -> None:
    shown = in_terminal(columns, "query", "memory-budget", "--run", "3", "--db", str(kimi_db), "--no-pager")
    assert shown.startswith("source journal.txt, run 3\n")
    rows = table_rows(shown)
    assert len(rows) <= 3 and rows[0].startswith(" TP0-7 (8 ranks)")
    assert all(figure in rows[0] for figure in ("159277", "10.42", "44.77")) and "358.16" in rows[1]


@pytest.mark.parametrize("columns", [80, 120])
def test_load_time_shows_every_phase_that_happened(kimi_db: Path, columns: int) -> None:
    shown = in_terminal(columns, "query", "load-time", "--run", "3", "--db", str(kimi_db), "--no-pager")
    header = "\n".join(shown.splitlines()[:3])
    for word in ("warmup", "host", "cache", "weights", "graphs", "total"):
        assert re.search(rf"(^|[ │]){word}( |$)", header, re.M), word
    rows = table_rows(shown)
    assert len(rows) == 8 and max(map(len, shown.splitlines())) <= columns
    tp0 = rows[0].replace("│", " ").split()
    assert tp0[:4] == ["TP0", "20.0", "1.1", "402.18"] and "101.0" in tp0 and "45.0" in tp0 and "736.0" in tp0


@pytest.mark.parametrize("columns", [80, 120])
def test_a_failed_run_says_what_failed(tmp_path: Path, columns: int) -> None:
    log = tmp_path / "server.log"
    log.write_text(FAILED_RUN)
    db = tmp_path / "failed.duckdb"
    api.ingest([str(log)], db=db)
    rows = table_rows(in_terminal(columns, "runs", "--db", str(db), "--no-pager"))
    assert len(rows) == 1 and "failed" in rows[0] and "RuntimeError: Not enough memory" in rows[0]


def test_identical_ranks_are_one_row_and_different_ones_their_own() -> None:
    assert rank_span([f"TP{i}" for i in range(8)]) == "TP0-7 (8 ranks)"
    assert rank_span(["TP0", "TP2"]) == "TP0,2 (2 ranks)"
    assert rank_span(["DP0 TP1", "DP1 TP0"]) == "DP0 TP1,DP1 TP0 (2 ranks)"
    from logmine.query.rows import Rows
    from logmine.terminal.render import render
    from logmine.terminal.table_view import TableView

    view = TableView({"rank": "rank", "kv_gib": "KV GiB"}, once=["run"], ranks=["rank"])
    rows = Rows(["run", "rank", "kv_gib"], [(1, f"TP{i}", 9.0 if i == 5 else 10.42) for i in range(8)])
    shown = render(rows, "table", 80, view=view)
    assert shown.startswith("run 1\n") and [line.split("│")[0].strip() for line in table_rows(shown)] == [
        "TP0-4,6-7 (7 ranks)", "TP5"]


def test_the_summary_tells_the_story_in_one_screen(kimi_db: Path) -> None:
    for args in (["summary", "--db", str(kimi_db)], ["--db", str(kimi_db)]):
        shown = in_terminal(100, *args, env={"PAGER": "cat"})
        assert shown.startswith("3 server starts of kimi-k2.5 (8 ranks) in journal.txt")
        assert "ready after 690 s" in shown and "358.16 GB in total" in shown
        assert table_rows(shown)[2].replace("│", " ").split()[:2] == ["3", "23:33:42"]
    # --db before the command is the command's database too
    listed = subprocess.run([sys.executable, "-m", "logmine", "--db", str(kimi_db), "runs", "--format", "csv",
                             "--columns", "ordinal,load_seconds"], capture_output=True, text=True, cwd=kimi_db.parent)
    assert listed.stdout.split() == ["ordinal,load_seconds", "1,690.0", "2,", "3,736.0"]
    assert error("--db", str(kimi_db.parent / "none.duckdb")).endswith("none.duckdb: no such database (run "
                                                                      "`logmine ingest` first)")


def error(*args: str, cwd: Path | None = None) -> str:
    result = subprocess.run([sys.executable, "-m", "logmine", *args], capture_output=True, text=True, cwd=cwd)
    assert result.returncode == 2 and result.stdout == "", result
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr.strip()


def test_mistyped_commands_and_queries_get_the_nearest(demo_db: Path) -> None:
    assert error("errors", "--db", str(demo_db)) == (
        "logmine: no command 'errors'; the query is run by `logmine query errors`")
    assert error("rnus") == "logmine: no command 'rnus'; did you mean `logmine runs` or `logmine query runs`?"
    assert error("lod-time") == "logmine: no command 'lod-time'; did you mean `logmine query load-time`?"
    assert error("query", "load-tme", "--db", str(demo_db)) == (
        "logmine: no query named 'load-tme'; did you mean load-time? (`logmine query` lists them)")


def test_a_bare_run_on_several_sources_is_refused_everywhere(two_journals_db: Path) -> None:
    expected = ("logmine: run '1': several sources have runs (gpu-a/journal.txt, gpu-b/journal.txt); "
                "give --source too")
    for command in (["query", "load-time"], ["query", "memory-budget"], ["runs"], ["claims"], ["query", "ends"]):
        assert error(*command, "--run", "1", "--db", str(two_journals_db)) == expected, command
    with api.open_db(two_journals_db) as con:
        one = api.query(con, "load-time", run=1, source="gpu-b/journal.txt")
    assert set(one["run"]) == {1} and len(set(one["source"])) == 1


def test_an_ingest_that_stores_nothing_leaves_no_database(tmp_path: Path) -> None:
    noise = tmp_path / "noise.bin"
    noise.write_bytes(random.Random(7).randbytes(2048))
    for inputs in (["missing.log"], [str(noise)], ["missing.log", str(noise)]):
        result = subprocess.run([sys.executable, "-m", "logmine", "ingest", *inputs, "--db", "new.duckdb"],
                                capture_output=True, text=True, cwd=tmp_path)
        assert result.returncode == 1 and "nothing was stored: new.duckdb was not made" in result.stdout
        assert sorted(p.name for p in tmp_path.iterdir()) == ["noise.bin"]


def test_unparsed_of_one_source(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("[2026-03-05 10:00:00] something logmine does not know\n")
    (tmp_path / "b.log").write_text("[2026-03-05 10:00:00] another unknown message here\n")
    db = tmp_path / "u.duckdb"
    api.ingest([str(tmp_path / "a.log"), str(tmp_path / "b.log")], db=db)
    shown = subprocess.run([sys.executable, "-m", "logmine", "unparsed", "--db", str(db), "--source", "b.log",
                            "--format", "tsv"], capture_output=True, text=True).stdout.splitlines()
    assert len(shown) == 2 and "another unknown message" in shown[1]
    assert error("unparsed", "--db", str(db), "--source", "c.log") == (
        "logmine: no source 'c.log'; the sources are a.log, b.log")


def test_random_bytes_are_never_a_log() -> None:
    generator = random.Random(26)
    sizes = [64, 256, 2048, 8192]
    assert all(looks_binary(generator.randbytes(size)) for size in sizes for _ in range(500))
    latin1 = "[2026-03-05 10:00:00 TP0] Modèle chargé: café, résumé, déjà vu\n".encode("latin-1") * 20
    assert not looks_binary(latin1)  # a log with a few bytes that are not UTF-8 is still a log


# Each figure of the kimi-k25 story, found by its words in the report (HTML and Markdown) and the summary.
FIGURES = {
    "hicache total GiB": r"358\.16 GB \((\d+\.\d+) GiB\)",
    "hicache pinning s": r"(?:pinned in |HiCache host pool\W+(?:<[^>]*>\W*)*(?:\|\s*)*)(\d+) s",
    "run 1 ready s": r"[Rr]un 1 (?:was )?ready after (\d+) s",
    "run 3 ready s": r"[Rr]un 3 (?:was )?ready after (\d+) s",
    "kv tokens": r"KV pool (?:holds )?([\d,]+) tokens",
    "hicache per rank GB": r"HiCache (\d+\.\d+) GB per rank",
}


def test_every_figure_has_one_value(kimi_db: Path) -> None:
    with api.open_db(kimi_db) as con:
        texts = {"html": api.report(con, fmt="html"), "markdown": api.report(con, fmt="markdown"),
                 "summary": " ".join(api.summary(con))}
    assert texts["markdown"].startswith("# Postmortem: kimi-k2.5 on kimi-node, 2026-03-01\n")
    for figure, pattern in FIGURES.items():
        found = {name: set(re.findall(pattern, " ".join(text.split()))) for name, text in texts.items()}
        values = set().union(*found.values())
        assert len(values) == 1, (figure, found)
        assert found["markdown"] and found["html"], (figure, found)
    assert set(re.findall(FIGURES["hicache total GiB"], texts["markdown"])) == {"333.56"}


def sixteen_ranks(slow: int = 9) -> str:
    """A TP=16 start, as SGLang logs it, in which one rank (`slow`) loads its weights 40 s later than the rest
    and reports 0.10 GB more for them."""
    start = datetime(2026, 3, 7, 9, 0, 0)

    def at(seconds: int) -> str:
        return (start + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")

    out = [f"[{at(0)}] server_args=ServerArgs(model_path='/models/DeepSeek-V3', served_model_name='deepseek-v3', "
           "tp_size=16, mem_fraction_static=0.85, random_seed=7)"]
    for rank in range(16):
        late = 40 if rank == slow else 0
        weights = "70.10" if rank == slow else "70.00"
        tag = f"TP{rank}"
        out += [f"[{at(10)} {tag}] Init torch distributed begin.",
                f"[{at(11)} {tag}] Init torch distributed ends. elapsed=1.00 s, mem usage=0.50 GB",
                f"[{at(12)} {tag}] Load weight begin. avail mem=79.00 GB",
                f"[{at(112 + late)} {tag}] Load weight end. elapsed={100 + late}.00 s, type=DeepseekV3ForCausalLM, "
                f"dtype=torch.bfloat16, avail mem=9.00 GB, mem usage={weights} GB.",
                f"[{at(113 + late)} {tag}] KV Cache is allocated. #tokens: 120000, KV size: 4.00 GB",
                f"[{at(114 + late)} {tag}] Memory pool end. avail mem=5.00 GB",
                f"[{at(115 + late)} {tag}] Capture cuda graph begin. This can take up to several minutes. "
                "avail mem=5.00 GB",
                f"[{at(135 + late)} {tag}] Capture cuda graph end. Time elapsed: 20.00 s. mem usage=0.90 GB. "
                "avail mem=4.10 GB."]
    out += [f"[{at(180)}] INFO:     Application startup complete.",
            f"[{at(180)}] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
            f"[{at(182)}] The server is fired up and ready to roll!"]
    return "\n".join(out) + "\n"


LONG_NAME = "deepseek-v3-2x8-h100-tp16-staging-cluster-rack4-node12.log"


def test_a_report_of_sixteen_ranks_collapses_what_is_equal_and_names_the_file_once(tmp_path: Path) -> None:
    (tmp_path / LONG_NAME).write_text(sixteen_ranks())
    db = tmp_path / "r16.duckdb"
    api.ingest([str(tmp_path / LONG_NAME)], db=db)
    with api.open_db(db) as con:
        markdown, html = api.report(con, fmt="markdown"), api.report(con, fmt="html")
    assert markdown.startswith("# Postmortem: deepseek-v3, 2026-03-07\n")
    phases = next(line for line in markdown.splitlines() if line.startswith("| phase |"))
    assert phases == "| phase | run 1 TP0-8,10-15 (15 ranks) | run 1 TP9 |"
    weights = next(line for line in markdown.splitlines() if line.startswith("| weights |"))
    assert weights == "| weights | 100 s [`:5`] | 140 s [`:77`] |"
    assert f"_Cited lines: {LONG_NAME}_" in markdown.replace("\\", "")
    tables = re.findall(r"<table>.*?</table>", html, re.S)
    assert tables and not any(f">{LONG_NAME}" in t.replace("<wbr>", "") for t in tables)
    assert f"Cited lines: {LONG_NAME}" in html
    memory = re.search(r"_Chart \(in the HTML report\): run 1, TP0-8,10-15 \(15 ranks\): weights 70.00 GiB.*"
                       r"run 1, TP9: weights 70.10 GiB", markdown)
    assert memory


def test_a_lab_on_a_host_reached_over_ssh_says_how_to_reach_it(tmp_path: Path) -> None:
    from logmine.lab.server import Lab

    lab = Lab(None, 8890, "abc123", tmp_path)  # type: ignore[arg-type]  # no server: only its addresses
    assert lab.url == "http://127.0.0.1:8890/lab?token=abc123"
    assert lab.ssh_hint({"SSH_CONNECTION": "10.0.0.5 52100 10.1.230.174 22", "USER": "ops"}) == (
        "from your machine: ssh -N -L 8890:127.0.0.1:8890 ops@10.1.230.174\n"
        "  then open http://127.0.0.1:8890/lab?token=abc123")
    assert lab.ssh_hint({}) is None  # on the user's own machine the URL is enough
    everywhere = Lab(None, 8890, "abc123", tmp_path, ip="0.0.0.0")  # type: ignore[arg-type]
    assert everywhere.url.startswith("http://127.0.0.1:8890/")
    helped = subprocess.run([sys.executable, "-m", "logmine", "lab", "--help"], capture_output=True, text=True).stdout
    assert "--ip TEXT" in helped and "127.0.0.1" in helped and "token is always required" in " ".join(helped.split())
