"""Runs, configurations and the named queries against scenarios whose answers are known."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from logmine import api
from logmine.derive import runs as run_segmentation

from .conftest import SAMPLE, shared_path

RENDERINGS = ["journal.txt", "journal.jsonl", "journal-cat.txt"]
# journalctl -o cat drops the envelope, so systemd's own lines carry no time and no PID: the
# start/end times that only systemd logged, and a PID that only journald knew, cannot be read.
NOT_IN_CAT_OUTPUT = {"started_at", "ended_at", "load_seconds", "pid"}
TIMES = {"started_at", "ready_at", "ended_at"}


def rounded(value: object) -> object:
    return round(value, 2) if isinstance(value, float) else value


@pytest.mark.parametrize("rendering", RENDERINGS)
def test_kimi_runs_match_truth(rendering: str, ingested) -> None:
    truth = json.loads(shared_path("samples", "kimi-k25", "truth.json").read_text())
    con = ingested(SAMPLE / rendering)
    runs = json.loads(api.render(api.runs(con), "json"))
    assert [r["ordinal"] for r in runs] == [t["ordinal"] for t in truth["runs"]]
    for got, want in zip(runs, truth["runs"], strict=True):
        for key, value in want.items():
            if key == "config":
                assert {k: got["config"][k] for k in value} == value
            elif rendering == "journal-cat.txt" and key in NOT_IN_CAT_OUTPUT:
                continue
            elif key in TIMES and value is not None:
                # truth is read off the short output, to the second; JSON gives microseconds, kept as given
                assert got[key][:19] == value, (got["ordinal"], key)
            elif key == "load_seconds" and value is not None:
                assert abs(got[key] - value) < 1, (got["ordinal"], key)
            else:
                assert rounded(got[key]) == value, (got["ordinal"], key)


@pytest.mark.parametrize("rendering", RENDERINGS)
def test_kimi_config_diffs_match_truth(rendering: str, ingested) -> None:
    truth = json.loads(shared_path("samples", "kimi-k25", "truth.json").read_text())
    con = ingested(SAMPLE / rendering)
    diffs = json.loads(api.render(api.query(con, "config-diff"), "json"))
    for want in truth["config_diffs"]:
        got = {d["key"]: [d["old"], d["new"]] for d in diffs
               if (d["from_run"], d["to_run"]) == (want["from_run"], want["to_run"])}
        # Every changed key is reported; truth lists the keys it tracks (random_seed is unpinned).
        assert {k: got[k] for k in want["changed"]} == want["changed"]
        assert set(got) - set(want["changed"]) <= {"random_seed"}


def test_the_three_renderings_give_the_same_typed_events(ingested) -> None:
    shared_path("samples", "kimi-k25")
    tables = ["weight_loads", "kv_cache", "memory_pool", "capacity", "host_cache", "cuda_graphs",
              "prefill_batches", "decode_batches", "retractions", "http_requests", "server_args", "systemd"]
    counts = []
    for rendering in RENDERINGS:
        con = ingested(SAMPLE / rendering)
        counts.append({t: con.execute(f"SELECT kind, count(*) FROM {t} GROUP BY ALL ORDER BY ALL").fetchall()
                       for t in tables})
    assert counts[0] == counts[1] == counts[2]


def test_kimi_load_time_and_memory_budget(ingested) -> None:
    con = ingested(shared_path("samples", "kimi-k25", "journal.txt"))
    load = api.query(con, "load-time", run=3).set_index("rank")
    tp0 = load.loc["TP0"]
    assert (tp0.weights_s, tp0.cuda_graph_s, tp0.draft_weights_s, tp0.host_cache_s, tp0.total_s) == (
        402.18, 140.52, 3.22, 101.0, 736.0)
    budget = api.query(con, "memory-budget", run=1).set_index("rank")
    row = budget.loc["TP0"]
    # 95.58 GiB before load x (1 - 0.88) = 11.47 GiB kept back; 21.71 - 11.47 = 10.24 GiB for KV by formula.
    assert (row.gpu_before_load_gib, row.reserve_gib, row.kv_formula_gib, row.kv_gib) == (95.58, 11.47, 10.24, 10.42)
    assert (row.draft_weights_gib, row.draft_kv_gib, row.final_available_gib) == (0.95, 0.6, 7.9)
    host = api.query(con, "memory-budget", run=3).set_index("rank").loc["all ranks"]
    assert (host.host_cache_gb, host.host_cache_gib) == (358.16, 333.56)
    # All ranks: bytes add up over the 8 ranks, the per-rank KV token count does not; the gap gets words.
    total = budget.loc["all ranks"]
    assert (total.weights_gib, total.kv_gib, total.mem_fraction_static) == (590.96, 83.36, 0.88)
    assert pd.isna(total.kv_tokens)
    assert row.kv_tokens == 159277 and row.kv_gap_cause.startswith("speculative decoding")
    stopped = api.query(con, "memory-budget", run=2).set_index("rank").loc["TP0"]
    assert stopped.kv_gap_cause == "no KV pool: the run ended before allocating it"


def test_multi_rank_start_budget_adds_up(ingested) -> None:
    """TP2 on a 24 GB card, mem_fraction_static 0.65: 17.22 - 18.73 x 0.35 = 10.66 GiB = K 5.33 + V 5.33."""
    con = ingested(shared_path("corpus", "sglang", "TianyangChen357__LLM__sglang.log"))
    budget = api.query(con, "memory-budget").set_index("rank")
    assert list(budget.index) == ["TP0", "TP1", "all ranks"]
    tp0 = budget.loc["TP0"]
    assert (tp0.gpu_before_load_gib, tp0.weights_gib, tp0.kv_formula_gib, tp0.kv_gib) == (18.73, 1.5, 10.66, 10.66)
    (run,) = api.runs(con).to_dict("records")
    assert (run["ranks"], run["weights_seconds"], run["kv_tokens"], run["end_reason"]) == (2, 24.17, 139814, "running")


def test_ranks_and_budget_count_every_rank_that_logged_a_start_up_line(tmp_path: Path, ingested) -> None:
    """v0.5.2 as a TP=8 Grok-2 server wrote it: `Init torch distributed` on TP0 only, then each rank's KV pool.
    The run was one rank, its summary "(1 rank)"."""
    kv = [f"[2025-09-11 10:25:43 TP{r}] KV Cache is allocated. #tokens: 903439, K size: 13.79 GB, V size: 13.79 GB"
          for r in (3, 6, 1, 2, 4, 0, 5, 7)]
    lines = ["[2025-09-11 10:24:10] server_args=ServerArgs(model_path='/models/grok-2', tp_size=8, pp_size=1)",
             "[2025-09-11 10:24:20 TP0] Init torch distributed begin.",
             *[f"[Gloo] Rank {r} is connected to 7 peer ranks. Expected number of connected peer ranks is : 7"
               for r in range(8)],
             "[2025-09-11 10:24:25 TP0] Load weight begin. avail mem=77.42 GB",
             "[2025-09-11 10:25:33 TP0] Load weight end. type=Grok1ForCausalLM, dtype=torch.bfloat16, "
             "avail mem=40.69 GB, mem usage=36.73 GB.", *kv,
             "[2025-09-11 10:26:05] The server is fired up and ready to roll!"]
    (tmp_path / "grok.log").write_text("\n".join(lines) + "\n")
    con = ingested(tmp_path / "grok.log")
    (run,) = api.runs(con).to_dict("records")
    assert (run["ranks"], run["tp_size"], run["kv_tokens"], run["weights_gib_per_rank"]) == (8, 8, 903439, 36.73)
    # The memory budget has a row for each of the 8 pools, and sums only what every rank logged: the KV pools,
    # not TP0's weights (the budget had TP0's row alone, and TP0's figures as the launch's).
    budget = api.query(con, "memory-budget").set_index("rank")
    assert list(budget.index) == [f"TP{r}" for r in range(8)] + ["all ranks"]
    assert budget.loc["TP1", "kv_gap_cause"] == "no formula: this rank logged no weight-load figures"
    total = budget.loc["all ranks"]
    assert total.kv_gib == 220.64 and pd.isna(total.weights_gib) and pd.isna(total.kv_formula_gib)


def test_crashed_start_is_a_failed_run_with_its_error(ingested) -> None:
    name = "mattbucci__2x-3090-GA102-300-A1-sglang-inference__benchmarks__glm-air-probe-2026-06-11__server-a2-tail.log"
    con = ingested(shared_path("corpus", "sglang", name))
    (run,) = json.loads(api.render(api.runs(con), "json"))
    assert run["end_reason"] == "failed" and run["ready_at"] is None
    assert [e["kind"] for e in run["errors"]] == ["oom"]
    assert run["errors"][0]["last_line"].startswith(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 384.00 MiB")


def test_diff_between_two_runs(ingested) -> None:
    con = ingested(shared_path("samples", "kimi-k25", "journal.txt"))
    diff = api.diff(con, "1", "3").set_index("key")
    assert diff.loc["hicache_ratio"].tolist() == [2.0, 4.0]
    assert diff.loc["enable_hierarchical_cache"].tolist() == [False, True]


def runs_and_diffs(tmp_path: Path, lines: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The `runs` and `config-diff` queries over a log of these lines."""
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    api.ingest([str(log)], db=tmp_path / "t.duckdb")
    with api.open_db(tmp_path / "t.duckdb") as con:
        return api.runs(con), api.query(con, "config-diff")


