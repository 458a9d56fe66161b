"""Lines of SGLang v0.5.19 - v0.5.23, typed with their figures: the server_args dump as a dict, `Init parallel`,
graph captures that print their batch sizes at the end and name other devices, hybrid models' batch
statistics, and the pools of Mamba models with speculative decoding and HiCache."""

from __future__ import annotations

import json
from pathlib import Path

from logmine import api

from .test_formats import ingest_lines

ARGS = ("{'model_path': 'Qwen/Qwen3.6-35B-A3B', 'tp_size': 2, 'mem_fraction_static': 0.8, "
        "'enable_hierarchical_cache': True, 'hicache_ratio': 2.0, 'speculative_algorithm': 'EAGLE', "
        "'cuda_graph_config': {'decode': {'backend': 'full', 'bs': [1, 2, 4, 8]}}, 'api_key': '<redacted>'}")


def launch(hour: int, fraction: float) -> list[str]:
    """One start of a two-rank Mamba hybrid with MTP and HiCache, as v0.5.23 logs it."""
    def at(second: int, ranks: str, body: str) -> str:
        return f"[2026-12-01 {hour:02d}:00:{second:02d}{' ' + ranks if ranks else ''}] {body}"

    lines = [at(0, "", "server_args=" + ARGS.replace("0.8", str(fraction)))]
    for tp in (0, 1):
        rank = f"TP{tp}"
        lines += [
            at(1, rank, "Init parallel begin."),
            at(2, rank, "Init parallel ends. elapsed=1.25 s"),
            at(2, rank, "Memory baseline taken. mem usage=0.23 GB"),
            at(3, rank, "Load weight begin. avail mem=78.64 GB"),
            at(9, rank, "Load weight end. elapsed=6.10 s, type=Qwen3_5MoeForCausalLM, avail mem=44.00 GB, "
                        "mem usage=34.64 GB."),
            at(10, rank, "Mamba Cache is allocated. max_mamba_cache_size: 176, conv_state size: 0.37GB, "
                         "ssm_state size: 8.86GB intermediate_ssm_state_cache size: 1.20GB "
                         "intermediate_conv_window_cache size: 0.05GB "),
            at(10, rank, "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 400000, KV size: 18.31 GB"),
            at(11, rank, "Allocating MHA hierarchical KV host pool: 800000 tokens, 36.62 GB host memory, packed MTP "
                         "KV layers: target_layers=10, draft_layers=1, total_layers=11."),
            at(11, rank, "Allocating 3.21 GB host memory for hierarchical Mamba cache (512 state slots, "
                         "layout=layer_first)."),
            at(12, rank, "Memory pool end. avail mem=13.22 GB"),
            at(13, rank, "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, "
                         "avail mem=12.41 GB"),
            at(31, rank, "Capture target verify CUDA graph end. bs=[1, 2, 4, 8], elapsed=18.62 s, mem usage=0.43 GB, "
                         "avail mem=11.98 GB."),
            at(32, rank, "Capture draft extend CUDA graph begin. step=0, avail mem=11.98 GB"),
            at(33, rank, "Capture draft extend CUDA graph end. step=0, elapsed=1.20 s, mem usage=0.30 GB, "
                         "avail mem=11.68 GB."),
        ]
    lines += [
        at(34, "TP0", "max_total_num_tokens=400000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                      "max_running_requests=48, context_len=262144, available_gpu_mem=11.68 GB"),
        at(35, "", "The server is fired up and ready to roll!"),
        at(36, "TP0", "Prefill batch, #new-seq: 1, #new-token: 812, #cached-token: 0, full token usage: 0.01, "
                      "mamba usage: 0.02, #running-req: 0, #queue-req: 0, input throughput (token/s): 900.10, "
                      "cuda graph: False"),
        at(37, "TP0", "Decode batch, #running-req: 32, #full token: 95000, full token usage: 0.81, mamba num: 32, "
                      "mamba usage: 0.18, accept len: 3.10, accept rate: 0.70, cuda graph: True, "
                      "gen throughput (token/s): 1210.10, #queue-req: 0"),
    ]
    return lines


def test_a_recent_launch_is_typed_with_its_figures(tmp_path: Path) -> None:
    # One plain file, two launches: only the server_args dumps tell them apart.
    con = ingest_lines(tmp_path, launch(10, 0.8) + launch(11, 0.85))
    assert con.execute("SELECT count(*) FROM lines WHERE kind IS NULL OR kind = 'notice'").fetchone() == (0,)
    runs = api.runs(con)
    assert runs["ranks"].tolist() == [2, 2]
    args = [json.loads(a) for (a,) in con.execute("SELECT args FROM server_args ORDER BY line_no").fetchall()]
    assert [(a["mem_fraction_static"], a["cuda_graph_config"]["decode"]["bs"]) for a in args] == \
        [(0.8, [1, 2, 4, 8]), (0.85, [1, 2, 4, 8])]
    assert con.execute("SELECT n_args, truncated FROM server_args").fetchall() == [(8, False)] * 2

    load = api.query_rows(con, "load-time", run=1).to_pandas()
    assert load.set_index("rank")["init_s"].to_dict() == {"TP0": 1.25, "TP1": 1.25}
    graphs = con.execute("SELECT role, stage, graph, batch_sizes, elapsed_s, mem_usage_gib FROM cuda_graphs "
                         "WHERE phase = 'end' AND tp = 0 ORDER BY line_no LIMIT 2").fetchall()
    assert graphs == [("target", "verify", "CUDA", "[1, 2, 4, 8]", 18.62, 0.43),
                      ("draft", "extend", "CUDA", None, 1.2, 0.3)]

    budget = api.query_rows(con, "memory-budget", run=1).to_pandas().set_index("rank")
    assert budget.loc["TP0", "mamba_state_gib"] == round(0.37 + 8.86 + 1.20 + 0.05, 2)
    assert budget.loc["all ranks", "host_cache_gb"] == round(2 * (36.62 + 3.21), 2)

    decode = con.execute("SELECT tokens, token_usage, accept_len, extra FROM decode_batches").fetchall()[0]
    assert decode == (95000, 0.81, 3.1, {"mamba num": "32", "mamba usage": "0.18"})
    assert con.execute("SELECT token_usage FROM prefill_batches LIMIT 1").fetchone() == (0.01,)
    serving = api.query_rows(con, "serving", run=1).to_pandas()
    assert serving["token_usage_peak"].tolist() == [0.81]


def test_graphs_of_other_devices_and_late_errors(tmp_path: Path) -> None:
    con = ingest_lines(tmp_path, [
        "[2026-12-01 10:00:00 TP0] Capture target decode NPU graph begin. backend=full, num_tokens_per_req=1, "
        "bs=[1, 2, 4], avail mem=40.10 GB",
        "[2026-12-01 10:00:30 TP0] Capture target decode NPU graph end. elapsed=30.10 s, mem usage=1.20 GB, "
        "avail mem=38.90 GB.",
        "[2026-12-01 10:00:31 TP0] Post-capture KV sizing: full_layer_tokens=524288, swa_layer_tokens=419430",
        "[2026-12-01 10:00:31 TP0] Post-capture KV sizing: draft KV cache allocated. dtype: torch.bfloat16, "
        "#tokens: 90000, KV size: 1.25 GB",
        "[2026-12-01 10:00:32 TP0] MiniMax MSA-v1 main NVFP4 KV Cache is allocated. dtype: torch.uint8, "
        "#tokens: 524288, KV size: 20.50 GB",
        "[2026-12-01 10:00:40] TokenizerManager watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
        "[2026-12-01 10:00:41 TP0] ValueError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.5. Raise --mem-fraction-static above 0.612.",
    ])
    assert con.execute("SELECT graph, batch_sizes, elapsed_s FROM cuda_graphs ORDER BY line_no").fetchall() == \
        [("NPU", "[1, 2, 4]", None), ("NPU", None, 30.1)]
    assert con.execute("SELECT kind, label, tokens, kv_size_gib FROM kv_cache ORDER BY line_no").fetchall() == [
        ("swa_pool_split", None, None, None), ("kv_cache_post_capture", "draft", 90000, 1.25),
        ("kv_cache_allocated", "MiniMax MSA-v1 main NVFP4", 524288, 20.5)]
    assert [k for (k,) in con.execute("SELECT kind FROM shutdown_events ORDER BY line_no").fetchall()] == \
        ["watchdog_timeout", "not_enough_memory"]
