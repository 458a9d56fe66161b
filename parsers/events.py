"""The typed event tables: what each kind of event stores, independent of any log format.

Parsers fill these columns; storage creates one DuckDB table per `EventTable`. A column is declared by
its logical (Arrow) type only: how it is stored (DuckDB's type, compression) is the store's business.
Every table also gets the common columns in `COMMON_COLUMNS` (where the line came from, when, which
rank). Units are in column names: `_gib` is binary gigabytes (SGLang's device "GB"), `_gb` decimal gigabytes (SGLang's
host-memory "GB"), `_s` seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from .sglang_formats import RANK_COLUMNS

# The logical types columns are declared with.
TEXT = pa.string()
REAL = pa.float64()
INT64 = pa.int64()
INT32 = pa.int32()
INT16 = pa.int16()  # ranks
FLAG = pa.bool_()
TIME = pa.timestamp("us")  # local time as the log wrote it, no zone
JSON = pa.json_()
TEXT_MAP = pa.map_(pa.string(), pa.string())  # `extra`: the `key: value` pairs without a column of their own

COMMON_COLUMNS: dict[str, pa.DataType] = {
    "source_id": INT32,
    "line_no": INT64,
    "kind": TEXT,
    "ts": TIME,
    "pid": INT32,
    **dict.fromkeys(RANK_COLUMNS, INT16),
}


@dataclass(frozen=True)
class EventTable:
    name: str
    doc: str
    columns: dict[str, pa.DataType]


EVENT_TABLES: tuple[EventTable, ...] = (
    EventTable("server_args", "One `server_args=ServerArgs(...)` (v0.5.19+: `server_args={...}`) dump per launch, "
               "typed.", {
        "args": JSON, "n_args": INT32, "truncated": FLAG,
    }),
    EventTable("init_distributed", "Init torch distributed (v0.5.21+: parallel) begin/ends per rank, and the "
               "memory baseline taken after it (v0.5.21+).", {
        "phase": TEXT, "elapsed_s": REAL, "mem_usage_gib": REAL,
    }),
    EventTable("weight_loads", "Load weight begin/end per rank (a draft model adds a second pair).", {
        "phase": TEXT, "elapsed_s": REAL, "model_class": TEXT, "dtype": TEXT,
        "quant": TEXT, "avail_mem_gib": REAL, "mem_usage_gib": REAL,
        "overlap_window_s": REAL, "overlap_total_s": REAL,
    }),
    EventTable("kv_cache", "KV/Mamba/SWA pool allocations per rank.", {
        "pool": TEXT, "label": TEXT, "dtype": TEXT, "tokens": INT64,
        "k_size_gib": REAL, "v_size_gib": REAL, "kv_size_gib": REAL,
        "conv_state_gib": REAL, "ssm_state_gib": REAL, "intermediate_ssm_gib": REAL,
        "intermediate_conv_gib": REAL, "full_tokens": INT64,
        "swa_tokens": INT64, "mem_usage_gib": REAL, "avail_mem_gib": REAL,
        "va_upper_bound": FLAG,
    }),
    EventTable("memory_pool", "Memory pool end and the KV budget notices per rank.", {
        "avail_mem_gib": REAL,
    }),
    EventTable("capacity", "The scheduler's capacity summary (`max_total_num_tokens=...`).", {
        "max_total_num_tokens": INT64, "chunked_prefill_size": INT64, "max_prefill_tokens": INT64,
        "max_running_requests": INT64, "context_len": INT64, "available_gpu_mem_gib": REAL,
        "available_cpu_mem_gib": REAL,
    }),
    EventTable("host_cache", "HiCache host pool allocations and host-memory shortages.", {
        "label": TEXT, "tokens": INT64, "host_gb": REAL, "requested_gb": REAL,
        "free_gb": REAL, "device_tokens": INT64,
    }),
    EventTable("cuda_graphs", "CUDA/CPU/NPU graph capture begin/end per rank.", {
        "phase": TEXT, "graph": TEXT, "role": TEXT, "stage": TEXT,
        "elapsed_s": REAL, "mem_usage_gib": REAL, "avail_mem_gib": REAL,
        "backend": TEXT, "batch_sizes": TEXT,
    }),
    EventTable("prefill_batches", "Prefill batch stats lines; unknown `key: value` pairs land in `extra`.", {
        "forward_iter": INT64, "new_seq": INT32, "new_tokens": INT64, "cached_tokens": INT64,
        "cache_hit_rate_pct": REAL, "tokens": INT64, "token_usage": REAL, "running_req": INT32,
        "queue_req": INT32, "pending_tokens": INT64, "graph": FLAG,
        "input_throughput_tok_s": REAL, "waiting_image_req": INT32, "est_tflops_per_gpu": REAL,
        "extra": TEXT_MAP,
    }),
    EventTable("decode_batches", "Decode batch stats lines; unknown `key: value` pairs land in `extra`.", {
        "forward_iter": INT64, "running_req": INT32, "tokens": INT64, "token_usage": REAL,
        "accept_len": REAL, "accept_rate": REAL, "graph": FLAG,
        "gen_throughput_tok_s": REAL, "queue_req": INT32, "est_tflops_per_gpu": REAL,
        "est_read_bw_gb_s": REAL, "est_write_bw_gb_s": REAL, "fwd_occupancy_pct": REAL, "extra": TEXT_MAP,
    }),
    EventTable("retractions", "Requests retracted under KV-pool pressure.", {
        "retracted_reqs": INT32, "aborted_retracted_reqs": INT32, "new_tokens_gained": INT64,
        "new_token_ratio_before": REAL, "new_token_ratio_after": REAL,
    }),
    EventTable("http_requests", "uvicorn access lines, one per HTTP request.", {
        "client": TEXT, "method": TEXT, "path": TEXT, "http_version": TEXT,
        "status": INT16, "reason": TEXT,
    }),
    EventTable("server_events", "HTTP server lifecycle: uvicorn startup/shutdown, warmup, ready.", {
        "server_pid": INT32, "url": TEXT, "detail": TEXT,
    }),
    EventTable("shutdown_events", "Signals, watchdogs and kill chains.", {
        "signal": TEXT, "remaining_requests": INT32, "exit_code": INT32,
        "child": TEXT, "child_pid": INT32, "detail": TEXT,
    }),
    EventTable("errors", "Errors with every line of their traceback (first_line_no..last_line_no).", {
        "error_kind": TEXT, "origin": TEXT, "exception_type": TEXT,
        "exception_message": TEXT, "last_line": TEXT, "first_line_no": INT64,
        "last_line_no": INT64, "n_lines": INT32, "text": TEXT,
    }),
    EventTable("systemd", "systemd's own lines about the unit: start, stop, exit, restart, resources.", {
        "unit": TEXT, "code": TEXT, "status": TEXT, "result": TEXT,
        "restart_counter": INT32, "cpu_time": TEXT, "memory_peak": TEXT,
        "killed_pid": INT32, "detail": TEXT,
    }),
    EventTable("json_events", "SGLang's JSON event lines (`log_utils.log_json`, `RequestLogger._log_json`): "
               "`request.received`, `request.finished`, `scheduler.status`, any other as its name. `purpose` tells "
               "warmup and health-check requests from served ones; `fields` holds the record's other keys.", {
        "event": TEXT, "event_ts": TIME, "rid": TEXT, "purpose": TEXT, "e2e_latency_s": REAL,
        "prompt_tokens": INT64, "completion_tokens": INT64, "cached_tokens": INT64, "finish_reason": TEXT,
        "running_reqs": INT32, "queued_reqs": INT32, "fields": JSON,
    }),
    EventTable("traces", "The trace context NVIDIA Dynamo's JSONL lines carry (W3C ids of the request's span).", {
        "trace_id": TEXT, "span_id": TEXT, "parent_id": TEXT, "x_request_id": TEXT, "span_name": TEXT,
    }),
    EventTable("notices", "Other recognised one-line messages: config notices, third-party records.", {
        "topic": TEXT, "level": TEXT, "origin": TEXT, "detail": TEXT,
    }),
)

TABLES_BY_NAME: dict[str, EventTable] = {t.name: t for t in EVENT_TABLES}