def test_plain_log_with_two_launches_is_two_runs(tmp_path) -> None:
    """No systemd, no journald PID: a second server_args dump, or a uvicorn start after the server
    process ended, begins a new run."""
    lines = [
        "[2026-05-25 17:21:50] server_args=ServerArgs(model_path='a', tp_size=1, mem_fraction_static=0.8)",
        "[2026-05-25 17:22:19] INFO:     Started server process [20080]",
        "[2026-05-25 17:22:25] The server is fired up and ready to roll!",
        "[2026-05-25 17:40:00] SIGTERM received. signum=15 frame=None. Draining requests and shutting down...",
        "[2026-05-25 17:43:20] server_args=ServerArgs(model_path='a', tp_size=1, mem_fraction_static=0.85)",
        "[2026-05-25 17:43:39] INFO:     Started server process [25892]",
        "[2026-05-25 17:49:00] INFO:     Finished server process [25892]",
        "[2026-05-25 17:50:00] INFO:     Started server process [26000]",
    ]
    runs, diff = runs_and_diffs(tmp_path, lines)
    assert runs[["ordinal", "pid", "end_reason"]].values.tolist() == [
        [1, 20080, "restarted"], [2, 25892, "restarted"], [3, 26000, "running"]]
    assert diff[["from_run", "to_run", "key", "old", "new"]].values.tolist() == [
        [1, 2, "mem_fraction_static", 0.8, 0.85]]


