"""Each run figure derived once: the KV pool of `queries/views/kv_pools.sql` is what `runs`, `memory-budget`
and the claim checker's `measurements` all say, also for a run whose log shows only the scheduler's capacity
line (no KV allocation line), where `runs` alone once had the tokens."""

from __future__ import annotations

from pathlib import Path

from logmine import api

# SGLang v0.4 on 2 GPUs: no "KV Cache is allocated" line, only the scheduler's capacity line per rank.
CAPACITY_ONLY = """\
[2025-03-08 12:28:01] server_args=ServerArgs(model_path='Qwen/Qwen2.5-7B-Instruct', tp_size=2, \
mem_fraction_static=0.88, random_seed=7)
[2025-03-08 12:28:10 TP0] Init torch distributed begin.
[2025-03-08 12:28:10 TP1] Init torch distributed begin.
[2025-03-08 12:28:12 TP0] Load weight begin. avail mem=78.50 GB
[2025-03-08 12:28:12 TP1] Load weight begin. avail mem=78.50 GB
[2025-03-08 12:28:29 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=71.30 GB
[2025-03-08 12:28:29 TP1] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=71.30 GB
[2025-03-08 12:28:31 TP0] max_total_num_tokens=46611, chunked_prefill_size=2048, max_prefill_tokens=16384, \
max_running_requests=2049, context_len=131072
[2025-03-08 12:28:31 TP1] max_total_num_tokens=46611, chunked_prefill_size=2048, max_prefill_tokens=16384, \
max_running_requests=2049, context_len=131072
[2025-03-08 12:28:40] The server is fired up and ready to roll!
"""


def test_a_pool_known_by_its_capacity_line_is_the_same_pool_everywhere(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(CAPACITY_ONLY)
    db = tmp_path / "t.duckdb"
    api.ingest([str(log)], db=db)
    with api.open_db(db) as con:
        runs = api.query(con, "runs")
        budget = api.query(con, "memory-budget")
        measured = api.query(con, "measurements")
    assert runs["kv_tokens"].tolist() == [46611]
    per_rank = budget[budget["rank"].isin(["TP0", "TP1"])]
    assert per_rank["kv_tokens"].tolist() == [46611, 46611]
    tokens = measured[measured["quantity"] == "kv_tokens"]
    assert tokens[["scope", "value"]].values.tolist() == [["rank", 46611.0]]
    assert tokens["measured_source"].iloc[0].endswith("server.log:8")  # the capacity line it was read from
