"""The typed event tables: what each kind of event stores, independent of any log format.

Parsers fill these columns; storage creates one DuckDB table per `EventTable`. Every table also gets
the common columns in `COMMON_COLUMNS` (where the line came from, when, which rank). Units are in
column names: `_gib` is binary gigabytes (SGLang's device "GB"), `_gb` decimal gigabytes (SGLang's
host-memory "GB"), `_s` seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from .sglang_formats import RANK_COLUMNS

COMMON_COLUMNS: dict[str, str] = {
    "source_id": "INTEGER",
    "line_no": "BIGINT",
    "kind": "VARCHAR",
    "ts": "TIMESTAMP",
    "pid": "INTEGER",
    **dict.fromkeys(RANK_COLUMNS, "SMALLINT"),
}


@dataclass(frozen=True)
class EventTable:
    name: str
    doc: str
    columns: dict[str, str]


EVENT_TABLES: tuple[EventTable, ...] = (
    EventTable("server_args", "One `server_args=ServerArgs(...)` dump per launch, typed.", {
        "args": "JSON", "n_args": "INTEGER", "truncated": "BOOLEAN",
    }),
    EventTable("init_distributed", "Init torch distributed begin/ends per rank.", {
        "phase": "VARCHAR", "elapsed_s": "DOUBLE", "mem_usage_gib": "DOUBLE",
    }),
    EventTable("weight_loads", "Load weight begin/end per rank (a draft model adds a second pair).", {
        "phase": "VARCHAR", "elapsed_s": "DOUBLE", "model_class": "VARCHAR", "dtype": "VARCHAR",
        "quant": "VARCHAR", "avail_mem_gib": "DOUBLE", "mem_usage_gib": "DOUBLE",
        "overlap_window_s": "DOUBLE", "overlap_total_s": "DOUBLE",
    }),
    EventTable("kv_cache", "KV/Mamba/SWA pool allocations per rank.", {
        "pool": "VARCHAR", "label": "VARCHAR", "dtype": "VARCHAR", "tokens": "BIGINT",
        "k_size_gib": "DOUBLE", "v_size_gib": "DOUBLE", "kv_size_gib": "DOUBLE",
        "conv_state_gib": "DOUBLE", "ssm_state_gib": "DOUBLE", "full_tokens": "BIGINT",
        "swa_tokens": "BIGINT", "mem_usage_gib": "DOUBLE", "avail_mem_gib": "DOUBLE",
        "va_upper_bound": "BOOLEAN",
    }),
    EventTable("memory_pool", "Memory pool end and the KV budget notices per rank.", {
        "avail_mem_gib": "DOUBLE",
    }),
    EventTable("capacity", "The scheduler's capacity summary (`max_total_num_tokens=...`).", {
        "max_total_num_tokens": "BIGINT", "chunked_prefill_size": "BIGINT", "max_prefill_tokens": "BIGINT",
        "max_running_requests": "BIGINT", "context_len": "BIGINT", "available_gpu_mem_gib": "DOUBLE",
        "available_cpu_mem_gib": "DOUBLE",
    }),
    EventTable("host_cache", "HiCache host pool allocations and host-memory shortages.", {
        "label": "VARCHAR", "tokens": "BIGINT", "host_gb": "DOUBLE", "requested_gb": "DOUBLE",
        "free_gb": "DOUBLE", "device_tokens": "BIGINT",
    }),
    EventTable("cuda_graphs", "CUDA/CPU/NPU graph capture begin/end per rank.", {
        "phase": "VARCHAR", "graph": "VARCHAR", "role": "VARCHAR", "stage": "VARCHAR",
        "elapsed_s": "DOUBLE", "mem_usage_gib": "DOUBLE", "avail_mem_gib": "DOUBLE",
        "backend": "VARCHAR", "batch_sizes": "VARCHAR",
    }),
    EventTable("prefill_batches", "Prefill batch stats lines; unknown `key: value` pairs land in `extra`.", {
        "forward_iter": "BIGINT", "new_seq": "INTEGER", "new_tokens": "BIGINT", "cached_tokens": "BIGINT",
        "cache_hit_rate_pct": "DOUBLE", "tokens": "BIGINT", "token_usage": "DOUBLE", "running_req": "INTEGER",
        "queue_req": "INTEGER", "pending_tokens": "BIGINT", "graph": "BOOLEAN",
        "input_throughput_tok_s": "DOUBLE", "extra": "MAP(VARCHAR, VARCHAR)",
    }),
    EventTable("decode_batches", "Decode batch stats lines; unknown `key: value` pairs land in `extra`.", {
        "forward_iter": "BIGINT", "running_req": "INTEGER", "tokens": "BIGINT", "token_usage": "DOUBLE",
        "accept_len": "DOUBLE", "accept_rate": "DOUBLE", "graph": "BOOLEAN",
        "gen_throughput_tok_s": "DOUBLE", "queue_req": "INTEGER", "extra": "MAP(VARCHAR, VARCHAR)",
    }),
    EventTable("retractions", "Requests retracted under KV-pool pressure.", {
        "retracted_reqs": "INTEGER", "aborted_retracted_reqs": "INTEGER", "new_tokens_gained": "BIGINT",
        "new_token_ratio_before": "DOUBLE", "new_token_ratio_after": "DOUBLE",
    }),
    EventTable("http_requests", "uvicorn access lines, one per HTTP request.", {
        "client": "VARCHAR", "method": "VARCHAR", "path": "VARCHAR", "http_version": "VARCHAR",
        "status": "SMALLINT", "reason": "VARCHAR",
    }),
    EventTable("server_events", "HTTP server lifecycle: uvicorn startup/shutdown, warmup, ready.", {
        "server_pid": "INTEGER", "url": "VARCHAR", "detail": "VARCHAR",
    }),
    EventTable("shutdown_events", "Signals, watchdogs and kill chains.", {
        "signal": "VARCHAR", "remaining_requests": "INTEGER", "exit_code": "INTEGER",
        "child": "VARCHAR", "child_pid": "INTEGER", "detail": "VARCHAR",
    }),
    EventTable("errors", "Errors with every line of their traceback (first_line_no..last_line_no).", {
        "error_kind": "VARCHAR", "origin": "VARCHAR", "exception_type": "VARCHAR",
        "exception_message": "VARCHAR", "last_line": "VARCHAR", "first_line_no": "BIGINT",
        "last_line_no": "BIGINT", "n_lines": "INTEGER", "text": "VARCHAR",
    }),
    EventTable("systemd", "systemd's own lines about the unit: start, stop, exit, restart, resources.", {
        "unit": "VARCHAR", "code": "VARCHAR", "status": "VARCHAR", "result": "VARCHAR",
        "restart_counter": "INTEGER", "cpu_time": "VARCHAR", "memory_peak": "VARCHAR",
        "killed_pid": "INTEGER", "detail": "VARCHAR",
    }),
    EventTable("notices", "Other recognised one-line messages: config notices, third-party records.", {
        "topic": "VARCHAR", "level": "VARCHAR", "origin": "VARCHAR", "detail": "VARCHAR",
    }),
)

TABLES_BY_NAME: dict[str, EventTable] = {t.name: t for t in EVENT_TABLES}
