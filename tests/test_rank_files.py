"""SGLang's per-rank event files are the ranks of one launch: beside the server's own log they give the runs,
ranks, KV, weights, first error and serving counts of the same launch in SGLang's single log, and alone they
are one run with their ranks (tests/rank_fixtures.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import duckdb
import pytest

from logmine import api
from logmine.query import named_queries

from .rank_fixtures import DAY, HOST, RANKS, launch, server_log, single_log, write_rank_files
from .shape_fixtures import figures, write

# What the memory-budget and errors queries must agree on (their line numbers differ: the single log holds
# the events between the server's lines).
BUDGET = ("run", "rank", "weights_gib", "kv_tokens", "kv_gib", "kv_formula_gib", "kv_gap_cause")
ERRORS = ("run", "rank", "kind", "exception_type", "last_line", "role")


def ingest(db: Path, paths: list[Path]) -> duckdb.DuckDBPyConnection:
    api.ingest([str(p) for p in paths], db=db)
    return duckdb.connect(str(db), read_only=True)


def rows(con: duckdb.DuckDBPyConnection, query: str, columns: tuple[str, ...]) -> list[dict]:
    frame = named_queries.execute(con, query)
    return [{k: (None if v != v else v) for k, v in row.items() if k in columns} for row in frame.to_dict("records")]


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, duckdb.DuckDBPyConnection]:
    """The launch as SGLang's single log, as the server's log with the events in a `requests/` folder beside
    it, and as that folder alone; each in a folder of its own, the server's log named `server.log` in each."""
    records = launch()
    single, split, alone = (tmp_path_factory.mktemp(name) for name in ("single", "split", "alone"))
    write(single / "server.log", single_log(records))
    write(split / "server.log", server_log(records))
    write_rank_files(split / "requests", records)
    write_rank_files(alone / "requests", records)
    out = {"single": ingest(single / "t.duckdb", [single / "server.log"]),
           "split": ingest(split / "t.duckdb", [split]),
           "alone": ingest(alone / "t.duckdb", [alone / "requests"])}
    yield out
    for con in out.values():
        con.close()


def test_the_fixture_rolls_each_rank_file_over_once(tmp_path: Path) -> None:
    names = sorted(p.name for p in write_rank_files(tmp_path, launch()))
    assert names == [f"{HOST}_{rank}.log{suffix}" for rank in range(RANKS) for suffix in ("", ".2026-03-01_22")]


def test_rank_files_beside_the_server_log_give_the_single_logs_figures(shapes: dict) -> None:
    single, split = shapes["single"], shapes["split"]
    assert figures(split) == figures(single)
    assert [(r["end_reason"], r["ranks"], r["kv_gib_per_rank"]) for r in figures(split)["runs"]] == \
        [("failed", RANKS, 48.96), ("stopped", RANKS, 48.96)]
    assert figures(split)["first_error"][0].startswith("torch.OutOfMemoryError: CUDA out of memory")
    served = figures(split)["serving"][1]
    assert (served["requests_received"], served["requests_finished"], served["warmup_requests"],
            served["health_checks"]) == (7, 7, 1, 1)
    for query, columns in (("memory-budget", BUDGET), ("errors", ERRORS)):
        assert rows(split, query, columns) == rows(single, query, columns) != []
    trend = ("run", "bucket", "status_running", "status_queued")
    assert rows(split, "serving-trend", trend) == rows(single, "serving-trend", trend)
    # Every event is in the served run, whichever hour's file holds it.
    assert split.execute("SELECT run, count(*) FROM json_events_by_run GROUP BY ALL").fetchall() == \
        single.execute("SELECT run, count(*) FROM json_events_by_run GROUP BY ALL").fetchall() == [(2, 31)]


def test_the_summary_is_the_single_logs(shapes: dict) -> None:
    assert api.summary(shapes["split"]) == api.summary(shapes["single"])


def test_rank_files_alone_are_one_run_with_their_ranks(shapes: dict) -> None:
    alone, single = figures(shapes["alone"]), figures(shapes["single"])
    (run,) = alone["runs"]
    assert (run["ordinal"], run["ranks"], run["end_reason"], run["kv_tokens"]) == (1, RANKS, "running", None)
    assert run["started_at"] == shapes["alone"].execute("SELECT min(ts) FROM json_events").fetchone()[0]
    counted = ("requests_received", "requests_finished", "warmup_requests", "health_checks", "e2e_latency_s_p50",
               "completion_tokens")
    assert {k: alone["serving"][0][k] for k in counted} == {k: single["serving"][1][k] for k in counted}
    source = shapes["alone"].execute("SELECT display FROM sources JOIN runs USING (source_id)").fetchone()[0]
    assert source.endswith(f"{HOST}_0.log")  # the lowest rank's file names the run


def test_aside_two_hosts_rank_files_and_an_earlier_launch_in_one_folder(tmp_path: Path) -> None:
    """Kept aside until the rest passed: a TP=4 launch over two hosts (ranks 0-1 on gpu-a, 2-3 on gpu-b, one
    shared folder) is one run of four ranks; the day before's launch on gpu-c, whose file ends before theirs
    begin, is a run of its own."""
    folder = tmp_path / "requests"
    two_hosts = launch(ranks=4)
    write_rank_files(folder, two_hosts, hosts=["gpu-a", "gpu-a", "gpu-b", "gpu-b"])
    write_rank_files(folder, launch(ranks=1, day=DAY - timedelta(days=1)), hosts=["gpu-c"])
    con = ingest(tmp_path / "t.duckdb", [folder])
    runs = api.runs(con)
    assert sorted((Path(s).name, n) for s, n in zip(runs["source"], runs["ranks"], strict=True)) == \
        [("gpu-a_0.log", 4), ("gpu-c_0.log", 1)]
    write(tmp_path / "server.log", single_log(two_hosts))
    single = ingest(tmp_path / "single.duckdb", [tmp_path / "server.log"])
    counted = ("requests_received", "requests_finished", "warmup_requests", "health_checks", "e2e_latency_s_p50")
    serving = {Path(row["source"]).name: row for row in named_queries.execute(con, "serving").to_dict("records")}
    served = named_queries.execute(single, "serving").to_dict("records")[1]
    assert {k: serving["gpu-a_0.log"][k] for k in counted} == {k: served[k] for k in counted}
    assert {k: serving["gpu-c_0.log"][k] for k in counted} == {k: served[k] for k in counted}
    con.close()
    single.close()