def test_tokenizer_workers_of_one_launch_are_one_run(tmp_path) -> None:
    """`--tokenizer-worker-num 4`: each worker logs its own uvicorn start while the launch comes up."""
    lines = ["[2026-05-25 17:21:50] server_args=ServerArgs(model_path='a', tokenizer_worker_num=4)"]
    lines += [f"[2026-05-25 17:2{2 + i}:19] INFO:     Started server process [{20080 + i}]" for i in range(4)]
    lines += ["[2026-05-25 17:31:50] The server is fired up and ready to roll!"]
    runs, _ = runs_and_diffs(tmp_path, lines)
    assert runs[["ordinal", "end_reason", "ready_at"]].astype(str).values.tolist() == [
        ["1", "running", "2026-05-25 17:31:50"]]


def test_journald_pids_whose_lifetimes_overlap_are_one_launch(tmp_path) -> None:
    """Workers logging under their own PIDs interleave with the main process: one run. A PID that
    starts after every earlier one has ended is a new launch."""
    def line(sec: int, pid: int, text: str) -> str:
        return f"May 25 17:22:{sec:02d} node python3[{pid}]: [2026-05-25 17:22:{sec:02d}] {text}"
    lines = [
        line(1, 100, "server_args=ServerArgs(model_path='a')"),
        line(2, 101, "Load weight begin. avail mem=78.64 GB"),
        line(3, 100, "INFO:     Started server process [100]"),
        line(4, 102, "Load weight begin. avail mem=78.64 GB"),
        line(5, 100, "The server is fired up and ready to roll!"),
        line(30, 200, "Load weight begin. avail mem=78.64 GB"),
        line(31, 201, "Load weight begin. avail mem=78.64 GB"),
        line(32, 200, "INFO:     Started server process [200]"),
    ]
    runs, _ = runs_and_diffs(tmp_path, lines)
    # A later launch shows the first ended, though no line of it says how.
    assert runs[["ordinal", "pid", "end_reason"]].values.tolist() == [[1, 100, "ended"], [2, 200, "running"]]
    assert runs["end_detail"].iloc[0] == "no shutdown line"
    assert runs["started_at"].astype(str).tolist() == ["2026-05-25 17:22:01", "2026-05-25 17:22:30"]


