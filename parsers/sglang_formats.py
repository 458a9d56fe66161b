"""Every SGLang (and systemd) message logmine types, as data.

One `Pattern` per message text per version range. A pattern is matched against the message body,
after the `[time RANKS]` prefix (and an optional foreign `LEVEL file.py:N:` or uvicorn `INFO:`) has
been removed. Named groups become columns of the pattern's event table (see `events.py`); `const`
adds fixed columns. Supporting a new SGLang release means adding a `Pattern` whose `example` is a
real line of that release (tests match every example), nothing else.

Sources: ../shared/docs/sglang-log-formats.md, sections named in each block.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# ---------------------------------------------------------------- the prefix (§1)
# `[2026-03-01 23:45:58.123 DP0 TP1] body`: the rank tags a bracket may carry, and the column each fills
# in `lines` and every event table. A rank is a small number: a larger one is no rank.
RANK_TAGS: dict[str, str] = {"DP": "dp", "PP": "pp", "ATTN_CP": "attn_cp", "MOE_DP": "moe_dp", "TP": "tp", "EP": "ep"}
RANK_COLUMNS: tuple[str, ...] = tuple(RANK_TAGS.values())
RANK_MAX = 32767
# Tags that name an encoder process rather than a rank (after the rank tags, at most one).
ROLE_TAGS = r"encode_server|encode_dp_worker\[\d+\]"
# Python logging's level names: after the bracket a foreign root handler prints `LEVEL file.py:N:` and
# uvicorn a padded `LEVEL:`.
LEVELS: tuple[str, ...] = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

NUM = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"


def num(name: str) -> str:
    return rf"(?P<{name}>{NUM})"


# What follows `KV Cache is allocated.` (and v0.5.18's `KV Cache VA upper bound.`)
KV_SIZES = (r"(?:dtype: (?P<dtype>[\w.]+), )?(?:#tokens: (?P<tokens>\d+), )?"
            rf"(?:K size: {num('k_size_gib')} GB, V size: {num('v_size_gib')} GB|KV size: {num('kv_size_gib')} GB)")


@dataclass(frozen=True)
class Pattern:
    kind: str
    table: str
    regex: str
    versions: str
    example: str
    const: dict[str, str] = field(default_factory=dict)
    # Only lines the journal attributes to this identifier (text too generic to trust elsewhere).
    ident: str | None = None


# ---------------------------------------------------------------- startup (§2.1 – §2.7)
STARTUP = (
    Pattern("server_args", "server_args", r"server_args=ServerArgs\((?P<args>.*)", "v0.3 – v0.5.18",
            "server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=2, mem_fraction_static=0.836)"),
    # v0.5.19 logs the resolved fields as a dict (nested records expanded), secrets redacted from v0.5.22.
    Pattern("server_args", "server_args", r"server_args=(?P<args>\{.*)", "v0.5.19+",
            "server_args={'model_path': 'Qwen/Qwen3-8B', 'tp_size': 2, 'mem_fraction_static': 0.836, "
            "'cuda_graph_config': {'decode': {'backend': 'full', 'bs': [1, 2, 4, 8]}}}"),
    Pattern("init_distributed_begin", "init_distributed", r"Init torch distributed begin\.", "all",
            "Init torch distributed begin.", {"phase": "begin"}),
    Pattern("init_distributed_end", "init_distributed",
            rf"Init torch distributed ends\.(?: elapsed={num('elapsed_s')} s,)? mem usage={num('mem_usage_gib')} GB",
            "v0.4.3.post3+ (elapsed v0.5.9+)",
            "Init torch distributed ends. elapsed=0.99 s, mem usage=0.23 GB", {"phase": "end"}),
    # v0.5.21 renamed the phase and moved its memory figure to a line of its own.
    Pattern("init_distributed_begin", "init_distributed", r"Init parallel begin\.", "v0.5.21+",
            "Init parallel begin.", {"phase": "begin"}),
    Pattern("init_distributed_end", "init_distributed", rf"Init parallel ends\. elapsed={num('elapsed_s')} s",
            "v0.5.21+", "Init parallel ends. elapsed=0.99 s", {"phase": "end"}),
    Pattern("memory_baseline", "init_distributed", rf"Memory baseline taken\. mem usage={num('mem_usage_gib')} GB",
            "v0.5.21+", "Memory baseline taken. mem usage=0.23 GB", {"phase": "baseline"}),
    Pattern("load_weight_begin", "weight_loads", rf"Load weight begin\. avail mem={num('avail_mem_gib')} GB",
            "all", "Load weight begin. avail mem=78.64 GB", {"phase": "begin"}),
    Pattern("load_weight_end", "weight_loads",
            r"Load weight end\. Committed real weights after CUDA graph capture in "
            rf"{num('elapsed_s')} s \(capture overlap window {num('overlap_window_s')} s, "
            rf"startup overlap total {num('overlap_total_s')} s\)",
            "v0.5.18 (weight prefetch)",
            "Load weight end. Committed real weights after CUDA graph capture in 3.10 s "
            "(capture overlap window 2.00 s, startup overlap total 5.10 s)", {"phase": "end_committed"}),
    Pattern("load_weight_end", "weight_loads",
            rf"Load weight end\. (?:elapsed={num('elapsed_s')} s, )?type=(?P<model_class>[^,]+), "
            r"(?:dtype=(?P<dtype>[^,]+), )?(?:quant=(?P<quant>[^,]+), (?:[a-z_]+=[^,]+, )*)?"
            rf"avail mem={num('avail_mem_gib')} GB(?:, mem usage={num('mem_usage_gib')} GB)?",
            "v0.3+ (mem usage v0.4.3.post3+, elapsed v0.5.9+, quant instead of dtype v0.5.10+)",
            "Load weight end. elapsed=4.43 s, type=Qwen3MoeForCausalLM, quant=awq, bits=4, "
            "avail mem=10.25 GB, mem usage=21.20 GB.", {"phase": "end"}),
    Pattern("kv_cache_allocated", "kv_cache",
            r"(?:(?P<label>.+?) )?KV Cache is allocated\. " + KV_SIZES,
            "v0.4.1.post6+ (#tokens v0.4.3.post3+, MLA v0.4.6+, dtype v0.5.13+, label v0.5.17+, "
            "labels of several words v0.5.23: `MiniMax MSA-v1 main NVFP4`)",
            "KV Cache is allocated. #tokens: 1743556, K size: 29.93 GB, V size: 29.93 GB", {"pool": "kv"}),
    # v0.5.18 reserves virtual address space before sizing the pool: the same sizes, but not an allocation.
    Pattern("kv_cache_va_upper_bound", "kv_cache",
            r"(?:(?P<label>\w+) )?KV Cache VA upper bound\. " + KV_SIZES,
            "v0.5.18",
            "KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 100, KV size: 1.00 GB",
            {"pool": "kv", "va_upper_bound": "true"}),
    # A checkpoint tensor the model has no parameter for (FP8 k/v scales of many checkpoints): one line
    # per layer, so one kind whatever the layer; the skipped name is the detail.
    Pattern("param_not_loaded", "notices",
            r"Parameter (?P<detail>\S+)(?: \(mapped to (?P<origin>\S+)\))? not found in params_dict", "v0.4+",
            "Parameter model.layers.3.self_attn.k_scale not found in params_dict, skip loading", {"topic": "weights"}),
    Pattern("kv_cache_post_capture", "kv_cache",
            r"Post-capture KV sizing: (?:(?P<label>draft) )?KV cache allocated\. dtype: (?P<dtype>[\w.]+), "
            rf"#tokens: (?P<tokens>\d+), KV size: {num('kv_size_gib')} GB(?:, avail mem={num('avail_mem_gib')} GB)?",
            "v0.5.18+ (the draft model's v0.5.23)",
            "Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, #tokens: 90000, "
            "KV size: 9.50 GB, avail mem=3.20 GB", {"pool": "kv_post_capture"}),
    Pattern("mamba_cache_allocated", "kv_cache",
            r"Mamba Cache is allocated\. max_mamba_cache_size: (?P<tokens>\d+), "
            rf"conv_state size: {num('conv_state_gib')} ?GB, ssm_state size: {num('ssm_state_gib')} ?GB"
            rf"(?: intermediate_ssm_state_cache size: {num('intermediate_ssm_gib')} ?GB"
            rf" intermediate_conv_window_cache size: {num('intermediate_conv_gib')} ?GB)?",
            "v0.5.3+ (intermediate caches with speculative decoding v0.5.19+)",
            "Mamba Cache is allocated. max_mamba_cache_size: 176, conv_state size: 0.37GB, ssm_state size: 8.86GB ",
            {"pool": "mamba"}),
    Pattern("swa_pool_split", "kv_cache",
            r"(?:Use sliding window memory pool\.|Post-capture KV sizing:) full_layer_tokens=(?P<full_tokens>\d+), "
            r"swa_layer_tokens=(?P<swa_tokens>\d+)",
            "v0.5.x (after the graphs are captured v0.5.18+)",
            "Use sliding window memory pool. full_layer_tokens=524288, swa_layer_tokens=419430",
            {"pool": "swa_split"}),
    Pattern("swa_pool_usage", "kv_cache",
            rf"SWAKVPool mem usage: {num('mem_usage_gib')} GB, swa size: (?P<swa_tokens>\d+), "
            r"full size: (?P<full_tokens>\d+)",
            "v0.5.x", "SWAKVPool mem usage: 12.5 GB, swa size: 419430, full size: 524288", {"pool": "swa"}),
    Pattern("memory_pool_end", "memory_pool", rf"Memory pool end\. avail mem={num('avail_mem_gib')} GB",
            "all", "Memory pool end. avail mem=13.22 GB"),
    Pattern("kv_available_memory", "memory_pool",
            rf"The available memory for KV cache is {num('avail_mem_gib')} GB\.", "Ascend forks",
            "The available memory for KV cache is 8.49 GB."),
    Pattern("capacity", "capacity",
            r"max_total_num_tokens=(?P<max_total_num_tokens>-?\d+), "
            r"(?:chunked_prefill_size=(?P<chunked_prefill_size>-?\d+), )?"
            r"max_prefill_tokens=(?P<max_prefill_tokens>-?\d+), "
            r"max_running_requests=(?P<max_running_requests>-?\d+), context_len=(?P<context_len>-?\d+)"
            rf"(?:, available_gpu_mem={num('available_gpu_mem_gib')} GB)?"
            rf"(?:, available_cpu_mem={num('available_cpu_mem_gib')} GB)?",
            "all (chunked_prefill_size v0.4.2+, available_gpu_mem v0.4.7+)",
            "max_total_num_tokens=1743556, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            "max_running_requests=4096, context_len=32768, available_gpu_mem=11.78 GB"),
    Pattern("capacity", "capacity",
            r"MLX stub: initialized minimal pools \(max_total_num_tokens=(?P<max_total_num_tokens>\d+), "
            r"max_running_requests=(?P<max_running_requests>\d+)",
            "v0.5.15 MLX",
            "MLX stub: initialized minimal pools (max_total_num_tokens=32768, max_running_requests=8, "
            "zero GPU KV cache allocation)"),
    Pattern("hicache_host_alloc", "host_cache",
            rf"Allocating {num('host_gb')} GB host memory for hierarchical KV cache\.", "v0.4.1.post5 – v0.5.16",
            "Allocating 11.55 GB host memory for hierarchical KV cache."),
    Pattern("hicache_host_alloc", "host_cache",
            r"Allocating (?P<label>\w+) hierarchical KV host pool: (?P<tokens>\d+) tokens, "
            rf"{num('host_gb')} GB host memory(?:\.|, packed MTP KV layers)", "v0.5.17+ (MTP layers v0.5.19+)",
            "Allocating MHA hierarchical KV host pool: 318554 tokens, 44.77 GB host memory."),
    Pattern("hicache_host_alloc", "host_cache",
            rf"Allocating {num('host_gb')} GB host memory for hierarchical Mamba cache "
            r"\((?:(?P<tokens>\d+) state slots, )?layout=", "v0.5.10+ (state slots v0.5.23)",
            "Allocating 3.21 GB host memory for hierarchical Mamba cache (512 state slots, layout=layer_first).",
            {"label": "mamba"}),
    Pattern("hicache_pool_small", "host_cache",
            r"HiCache (?P<label>\w+) host pool \((?P<tokens>\d+) tokens\) is smaller than the device pool "
            r"\((?P<device_tokens>\d+) tokens\)", "v0.5.18",
            "HiCache MHA host pool (1000 tokens) is smaller than the device pool (2000 tokens);"
            "L2 cache effectiveness is reduced.Consider increasing --hicache-ratio"),
    Pattern("host_memory_short", "host_cache",
            rf"(?:ValueError: )?Not enough host memory available\. Requesting {num('requested_gb')} GB "
            rf"but only have {num('free_gb')} GB free\.", "all",
            "ValueError: Not enough host memory available. Requesting 120.34 GB but only have 88.10 GB free. "
            "Please reduce the size of the hierarchical cache."),
    Pattern("cuda_graph_begin", "cuda_graphs",
            r"Capture (?:(?P<role>draft) )?(?:(?P<stage>extend) )?(?P<graph>cuda|cpu|npu|musa) graph begin\. "
            rf"This can take up to several minutes\.(?: avail mem={num('avail_mem_gib')} GB)?",
            "v0.3 – v0.5.13", "Capture cuda graph begin. This can take up to several minutes. avail mem=18.95 GB",
            {"phase": "begin"}),
    Pattern("cuda_graph_end", "cuda_graphs",
            r"Capture (?:(?P<role>draft) )?(?:(?P<stage>extend) )?(?P<graph>cuda|cpu|npu|musa) graph end\. "
            rf"Time elapsed: {num('elapsed_s')} s\. avail mem={num('avail_mem_gib')} GB\. "
            rf"mem usage={num('mem_usage_gib')} GB",
            "v0.4.4 – v0.4.6 (and v0.4.x draft)",
            "Capture cuda graph end. Time elapsed: 28.97 s. avail mem=16.48 GB. mem usage=1.71 GB.",
            {"phase": "end"}),
    Pattern("cuda_graph_end", "cuda_graphs",
            r"Capture (?:(?P<role>draft) )?(?:(?P<stage>extend) )?(?P<graph>cuda|cpu|npu|musa) graph end\. "
            rf"Time elapsed: {num('elapsed_s')} s\.?(?: mem usage={num('mem_usage_gib')} GB\. "
            rf"avail mem={num('avail_mem_gib')} GB)?",
            "v0.4.0 – v0.5.13 (mem fields v0.4.7+)",
            "Capture cuda graph end. Time elapsed: 28.97 s. mem usage=1.71 GB. avail mem=16.48 GB.",
            {"phase": "end"}),
    Pattern("cuda_graph_begin", "cuda_graphs",
            rf"Capture (?P<graph>piecewise) CUDA graph begin\. avail mem={num('avail_mem_gib')} GB",
            "v0.5.6+", "Capture piecewise CUDA graph begin. avail mem=0.08 GB", {"phase": "begin"}),
    Pattern("cuda_graph_end", "cuda_graphs",
            rf"Capture (?P<graph>piecewise) CUDA graph end\. Time elapsed: {num('elapsed_s')} s\. "
            rf"mem usage={num('mem_usage_gib')} GB\. avail mem={num('avail_mem_gib')} GB",
            "v0.5.6+", "Capture piecewise CUDA graph end. Time elapsed: 9.10 s. mem usage=0.40 GB. avail mem=6.10 GB.",
            {"phase": "end"}),
    # The device's label (CUDA, NPU, CPU, XPU...) since v0.5.16; the batch sizes moved to the end line in
    # v0.5.22; multi-layer EAGLE captures one draft extend graph per step (v0.5.16+).
    Pattern("cuda_graph_begin", "cuda_graphs",
            r"Capture (?P<role>target|draft) (?P<stage>decode|verify|prefill|extend) (?P<graph>\w+) graph begin\. "
            r"(?:backend=(?P<backend>[^,]+), )?(?:step=\d+, )?(?:num_tokens_per_(?:bs|req)=\d+, )?"
            rf"(?:(?:bs|num_tokens)=(?P<batch_sizes>\[[^\]]*\]), )?avail mem={num('avail_mem_gib')} GB",
            "v0.5.14+",
            "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 4], "
            "avail mem=9.30 GB", {"phase": "begin"}),
    Pattern("cuda_graph_end", "cuda_graphs",
            r"Capture (?P<role>target|draft) (?P<stage>decode|verify|prefill|extend) (?P<graph>\w+) graph end\. "
            r"(?:step=\d+, )?(?:bs=(?P<batch_sizes>\[[^\]]*\]), )?"
            rf"elapsed={num('elapsed_s')} s, mem usage={num('mem_usage_gib')} GB, avail mem={num('avail_mem_gib')} GB",
            "v0.5.14+", "Capture target decode NPU graph end. bs=[1, 2, 4, 8], elapsed=18.62 s, mem usage=0.43 GB, "
            "avail mem=11.98 GB.", {"phase": "end"}),
    # Other draft graphs: one graph for every extend step, and UNO's tree draft (v0.5.23).
    Pattern("cuda_graph_begin", "cuda_graphs",
            r"Capture (?:single-CG draft (?P<stage>extend)|UNO tree draft CUDA graph) begin\. "
            rf".*?avail mem={num('avail_mem_gib')} GB",
            "v0.5.19+", "Capture UNO tree draft CUDA graph begin. num_tokens_per_req=4, avail mem=7.39 GB",
            {"phase": "begin", "role": "draft"}),
    Pattern("cuda_graph_end", "cuda_graphs",
            r"Capture (?:single-CG draft (?P<stage>extend)|UNO tree draft CUDA graph) end\. "
            rf"elapsed={num('elapsed_s')} s, mem usage={num('mem_usage_gib')} GB, avail mem={num('avail_mem_gib')} GB",
            "v0.5.19+", "Capture single-CG draft extend end. elapsed=1.20 s, mem usage=0.30 GB, avail mem=7.09 GB.",
            {"phase": "end", "role": "draft"}),
    Pattern("cuda_graph_batch_sizes", "cuda_graphs",
            r"Capture (?P<graph>cuda|npu|cpu) graph bs (?P<batch_sizes>\[.*\])",
            "v0.5.5+", "Capture cuda graph bs [1, 2, 4, 8, 16]", {"phase": "plan"}),
)

# ---------------------------------------------------------------- runtime statistics (§3)
# Stats lines are split into `key: value` pairs by the classifier; STATS_KEYS maps the known keys.
STATS = (
    Pattern("prefill_batch", "prefill_batches", r"Prefill batch(?:\.|,| \[(?P<forward_iter>\d+)\],) (?P<_stats>#.*)",
            "v0.3+ (`batch.` → `batch,` v0.5.4.post1; `[N]` v0.5.4)",
            "Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, "
            "#queue-req: 0, input throughput (token/s): 0.53, cuda graph: False"),
    Pattern("decode_batch", "decode_batches", r"Decode batch(?:\.|,| \[(?P<forward_iter>\d+)\],) (?P<_stats>#.*)",
            "v0.3+", "Decode batch, #running-req: 1, #token: 82, token usage: 0.00, cuda graph: True, "
            "gen throughput (token/s): 73.90, #queue-req: 0"),
    Pattern("retraction", "retractions",
            r"(?:KV cache pool is full\. Retract requests\.|Decode out of memory happened\.|Testing retraction\.) "
            r"#retracted_reqs: (?P<retracted_reqs>\d+), (?:#aborted_retracted_reqs: (?P<aborted_retracted_reqs>\d+), )?"
            r"(?:#new_tokens_gained: (?P<new_tokens_gained>\d+), )?"
            rf"#new_token_ratio: {num('new_token_ratio_before')} -> {num('new_token_ratio_after')}",
            "all (text changed v0.4.7, v0.5.3, v0.5.7)",
            "KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_tokens_gained: 4096, "
            "#new_token_ratio: 0.4123 -> 0.7000"),
)

STATS_KEYS: dict[str, str] = {
    "#new-seq": "new_seq", "#new-token": "new_tokens", "#cached-token": "cached_tokens",
    "cache hit rate": "cache_hit_rate_pct", "#token": "tokens", "token usage": "token_usage",
    "#running-req": "running_req", "#queue-req": "queue_req", "#pending-token": "pending_tokens",
    "cuda graph": "graph", "cpu graph": "graph", "npu graph": "graph", "musa graph": "graph", "xpu graph": "graph",
    "input throughput (token/s)": "input_throughput_tok_s", "gen throughput (token/s)": "gen_throughput_tok_s",
    "accept len": "accept_len", "accept rate": "accept_rate",
    # Hybrid models (SWA, Mamba) report their full-attention layers' pool in place of the one pool.
    "#full token": "tokens", "full token usage": "token_usage",
}


@dataclass(frozen=True)
class StatsSuffix:
    """A `key: value` part some releases or options add to the batch lines, with a real line carrying it."""

    key: str
    column: str
    versions: str
    example: str


# The parts `scheduler_components/metrics_reporter.py` (and the metrics mixin before it) appends, each a
# column of the batch tables it appears in.
STATS_SUFFIXES = (
    StatsSuffix("est. prefill TFLOPS/s (per GPU)", "est_tflops_per_gpu", "v0.5.19+ with --enable-mfu-metrics",
                "Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, token usage: 0.01, #running-req: 0, "
                "#queue-req: 0, cuda graph: False, input throughput (token/s): 8123.45, "
                "est. prefill TFLOPS/s (per GPU): 187.32"),
    StatsSuffix("est. decode TFLOPS/s (per GPU)", "est_tflops_per_gpu", "v0.5.19+ with --enable-mfu-metrics",
                "Decode batch, #running-req: 4, #token: 2048, token usage: 0.02, cuda graph: True, "
                "gen throughput (token/s): 410.22, #queue-req: 0, est. decode TFLOPS/s (per GPU): 3.41, "
                "est. read BW (GB/s per GPU): 1534.90, est. write BW (GB/s per GPU): 2.17"),
    StatsSuffix("est. read BW (GB/s per GPU)", "est_read_bw_gb_s", "v0.5.19+ with --enable-mfu-metrics",
                "Decode batch, #running-req: 1, #token: 82, token usage: 0.00, cuda graph: True, "
                "gen throughput (token/s): 73.90, #queue-req: 0, est. decode TFLOPS/s (per GPU): 0.61, "
                "est. read BW (GB/s per GPU): 702.15, est. write BW (GB/s per GPU): 0.38"),
    StatsSuffix("est. write BW (GB/s per GPU)", "est_write_bw_gb_s", "v0.5.19+ with --enable-mfu-metrics",
                "Decode batch, #running-req: 1, #token: 122, token usage: 0.00, cuda graph: True, "
                "gen throughput (token/s): 74.02, #queue-req: 0, est. decode TFLOPS/s (per GPU): 0.62, "
                "est. read BW (GB/s per GPU): 703.40, est. write BW (GB/s per GPU): 0.41"),
    StatsSuffix("waiting-image-req", "waiting_image_req", "v0.5.10+ language-only (EPD) schedulers",
                "Prefill batch, #new-seq: 2, #new-token: 1300, #cached-token: 0, token usage: 0.03, #running-req: 1, "
                "#queue-req: 3, waiting-image-req: 2, cuda graph: False, input throughput (token/s): 2210.10"),
    StatsSuffix("fwd occupancy", "fwd_occupancy_pct",
                "v0.5.19+ with the device timer (SGLANG_ENABLE_METRICS_DEVICE_TIMER)",
                "Decode batch, #running-req: 8, #token: 4096, token usage: 0.04, cuda graph: True, "
                "gen throughput (token/s): 612.80, #queue-req: 0, fwd occupancy: 91.25%"),
)
STATS_KEYS.update({suffix.key: suffix.column for suffix in STATS_SUFFIXES})

# ---------------------------------------------------------------- HTTP server (§4)
HTTP = (
    Pattern("http_request", "http_requests",
            r"(?P<client>\S+) - \"(?P<method>[A-Z]+) (?P<path>\S+) (?P<http_version>HTTP/[\d.]+)\" "
            r"(?P<status>\d{3})(?: (?P<reason>.*))?",
            "v0.4.2+ timestamped, earlier bare",
            '127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK'),
    Pattern("uvicorn_started", "server_events", r"Started server process \[(?P<server_pid>\d+)\]", "all",
            "Started server process [29761]"),
    Pattern("uvicorn_startup", "server_events", r"(?P<detail>Waiting for application startup|"
            r"Application startup complete|Shutting down|Waiting for application shutdown|"
            r"Application shutdown complete)\.?", "all", "Application startup complete."),
    Pattern("uvicorn_running", "server_events", r"Uvicorn running on (?P<url>\S+)", "all",
            "Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)"),
    Pattern("uvicorn_finished", "server_events", r"Finished server process \[(?P<server_pid>\d+)\]", "all",
            "Finished server process [29761]"),
    Pattern("server_ready", "server_events", r"The server is fired up and ready to roll!", "v0.2+",
            "The server is fired up and ready to roll!"),
    Pattern("warmup", "server_events",
            r"(?P<detail>Start of pd disaggregation warmup|End of prefill disaggregation mode warmup|"
            r"Prefill disaggregation mode warm Up Failed|Warmup ended|Initialization failed\. warmup error)",
            "PD / custom warmups", "Start of pd disaggregation warmup ..."),
)

# ---------------------------------------------------------------- errors and shutdown (§5)
SHUTDOWN = (
    Pattern("sigquit", "shutdown_events",
            r"(?P<detail>Received sigquit from a child process|SIGQUIT received)", "v0.4.1.post6+ / v0.5.3+",
            "Received sigquit from a child process. It usually means the child failed.", {"signal": "SIGQUIT"}),
    Pattern("sigterm", "shutdown_events", r"SIGTERM received\.(?P<detail>.*)", "v0.4.6+",
            "SIGTERM received. signum=15 frame=<frame>. Draining requests and shutting down...",
            {"signal": "SIGTERM"}),
    Pattern("graceful_exit", "shutdown_events",
            r"Gracefully exiting\.\.\. [Rr]emaining number of requests (?P<remaining_requests>\d+)", "v0.4.6+",
            "Gracefully exiting... Remaining number of requests 3. Remaining requests remaining_rids=['a'].",
            {"signal": "SIGTERM"}),
    Pattern("rank_dead", "shutdown_events", r"Rank (?P<child>\d+) scheduler is dead\.", "v0.4.1.post4+",
            "Rank 0 scheduler is dead. Please check if there are relevant logs."),
    Pattern("exit_code", "shutdown_events", r"Exit code: (?P<exit_code>-?\d+)", "v0.4.1.post4+", "Exit code: -9"),
    Pattern("subprocess_crashed", "shutdown_events",
            r"Subprocess (?P<child>\S+) \(pid=(?P<child_pid>\d+)\) crashed with exit code (?P<exit_code>-?\d+)",
            "v0.5.10+",
            "Subprocess detokenizer (pid=31379) crashed with exit code -15. Triggering SIGQUIT for cleanup..."),
    Pattern("watchdog_timeout", "shutdown_events", r"(?:\w+ )?[Ww]atchdog timeout \((?P<detail>[^)]*)\)",
            "all (TokenizerManager, DetokenizerManager, DataParallelController v0.5.19+)",
            "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
            {"signal": "watchdog"}),
    Pattern("kill_process_tree", "shutdown_events", r"kill_process_tree called: (?P<detail>.*)", "v0.5.18",
            "kill_process_tree called: parent_pid=1, include_parent=True, pid=1"),
    Pattern("crash_dump", "shutdown_events",
            r"(?P<detail>Dumping requests before crash|Sleeping 5 seconds before crash diagnostics)", "v0.5.x",
            "Dumping requests before crash. self.crash_dump_folder=/tmp/x"),
    Pattern("not_enough_memory", "shutdown_events", r"(?:RuntimeError: )?(?P<detail>Not enough memory\. .*)",
            "all", "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."),
    Pattern("not_enough_memory", "shutdown_events",
            r"(?:ValueError: )?(?P<detail>Loaded weights leave no GPU memory for the KV cache .*)", "v0.5.18+",
            "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.5. "
            "Raise --mem-fraction-static above 0.612 (minimum viable = 1 - available/pre = 0.6114)."),
)

# ---------------------------------------------------------------- systemd about the unit (§8.3)
UNIT = r"(?P<unit>[\w@.\\-]+\.service)"
SYSTEMD = (
    # systemd ≥ v251 names the unit (`Starting sglang.service - SGLang server...`), which is unambiguous.
    Pattern("systemd_starting", "systemd", rf"Starting {UNIT} - (?P<detail>.*)\.\.\.", "v251+",
            "Starting sglang.service - SGLang server..."),
    Pattern("systemd_started", "systemd", rf"Started {UNIT} - (?P<detail>.*)\.", "v251+",
            "Started sglang.service - SGLang server."),
    Pattern("systemd_stopping", "systemd", rf"Stopping {UNIT} - (?P<detail>.*)\.\.\.", "v251+",
            "Stopping sglang.service - SGLang server..."),
    Pattern("systemd_stopped", "systemd", rf"Stopped {UNIT} - (?P<detail>.*)\.", "v251+",
            "Stopped sglang.service - SGLang server."),
    Pattern("systemd_failed_start", "systemd", rf"Failed to start {UNIT} - (?P<detail>.*)\.", "v251+",
            "Failed to start sglang.service - SGLang server."),
    # Older systemd prints only the Description (`Starting SGLang server...`): as text that could be
    # anything ("Starting warmup..."), it counts only on lines the journal attributes to systemd.
    Pattern("systemd_starting", "systemd", r"Starting (?P<detail>.*)\.\.\.", "< v251",
            "Starting SGLang server...", ident="systemd"),
    Pattern("systemd_started", "systemd", r"Started (?P<detail>.*)\.", "< v251", "Started SGLang server.",
            ident="systemd"),
    Pattern("systemd_stopping", "systemd", r"Stopping (?P<detail>.*)\.\.\.", "< v251",
            "Stopping SGLang server...", ident="systemd"),
    Pattern("systemd_stopped", "systemd", r"Stopped (?P<detail>.*)\.", "< v251", "Stopped SGLang server.",
            ident="systemd"),
    Pattern("systemd_failed_start", "systemd", r"Failed to start (?P<detail>.*)\.", "< v251",
            "Failed to start SGLang server.", ident="systemd"),
    Pattern("systemd_deactivated", "systemd", rf"{UNIT}: Deactivated successfully\.", "v248+",
            "sglang.service: Deactivated successfully."),
    Pattern("systemd_main_exited", "systemd",
            rf"{UNIT}: Main process exited, code=(?P<code>\w+), status=(?P<status>[\w/]+)", "all",
            "sglang.service: Main process exited, code=killed, status=9/KILL"),
    Pattern("systemd_failed_result", "systemd", rf"{UNIT}: Failed with result '(?P<result>[\w-]+)'\.", "all",
            "sglang.service: Failed with result 'exit-code'."),
    Pattern("systemd_restart_scheduled", "systemd",
            rf"{UNIT}: Scheduled restart job, restart counter is at (?P<restart_counter>\d+)\.", "all",
            "sglang.service: Scheduled restart job, restart counter is at 3."),
    Pattern("systemd_start_limit", "systemd", rf"{UNIT}: Start request repeated too quickly\.", "all",
            "sglang.service: Start request repeated too quickly."),
    Pattern("systemd_consumed", "systemd",
            rf"{UNIT}: Consumed (?P<cpu_time>.+?) CPU time(?: over (?P<detail>.+?) wall clock time)?"
            r"(?:, (?P<memory_peak>\S+) memory peak)?(?:, .*)?\.", "all",
            "sglang.service: Consumed 3min 25.123s CPU time, 41.2G memory peak, 0B memory swap peak."),
    Pattern("systemd_stop_timeout", "systemd", rf"{UNIT}: State '(?P<detail>[\w-]+)' timed out\. Killing\.", "all",
            "sglang.service: State 'stop-sigterm' timed out. Killing."),
    Pattern("systemd_killing", "systemd",
            rf"{UNIT}: Killing process (?P<killed_pid>\d+) \((?P<detail>[^)]*)\) with signal (?P<status>\w+)\.",
            "all", "sglang.service: Killing process 48390 (sglang::schedul) with signal SIGKILL."),
    Pattern("systemd_leftover", "systemd",
            rf"{UNIT}: Unit process (?P<killed_pid>\d+) \((?P<detail>[^)]*)\) remains running after unit stopped\.",
            "all", "sglang.service: Unit process 48390 (sglang::schedul) remains running after unit stopped."),
    Pattern("systemd_oom_kill", "systemd", rf"{UNIT}: A process of this unit has been killed by the OOM killer\.",
            "all", "sglang.service: A process of this unit has been killed by the OOM killer."),
    Pattern("journald_suppressed", "systemd", rf"Suppressed (?P<detail>\d+) messages from {UNIT}", "all",
            "Suppressed 1234 messages from sglang.service"),
)

# ---------------------------------------------------------------- recognised one-liners (§2.1 and the corpus)
# Messages logmine knows but extracts no figure from: (topic, literal message start).
NOTICE_HEADS: tuple[tuple[str, str], ...] = (
    ("attention_backend", "Attention backend not "),
    ("attention_backend", "Using triton_attn as multimodal"),
    ("attention_backend", "Multimodal attention backend"),
    ("attention_backend", "Using hybrid linear attention backend"),
    ("speculative", "Max running requests is reset to "),
    ("speculative", "Spec v2 is enabled"),
    ("speculative", "Speculative token map specified"),
    ("speculative", "SPECULATIVE_MOE_"),
    ("speculative", "MOE_RUNNER_BACKEND is not initialized"),
    ("scheduler", "Overlap scheduler is disabled"),
    ("scheduler", "Disable piecewise CUDA graph"),
    ("scheduler", "Custom allreduce is disabled"),
    ("chat_template", "Using default HuggingFace chat template"),
    ("chat_template", "Using default chat sampling params"),
    ("kv_cache_dtype", "Using KV cache dtype"),
    ("nccl", "sglang is using nccl"),
    ("import_error", "Ignore import error when loading"),
    ("cpu_affinity", "Process "),
    ("transfer", "Invalid or no transfer protocol"),
    ("tokenizer", "The tokenizer you are loading from"),
    ("tokenizer", "Tokenizer loaded as generic"),
    ("tokenizer", "Tokenizer for "),
    ("tokenizer", "Loading tokenizer for "),
    ("tokenizer", "Processor tokenizer for "),
    ("tokenizer", "Using regular tokenizer for "),
    ("hf_hub", "Warning: You are sending unauthenticated requests to the HF Hub"),
    ("model", "Hybrid swa model"),
    ("model", "Casting torch"),
    ("model", "Using FP"),
    ("model", "Using CompressedTensors"),
    ("model", "Using model weights format"),
    ("model", "Using default MoE kernel config"),
    ("model", "Using MoE kernel config"),
    ("model", "Found local HF snapshot"),
    ("model", "Failed to load generation config"),
    ("model", "Mamba selective_state_update"),
    ("model", "Automatically detected platform"),
    ("model", "FlashInfer TRTLLM MoE deferred"),
    ("model", "Prefetch "),
    ("platform", "Failed to import amdsmi"),
    ("platform", "Failed to get GPU memory capacity"),
    ("platform", "Wired memory limit set to"),
    ("lock", "Attempting to acquire lock"),
    ("lock", "Attempting to release lock"),
    ("lock", "Lock "),
    ("cache", "Tree cache initialized"),
    ("cache", "Attaching HiCache storage backend"),
    ("cache", "Set hicache_write_policy to"),
    ("request_log", "Receive: obj="),
    ("request_log", "Finish: obj="),
    ("request_log", "ReqTimeStats("),
    ("request_log", "Req Time Stats("),
    ("warmup", "Starting warmup with"),
    ("deprecation", "The following error message "),
    ("deprecation", "Endpoint '"),
    ("scheduler", "attn_tp_input_scattered is not enabled"),
    ("scheduler", "Disabling overlap schedule"),
    ("scheduler", "Disable prefill CUDA graph"),
    ("scheduler", "Cuda graph is disabled"),
    ("scheduler", "Fail to set RLIMIT_STACK"),
    ("scheduler", "PROMETHEUS_MULTIPROC_DIR"),
    ("scheduler", "world_size="),
    ("scheduler", "load snapshot writer init failed"),
    ("allreduce", "[AR] All-reduce call path"),
    ("model", "Acceleration for non-quantized schemes"),
    ("model", "using attn output gate"),
    ("model", "Skipping broken AutoModel mapping"),
    ("model", "tilelang not installed"),
    ("model", "GDN kernel dispatcher"),
    ("model", "Linear attention kernel backend"),
    ("model", "Initializing MLIR"),
    ("model", "Registering dialects"),
    ("chat_template", "Auto-detected template features"),
    ("chat_template", "Loading chat template"),
    ("speculative", "DFLASH "),
    ("speculative", "Initialized DFLASH"),
    ("speculative", "Overriding draft attention backend"),
    ("mlx", "MLX "),
    ("mlx", "Loading MLX model"),
    ("mlx", "Initializing MlxModelRunner"),
    ("mlx", "Detected VLM architecture"),
    ("mlx", "Auto-sized attention KV pool"),
    ("cache", "Creating storage backend"),
    ("cache", "Mooncake "),
    ("cache", "Prefetching "),
    ("cache", "Revoking prefetch"),
    ("outbound_http", "Starting new HTTP connection"),
    ("outbound_http", "Starting new HTTPS connection"),
)

# Shapes that are not SGLang's own but appear in the same stream (§1 "Unprefixed lines").
FOREIGN = (
    Pattern("gloo", "notices", r"\[Gloo\] (?P<detail>Rank \d+ is connected.*)", "torch",
            "[Gloo] Rank 0 is connected to 7 "
            "peer ranks. Expected number of connected peer ranks is : 7", {"topic": "gloo"}),
    Pattern("torch_log", "notices",
            r"\[rank(?P<origin>\d+)\]:\[(?P<level>[WEIF])\d{3,4} [\d:.]+ (?P<detail>[^\]]+)\] .*", "torch",
            "[rank0]:[W104 07:53:15.479655683 compiler_depend.ts:207] Warning: Waiting for pending NCCL work",
            {"topic": "torch"}),
    Pattern("python_warning", "notices", r"(?P<origin>/\S+\.py):\d+: (?P<level>\w*Warning): (?P<detail>.*)", "python",
            "/opt/venv/lib/python3.12/site-packages/x.py:54: UserWarning: something", {"topic": "warning"}),
    Pattern("vllm_log", "notices", r"(?P<level>INFO|WARNING|ERROR|DEBUG) \d\d-\d\d [\d:]+ (?P<origin>[\w.]+:\d+)\] .*",
            "vLLM", "INFO 03-07 12:29:02 __init__.py:190] Automatically detected platform cuda.", {"topic": "vllm"}),
    Pattern("glog", "notices", r"(?P<level>[IWEF])\d{4} [\d:.]+ +\d+ (?P<origin>[\w.]+:\d+)\] .*", "glog",
            "I0209 14:38:38.388 12345 transfer_engine.cpp:42] Transfer Engine started", {"topic": "glog"}),
    Pattern("quantization_notice", "notices", r"(?P<detail>\w+) quantization is not fully optimized yet", "all",
            "awq quantization is not fully optimized yet. The speed can be slower than non-quantized models.",
            {"topic": "quantization"}),
    Pattern("outbound_http", "notices", r"(?P<origin>https?://\S+) \"(?P<detail>[A-Z]+ \S+) HTTP/[\d.]+\" \d{3}",
            "urllib3 debug", 'https://huggingface.co:443 "HEAD /x/config.json HTTP/1.1" 200 0',
            {"topic": "outbound_http"}),
    # NVSHMEM (DeepEP's transport) prints its source location, then why; NCCL its host:pid:tid and level.
    Pattern("nvshmem_log", "notices", r"(?P<origin>/\S*nvshmem\S*\.(?:cpp|cu|h)):(?:\w+:)?\d+:? (?P<detail>.*)",
            "NVSHMEM", "/sgl-workspace/nvshmem/src/host/topo/topo.cpp:469: [GPU 1] Peer GPU 0 is not accessible, "
            "exiting ...", {"topic": "nvshmem"}),
    Pattern("nccl_log", "notices",
            r"(?P<origin>[\w.-]+:\d+:\d+) \[\d+\] NCCL (?P<level>INFO|WARN|ERROR) (?P<detail>.*)",
            "NCCL", "gpu-node-1:4189:4290 [3] NCCL WARN Connect to 10.0.0.2<45123> failed : Connection refused",
            {"topic": "nccl"}),
    # A CUDA kernel's assertion (torch's CUDA_KERNEL_ASSERT), once per failing thread: the real failure behind a
    # later "device-side assert triggered" or "unspecified launch failure".
    Pattern("cuda_assert", "notices",
            r"(?P<origin>\S+\.(?:cu|cuh|cpp|h)):\d+: (?P<detail>.*?block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] "
            r"Assertion .*)", "torch",
            "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block: [118,0,0], thread: "
            "[32,0,0] Assertion `srcIndex < srcSelectDimSize` failed.", {"topic": "cuda_assert", "level": "FATAL"}),
    Pattern("library_log", "notices", r"\[(?P<origin>transformers|aiter|ERROR)\] (?P<detail>.*)", "libraries",
            "[transformers] Unrecognized keys in `rope_parameters`", {"topic": "library"}),
)

ALL_PATTERNS: tuple[Pattern, ...] = STARTUP + STATS + HTTP + SHUTDOWN + SYSTEMD + FOREIGN

# ---------------------------------------------------------------- raw shapes (§1 "Unprefixed lines")
# Lines typed by their shape, not by a pattern, and only without an SGLang prefix: kind -> its `notices`
# topic (a blank line has no event).
RAW_KINDS: dict[str, str | None] = {"blank": None, "progress": "progress", "journal_marker": "journal",
                                    "journal_blob": "journal"}
# journald's own lines between entries, and the placeholder of a binary message.
JOURNAL_MARKER = r"-- (?:Boot \w+|Reboot|Logs begin at .*|Journal begins at .*|No entries) --$"
JOURNAL_BLOB = r"\[(?P<size>[\d.]+[KMG]?B?) blob data\]$"
# Kinds whose text is itself a line of a traceback, so it joins the open traceback too.
IN_TRACEBACK_KINDS = frozenset({"host_memory_short", "not_enough_memory"})

# ---------------------------------------------------------------- what runs are cut on (derive)
# Line kinds the segmentation into runs and the end-of-run reasoning look at (`error` is a traceback's).
MARKER_KINDS = (
    "systemd_starting", "systemd_started", "systemd_stopping", "systemd_stopped", "systemd_deactivated",
    "systemd_main_exited", "systemd_failed_result", "systemd_restart_scheduled", "systemd_start_limit",
    "systemd_failed_start", "systemd_oom_kill", "server_args", "uvicorn_started", "server_ready",
    "sigterm", "sigquit", "rank_dead", "error", "subprocess_crashed", "watchdog_timeout", "uvicorn_finished",
    "graceful_exit", "exit_code", "kill_process_tree", "systemd_stop_timeout",
)
# The server process has ended: a later uvicorn start belongs to a new launch, not to a worker of this one.
PROCESS_END_KINDS = {"uvicorn_finished", "graceful_exit", "exit_code", "sigquit", "subprocess_crashed",
                     "kill_process_tree", "systemd_main_exited"}
# Serving traffic, by the table its lines go to: the bulk of a long log, whose whole text a batch or access
# pattern typed (no failure is said inside such a line). Counted per run while the run's lines are read
# anyway: the runs query would otherwise join millions of them to their runs (0.3 s on 2M lines).
TRAFFIC_KINDS = {"prefill_batch": "prefill_batches", "decode_batch": "decode_batches", "http_request": "http_requests"}
# A run that ends with one of these crashed.
CRASH_KINDS = {"error", "sigquit", "rank_dead", "subprocess_crashed", "watchdog_timeout", "systemd_oom_kill",
               "systemd_restart_scheduled", "systemd_start_limit", "systemd_failed_start"}