@pytest.mark.parametrize("range_join_max_runs", [0, 10_000])  # both ways of finding each line's run
def test_a_crash_loop_of_many_restarts_is_one_run_each(tmp_path, monkeypatch, range_join_max_runs: int) -> None:
    """systemd restarting a failing server for hours: each start is a run with its own PID, times and
    config, read in a few grouped queries rather than several per run."""
    monkeypatch.setattr(run_segmentation, "RANGE_JOIN_MAX_RUNS", range_join_max_runs)
    lines = []
    for i in range(1500):
        stamp, pid = f"Mar 01 {8 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}", 1000 + i
        lines += [
            f"{stamp} node systemd[1]: Starting sglang.service - SGLang...",
            f"{stamp} node python3[{pid}]: [2026-03-01 {stamp[7:]}] server_args=ServerArgs(model_path='m', "
            f"mem_fraction_static=0.{80 + i % 2})",
            f"{stamp} node systemd[1]: sglang.service: Main process exited, code=exited, status=1/FAILURE",
        ]
    runs, diff = runs_and_diffs(tmp_path, lines)
    assert len(runs) == 1500
    assert runs["pid"].tolist() == list(range(1000, 2500))
    assert runs["end_reason"].unique().tolist() == ["failed"]
    assert str(runs["started_at"].iloc[-1]) == "2026-03-01 08:24:59"
    assert len(diff) == 1499 and diff["key"].unique().tolist() == ["mem_fraction_static"]


def test_run_times_keep_the_precision_the_log_gives(tmp_path) -> None:
    """Millisecond stamps of a plain log stay milliseconds through the runs and the load time."""
    lines = [
        "[2026-05-25 17:21:50.120] server_args=ServerArgs(model_path='a', tp_size=1)",
        "[2026-05-25 17:22:57.831] The server is fired up and ready to roll!",
    ]
    runs, _ = runs_and_diffs(tmp_path, lines)
    assert runs["load_seconds"].tolist() == [67.71]
    assert str(runs["started_at"].iloc[0]) == "2026-05-25 17:21:50.120000"


def test_a_sliding_window_pool_sized_after_the_draft_weights_is_the_targets(tmp_path) -> None:
    """DFLASH loads the draft's weights before the target's pools are sized: the two pools of a
    sliding-window model are the target's (their total is the pool), the pool after them the draft's."""
    lines = [f"[2026-08-01 21:51:{i:02d}] {text}" for i, text in enumerate([
        "server_args=ServerArgs(model_path='m', speculative_algorithm='DFLASH')",
        "Load weight begin. avail mem=115.26 GB",
        "Load weight end. elapsed=618.01 s, type=M, avail mem=22.10 GB, mem usage=93.16 GB.",
        "Load weight begin. avail mem=21.69 GB",
        "Load weight end. elapsed=12.68 s, type=D, avail mem=18.98 GB, mem usage=2.71 GB.",
        "Use sliding window memory pool. full_layer_tokens=32997, swa_layer_tokens=26397",
        "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 26397, K size: 1.81 GB, V size: 1.81 GB",
        "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 32997, K size: 0.76 GB, V size: 0.76 GB",
        "SWAKVPool mem usage: 5.14 GB, swa size: 26397, full size: 32997",
        "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 32997, K size: 0.38 GB, V size: 0.38 GB",
    ])]
    runs, _ = runs_and_diffs(tmp_path, lines)
    assert runs[["kv_tokens", "kv_gib_per_rank", "weights_gib_per_rank"]].values.tolist() == [[32997, 5.14, 93.16]]
    with api.open_db(tmp_path / "t.duckdb") as con:
        roles = api.sql(con, "SELECT model_role FROM kv_cache_by_run "
                             "WHERE kind = 'kv_cache_allocated' ORDER BY line_no")
    assert roles["model_role"].tolist() == ["target", "target", "draft"]


def test_start_and_exit_lines_without_a_time_are_counted_in_runs_and_the_summary(tmp_path) -> None:
    """`journalctl -o cat` keeps SGLang's own stamps but drops systemd's: say so rather than guess. Other
    lines without a stamp (a traceback's, a library's) are usual in plain logs and say nothing of runs."""
    log = tmp_path / "cat.txt"
    log.write_text("\n".join([
        "Starting sglang.service - SGLang server...",
        "[2026-05-25 17:21:50] server_args=ServerArgs(model_path='a')",
        "[2026-05-25 17:22:50] The server is fired up and ready to roll!",
        "Traceback (most recent call last):",
        "  File \"x.py\", line 1, in <module>",
        "ValueError: boom",
        "sglang.service: Main process exited, code=killed, status=9/KILL",
    ]) + "\n")
    report = api.ingest([str(log)], db=tmp_path / "t.duckdb")
    assert [s["untimed_markers"] for s in report.as_dict()["sources"]] == [2]
    assert "2 start, stop or exit lines have no time of their own" in api.summary_text(report.as_dict())
    with api.open_db(tmp_path / "t.duckdb") as con:
        assert api.runs(con)["untimed_markers"].tolist() == [2]


def test_derived_views_ship_as_documents_but_are_no_named_queries() -> None:
    """queries/views/ holds the `_by_run` views and the parameter macros: run at every ingest, never
    offered by `logmine queries`."""
    from importlib import resources

    from logmine.query import named_queries

    views = {f.name[:-4] for f in resources.files("logmine.queries").joinpath("views").iterdir()
             if f.name.endswith(".sql")}
    assert {"by_run", "chosen"} <= views
    assert not views & set(named_queries.names())


def test_the_by_run_views_know_every_rank_tag_of_the_formats() -> None:
    """queries/views/by_run.sql names the rank columns in SQL; a rank tag added to the formats must be
    added there too, or this fails."""
    from importlib import resources

    from logmine.parsers.sglang_formats import RANK_COLUMNS

    text = resources.files("logmine.queries").joinpath("views", "by_run.sql").read_text()
    assert f"SELECT source_id, run, {', '.join(RANK_COLUMNS)}, line_no AS draft_from_line" in text
    assert text.count(f"PARTITION BY source_id, run, {', '.join(RANK_COLUMNS)}") == 2
    assert f"PARTITION BY r.run_source_id, r.run, {', '.join('e.' + c for c in RANK_COLUMNS)}" in text
    for column in RANK_COLUMNS:
        for wanted in (f"'{column.upper()}' || e.{column}", f"coalesce(e.{column}, 0)",
                       f"e.{column} IS NOT DISTINCT FROM d.{column}"):
            assert wanted in text, wanted
