"""Deterministic generator of SGLang v0.5.9 journals in `journalctl -u UNIT` short format.

The output imitates what `journalctl -u sglang-x > journal.txt` prints for a systemd unit running
`python -m sglang.launch_server` with TP>1: systemd lifecycle lines (`systemd[1]: ...`), then every
line SGLang writes to stdout/stderr under the main process' PID, each carrying SGLang's own
`[YYYY-MM-DD HH:MM:SS TPn]` prefix. Text layouts follow docs/sglang-log-formats.md (v0.5.9 rows).

Two users:
* the benchmark (`write_journal`, CLI) streams millions of lines with constant memory;
* `examples/demo/make_demo.py` builds a short hand-scripted scenario from the same line builders,
  so every line layout lives in exactly one place (this module).

Times are "host local" seconds expressed as a naive epoch (calendar.timegm of the local wall
clock), so formatting never depends on the machine's TZ.
"""

from __future__ import annotations

import argparse
import calendar
import functools
import math
import random
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TextIO

GIB = 1 << 30  # SGLang prints device memory in GiB but labels it "GB"
SGLANG_SITE = "/opt/venv/lib/python3.12/site-packages/sglang"
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

# --------------------------------------------------------------------------------------------
# Time stamps
# --------------------------------------------------------------------------------------------


def local_epoch(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> float:
    """Naive epoch of a host-local wall-clock time (no zone applied)."""
    return float(calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)))


@functools.lru_cache(maxsize=1024)  # bounded: lines arrive in time order, so hits are local
def _stamps(second: int) -> tuple[str, str]:
    st = time.gmtime(second)
    clock = f"{st.tm_hour:02d}:{st.tm_min:02d}:{st.tm_sec:02d}"
    journal = f"{_MONTHS[st.tm_mon - 1]} {st.tm_mday:02d} {clock}"
    sglang = f"{st.tm_year:04d}-{st.tm_mon:02d}-{st.tm_mday:02d} {clock}"
    return journal, sglang


def journal_stamp(t: float) -> str:
    """`Mar 01 22:41:10` (journalctl short format, zero-padded day)."""
    return _stamps(int(t))[0]


def sglang_stamp(t: float) -> str:
    """`2026-03-01 22:41:10` (SGLang's logging datefmt since v0.3.4)."""
    return _stamps(int(t))[1]


# --------------------------------------------------------------------------------------------
# Journal line shapes
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """A systemd service as journalctl shows it."""

    host: str
    name: str  # "sglang-qwen.service"
    description: str  # Description= of the unit
    ident: str = "python3"  # basename of the ExecStart= binary = stream identifier


def systemd_line(unit: Unit, t: float, msg: str) -> str:
    return f"{journal_stamp(t)} {unit.host} systemd[1]: {msg}"


def process_line(unit: Unit, t: float, pid: int, text: str) -> str:
    """A raw stdout/stderr line of the service (traceback bodies, blank lines...)."""
    return f"{journal_stamp(t)} {unit.host} {unit.ident}[{pid}]: {text}"


def sglang_line(unit: Unit, t: float, pid: int, msg: str, rank: int | None = None) -> str:
    """A line logged through SGLang's logger; `rank` adds the scheduler's ` TPn` tag."""
    journal, sglang = _stamps(int(t))
    tag = "" if rank is None else f" TP{rank}"
    return f"{journal} {unit.host} {unit.ident}[{pid}]: [{sglang}{tag}] {msg}"


def uvicorn_line(unit: Unit, t: float, pid: int, msg: str) -> str:
    """uvicorn lines: `[ts] INFO:     ...` (levelprefix padded to 9 characters)."""
    return sglang_line(unit, t, pid, "INFO:     " + msg)


def boot_header(boot_id: str) -> str:
    return f"-- Boot {boot_id} --"


# --------------------------------------------------------------------------------------------
# SGLang v0.5.9 message texts (what follows the `[ts TPn] ` prefix)
# --------------------------------------------------------------------------------------------


def msg_init_dist_begin() -> str:
    return "Init torch distributed begin."


def msg_init_dist_end(elapsed: float, mem_usage: float) -> str:
    return f"Init torch distributed ends. elapsed={elapsed:.2f} s, mem usage={mem_usage:.2f} GB"


def msg_load_begin(avail: float) -> str:
    return f"Load weight begin. avail mem={avail:.2f} GB"


def msg_load_end(elapsed: float, model_class: str, dtype: str, avail: float, usage: float) -> str:
    return (
        f"Load weight end. elapsed={elapsed:.2f} s, type={model_class}, dtype={dtype}, "
        f"avail mem={avail:.2f} GB, mem usage={usage:.2f} GB."
    )


def msg_kv_dtype(dtype: str) -> str:
    return f"Using KV cache dtype: {dtype}"


def msg_kv_alloc(tokens: int, k_gib: float, v_gib: float) -> str:
    return f"KV Cache is allocated. #tokens: {tokens}, K size: {k_gib:.2f} GB, V size: {v_gib:.2f} GB"


def msg_pool_end(avail: float) -> str:
    return f"Memory pool end. avail mem={avail:.2f} GB"


def msg_capture_begin(avail: float, draft: bool = False) -> str:
    what = "draft cuda graph" if draft else "cuda graph"
    return f"Capture {what} begin. This can take up to several minutes. avail mem={avail:.2f} GB"


def msg_capture_bs(bs: list[int]) -> str:
    return f"Capture cuda graph bs {bs}"


def msg_capture_end(elapsed: float, usage: float, avail: float, draft: bool = False) -> str:
    what = "draft cuda graph" if draft else "cuda graph"
    return (
        f"Capture {what} end. Time elapsed: {elapsed:.2f} s. mem usage={usage:.2f} GB. "
        f"avail mem={avail:.2f} GB."
    )


def msg_capacity(
    max_total: int, chunked: int, max_prefill: int, max_running: int, context_len: int, avail: float
) -> str:
    return (
        f"max_total_num_tokens={max_total}, chunked_prefill_size={chunked}, "
        f"max_prefill_tokens={max_prefill}, "
        f"max_running_requests={max_running}, context_len={context_len}, available_gpu_mem={avail:.2f} GB"
    )


def msg_hicache_alloc(host_gb: float) -> str:
    return f"Allocating {host_gb:.2f} GB host memory for hierarchical KV cache."


def msg_hicache_too_big(requested_gb: float, free_gb: float) -> str:
    return (
        f"ValueError: Not enough host memory available. Requesting {requested_gb:.2f} GB but only have "
        f"{free_gb:.2f} GB free. Please reduce the size of the hierarchical cache."
    )


def msg_prefill(
    new_seq: int, new_token: int, cached: int, usage: float, running: int, queue: int, throughput: float
) -> str:
    return (
        f"Prefill batch, #new-seq: {new_seq}, #new-token: {new_token}, #cached-token: {cached}, "
        f"token usage: {usage:.2f}, #running-req: {running}, #queue-req: {queue}, "
        f"input throughput (token/s): {throughput:.2f}, cuda graph: False"
    )


def msg_decode(
    running: int,
    tokens: int,
    usage: float,
    throughput: float,
    queue: int,
    accept: tuple[float, float] | None = None,
) -> str:
    spec = "" if accept is None else f"accept len: {accept[0]:.2f}, accept rate: {accept[1]:.2f}, "
    return (
        f"Decode batch, #running-req: {running}, #token: {tokens}, token usage: {usage:.2f}, {spec}"
        f"cuda graph: True, gen throughput (token/s): {throughput:.2f}, #queue-req: {queue}"
    )


def msg_retract(retracted: int, gained: int, ratio_from: float, ratio_to: float) -> str:
    return (
        f"KV cache pool is full. Retract requests. #retracted_reqs: {retracted}, "
        f"#new_tokens_gained: {gained}, #new_token_ratio: {ratio_from:.4f} -> {ratio_to:.4f}"
    )


def msg_access(client: str, port: int, method: str, path: str, status: str = "200 OK") -> str:
    """uvicorn access text after `INFO:     `."""
    return f'{client}:{port} - "{method} {path} HTTP/1.1" {status}'


MSG_EXCEPTION = "Scheduler hit an exception: Traceback (most recent call last):"
MSG_READY = "The server is fired up and ready to roll!"
MSG_SIGQUIT_LAUNCH = "Received sigquit from a child process. It usually means the child failed."
MSG_SIGQUIT_RUNNING = "SIGQUIT received. signum=None, frame=None. It usually means one child failed."
MSG_SIGTERM = "SIGTERM received. signum=None frame=None. Draining requests and shutting down..."
MSG_DRAINED = "Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[]."
MSG_SPEC_MAX_RUNNING = (
    "Max running requests is reset to 48 for speculative decoding. You can override this by explicitly "
    "setting --max-running-requests."
)

Frame = tuple[str, int, str, str]  # (path under site-packages/sglang, line, function, source line)


def traceback_lines(frames: list[Frame], final: str) -> list[str]:
    """Body of a traceback after `Traceback (most recent call last):`, ending with a blank line."""
    out: list[str] = []
    for path, lineno, func, code in frames:
        out.append(f'  File "{SGLANG_SITE}/{path}", line {lineno}, in {func}')
        out.append(f"    {code}")
    out.append(final)
    out.append("")
    return out


# Call chains of the failures used below (v0.5.9 module layout).
HICACHE_FRAMES: list[Frame] = [
    ("srt/managers/scheduler.py", 3043, "run_scheduler_process", "scheduler = Scheduler("),
    ("srt/managers/scheduler.py", 368, "__init__", "self.init_cache_with_memory_pool()"),
    ("srt/managers/scheduler.py", 641, "init_cache_with_memory_pool", "self.tree_cache = HiRadixCache("),
    ("srt/mem_cache/hiradix_cache.py", 74, "__init__", "self.token_to_kv_pool_host = MHATokenToKVPoolHost("),
    ("srt/mem_cache/memory_pool_host.py", 262, "__init__", "super().__init__("),
    ("srt/mem_cache/memory_pool_host.py", 101, "__init__", "raise ValueError("),
]
RUNTIME_FRAMES: list[Frame] = [
    ("srt/managers/scheduler.py", 3061, "run_scheduler_process", "scheduler.event_loop_overlap()"),
    ("../torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)"),
    ("srt/managers/scheduler.py", 1105, "event_loop_overlap", "batch_result = self.run_batch(batch)"),
    ("srt/managers/scheduler.py", 2232, "run_batch",
     "batch_result = self.model_worker.forward_batch_generation("),
    ("srt/managers/tp_worker.py", 402, "forward_batch_generation",
     "logits_output, can_run_cuda_graph = self.model_runner.forward("),
    ("srt/model_executor/model_runner.py", 2411, "_forward_raw", "ret = self.forward_extend("),
]
RUNTIME_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity of "
    "79.19 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has 77.96 GiB memory in "
    "use. Of the allocated memory 71.02 GiB is allocated by PyTorch, and 3.11 GiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
    "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)

# --------------------------------------------------------------------------------------------
# systemd message texts (newer systemd: "unit - Description")
# --------------------------------------------------------------------------------------------


def sd_starting(u: Unit) -> str:
    return f"Starting {u.name} - {u.description}..."


def sd_started(u: Unit) -> str:
    return f"Started {u.name} - {u.description}."


def sd_stopping(u: Unit) -> str:
    return f"Stopping {u.name} - {u.description}..."


def sd_stopped(u: Unit) -> str:
    return f"Stopped {u.name} - {u.description}."


def sd_main_exited(u: Unit, code: str, status: str) -> str:
    return f"{u.name}: Main process exited, code={code}, status={status}"


def sd_failed(u: Unit, result: str) -> str:
    return f"{u.name}: Failed with result '{result}'."


def sd_restart_scheduled(u: Unit, counter: int) -> str:
    return f"{u.name}: Scheduled restart job, restart counter is at {counter}."


def fmt_timespan(seconds: float) -> str:
    """systemd's format_timespan at ms accuracy: `6h 52min 37.904s`, `45.120s`."""
    ms_total = int(round(seconds * 1000))
    hours, rest = divmod(ms_total, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    parts = []
    if hours:
        parts.append(f"{hours}h")
    if minutes:
        parts.append(f"{minutes}min")
    if rest or not parts:
        secs, millis = divmod(rest, 1000)
        parts.append(f"{secs}.{millis:03d}s" if millis else f"{secs}s")
    return " ".join(parts)


def sd_consumed(u: Unit, cpu_seconds: float, peak_gib: float) -> str:
    return (
        f"{u.name}: Consumed {fmt_timespan(cpu_seconds)} CPU time, {peak_gib:.1f}G memory peak, "
        f"0B memory swap peak."
    )


# --------------------------------------------------------------------------------------------
# ServerArgs dump (v0.5.9 field order; values are the resolved defaults as the dump prints them)
# --------------------------------------------------------------------------------------------

_CUDA_GRAPH_BS = [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144,
                  152, 160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256]
_PIECEWISE_TOKENS = [4, 8, 16, 32, 48, 64, 96, 128, 160, 192, 256, 320, 384, 448, 512, 640, 768, 896, 1024,
                     1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096]

SERVER_ARGS_DEFAULTS: dict[str, object] = {
    # model and tokenizer
    "model_path": "", "tokenizer_path": "", "tokenizer_mode": "auto", "tokenizer_worker_num": 1,
    "skip_tokenizer_init": False, "load_format": "auto", "model_loader_extra_config": "{}",
    "trust_remote_code": False, "context_length": None, "is_embedding": False, "enable_multimodal": None,
    "revision": None, "model_impl": "auto",
    # HTTP server
    "host": "127.0.0.1", "port": 30000, "fastapi_root_path": "", "grpc_mode": False,
    "skip_server_warmup": False, "warmups": None, "nccl_port": None,
    "checkpoint_engine_wait_weights_before_ready": False,
    # quantization and data type
    "dtype": "auto", "quantization": None, "quantization_param_path": None, "kv_cache_dtype": "auto",
    "enable_fp32_lm_head": False, "modelopt_quant": None, "modelopt_checkpoint_restore_path": None,
    "modelopt_checkpoint_save_path": None, "modelopt_export_path": None, "quantize_and_serve": False,
    "rl_quant_profile": None,
    # memory and scheduling
    "mem_fraction_static": 0.8, "max_running_requests": None, "max_queued_requests": None,
    "max_total_tokens": None, "chunked_prefill_size": 8192, "enable_dynamic_chunking": False,
    "max_prefill_tokens": 16384, "prefill_max_requests": None, "schedule_policy": "fcfs",
    "enable_priority_scheduling": False, "abort_on_priority_when_disabled": False,
    "schedule_low_priority_values_first": False, "priority_scheduling_preemption_threshold": 10,
    "schedule_conservativeness": 1.0, "page_size": 1, "swa_full_tokens_ratio": 0.8,
    "disable_hybrid_swa_memory": False, "radix_eviction_policy": "lru", "enable_prefill_delayer": False,
    "prefill_delayer_max_delay_passes": 30, "prefill_delayer_token_usage_low_watermark": None,
    "prefill_delayer_forward_passes_buckets": None, "prefill_delayer_wait_seconds_buckets": None,
    # runtime
    "device": "cuda", "tp_size": 1, "pp_size": 1, "pp_max_micro_batch_size": None, "pp_async_batch_depth": 0,
    "stream_interval": 1, "stream_output": False, "random_seed": 0,
    "constrained_json_whitespace_pattern": None, "constrained_json_disable_any_whitespace": False,
    "watchdog_timeout": 300, "soft_watchdog_timeout": None, "dist_timeout": None, "download_dir": None,
    "model_checksum": None, "base_gpu_id": 0, "gpu_id_step": 1, "sleep_on_idle": False,
    "custom_sigquit_handler": None,
    # logging
    "log_level": "info", "log_level_http": None, "log_requests": False, "log_requests_level": 2,
    "log_requests_format": "text", "log_requests_target": None, "uvicorn_access_log_exclude_prefixes": [],
    "crash_dump_folder": None, "show_time_cost": False, "enable_metrics": False,
    "enable_metrics_for_all_schedulers": False, "tokenizer_metrics_custom_labels_header": "x-custom-labels",
    "tokenizer_metrics_allowed_custom_labels": None, "extra_metric_labels": None,
    "bucket_time_to_first_token": None, "bucket_inter_token_latency": None,
    "bucket_e2e_request_latency": None, "collect_tokens_histogram": False, "prompt_tokens_buckets": None,
    "generation_tokens_buckets": None, "gc_warning_threshold_secs": 0.0, "decode_log_interval": 40,
    "enable_request_time_stats_logging": False, "kv_events_config": None, "enable_trace": False,
    "otlp_traces_endpoint": "localhost:4317", "export_metrics_to_file": False,
    "export_metrics_to_file_dir": None,
    # API
    "api_key": None, "admin_api_key": None, "served_model_name": "", "weight_version": "default",
    "chat_template": None, "hf_chat_template_name": None, "completion_template": None,
    "file_storage_path": "sglang_storage", "enable_cache_report": False, "reasoning_parser": None,
    "tool_call_parser": None, "tool_server": None, "sampling_defaults": "model",
    # data parallelism and multi-node
    "dp_size": 1, "load_balance_method": "round_robin", "attn_cp_size": 1, "moe_dp_size": 1,
    "dist_init_addr": None, "nnodes": 1, "node_rank": 0, "json_model_override_args": "{}",
    "preferred_sampling_params": None,
    # LoRA
    "enable_lora": None, "enable_lora_overlap_loading": None, "max_lora_rank": None,
    "lora_target_modules": None, "lora_paths": None, "max_loaded_loras": None, "max_loras_per_batch": 8,
    "lora_eviction_policy": "lru", "lora_backend": "csgmv", "max_lora_chunk_size": 16,
    # kernel backends
    "attention_backend": "fa3", "decode_attention_backend": None, "prefill_attention_backend": None,
    "sampling_backend": "flashinfer", "grammar_backend": "xgrammar", "mm_attention_backend": None,
    "fp8_gemm_runner_backend": "auto", "fp4_gemm_runner_backend": "flashinfer_cutlass",
    "nsa_prefill_backend": None, "nsa_decode_backend": None, "disable_flashinfer_autotune": False,
    "mamba_backend": "triton",
    # speculative decoding
    "speculative_algorithm": None, "speculative_draft_model_path": None,
    "speculative_draft_model_revision": None, "speculative_draft_load_format": None,
    "speculative_num_steps": None, "speculative_eagle_topk": None, "speculative_num_draft_tokens": None,
    "speculative_accept_threshold_single": 1.0, "speculative_accept_threshold_acc": 1.0,
    "speculative_token_map": None, "speculative_attention_mode": "prefill",
    "speculative_draft_attention_backend": None, "speculative_moe_runner_backend": "auto",
    "speculative_moe_a2a_backend": None, "speculative_draft_model_quantization": None,
    "speculative_ngram_min_match_window_size": 1, "speculative_ngram_max_match_window_size": 12,
    "speculative_ngram_min_bfs_breadth": 1, "speculative_ngram_max_bfs_breadth": 10,
    "speculative_ngram_match_type": "BFS", "speculative_ngram_branch_length": 18,
    "speculative_ngram_capacity": 10000000, "enable_multi_layer_eagle": False,
    # expert parallelism
    "ep_size": 1, "moe_a2a_backend": "none", "moe_runner_backend": "auto",
    "flashinfer_mxfp4_moe_precision": "default", "enable_flashinfer_allreduce_fusion": False,
    "deepep_mode": "auto", "ep_num_redundant_experts": 0, "ep_dispatch_algorithm": None,
    "init_expert_location": "trivial", "enable_eplb": False, "eplb_algorithm": "auto",
    "eplb_rebalance_num_iterations": 1000, "eplb_rebalance_layers_per_chunk": None,
    "eplb_min_rebalancing_utilization_threshold": 1.0, "expert_distribution_recorder_mode": None,
    "expert_distribution_recorder_buffer_size": 1000, "enable_expert_distribution_metrics": False,
    "deepep_config": None, "moe_dense_tp_size": None, "elastic_ep_backend": None, "mooncake_ib_device": None,
    # mamba / hybrid models
    "max_mamba_cache_size": None, "mamba_ssm_dtype": None, "mamba_full_memory_ratio": 0.9,
    "mamba_scheduler_strategy": "no_buffer", "mamba_track_interval": 256,
    # hierarchical cache
    "enable_hierarchical_cache": False, "hicache_ratio": 2.0, "hicache_size": 0,
    "hicache_write_policy": "write_through", "hicache_io_backend": "kernel",
    "hicache_mem_layout": "layer_first", "disable_hicache_numa_detect": False,
    "hicache_storage_backend": None, "hicache_storage_prefetch_policy": "best_effort",
    "hicache_storage_backend_extra_config": None, "hierarchical_sparse_attention_extra_config": None,
    "enable_lmcache": False,
    # ktransformers, diffusion LM, double sparsity, offload
    "kt_weight_path": None, "kt_method": "AMXINT4", "kt_cpuinfer": None, "kt_threadpool_count": 2,
    "kt_num_gpu_experts": None, "kt_max_deferred_experts_per_token": None, "dllm_algorithm": None,
    "dllm_algorithm_config": None, "enable_double_sparsity": False, "ds_channel_config_path": None,
    "ds_heavy_channel_num": 32, "ds_heavy_token_num": 256, "ds_heavy_channel_type": "qk",
    "ds_sparse_decode_threshold": 4096, "cpu_offload_gb": 0, "offload_group_size": -1,
    "offload_num_in_group": 1, "offload_prefetch_step": 1, "offload_mode": "cpu",
    # optimisations and debug switches
    "multi_item_scoring_delimiter": None, "disable_radix_cache": False, "cuda_graph_max_bs": 256,
    "cuda_graph_bs": _CUDA_GRAPH_BS, "disable_cuda_graph": False, "disable_cuda_graph_padding": False,
    "enable_profile_cuda_graph": False, "enable_cudagraph_gc": False, "enable_layerwise_nvtx_marker": False,
    "enable_nccl_nvls": False, "enable_symm_mem": False,
    "disable_flashinfer_cutlass_moe_fp4_allgather": False,
    "enable_tokenizer_batch_encode": False, "disable_tokenizer_batch_decode": False,
    "disable_outlines_disk_cache": False, "disable_custom_all_reduce": False, "enable_mscclpp": False,
    "enable_torch_symm_mem": False, "disable_overlap_schedule": False, "enable_mixed_chunk": False,
    "enable_dp_attention": False, "enable_dp_lm_head": False, "enable_two_batch_overlap": False,
    "enable_single_batch_overlap": False, "tbo_token_distribution_threshold": 0.48,
    "enable_torch_compile": False, "enable_piecewise_cuda_graph": False,
    "enable_torch_compile_debug_mode": False, "torch_compile_max_bs": 32,
    "piecewise_cuda_graph_max_tokens": 4096, "piecewise_cuda_graph_tokens": _PIECEWISE_TOKENS,
    "piecewise_cuda_graph_compiler": "eager", "torchao_config": "", "enable_nan_detection": False,
    "enable_p2p_check": False, "triton_attention_reduce_in_fp32": False, "triton_attention_num_kv_splits": 8,
    "triton_attention_split_tile_size": None, "num_continuous_decode_steps": 1,
    "delete_ckpt_after_loading": False, "enable_memory_saver": False, "enable_weights_cpu_backup": False,
    "enable_draft_weights_cpu_backup": False, "allow_auto_truncate": False,
    "enable_custom_logit_processor": False, "flashinfer_mla_disable_ragged": False,
    "disable_shared_experts_fusion": False, "disable_chunked_prefix_cache": False,
    "disable_fast_image_processor": False, "keep_mm_feature_on_device": False,
    "enable_return_hidden_states": False, "enable_return_routed_experts": False, "scheduler_recv_interval": 1,
    "numa_node": None, "enable_deterministic_inference": False, "rl_on_policy_target": None,
    "enable_attn_tp_input_scattered": False, "enable_nsa_prefill_context_parallel": False,
    "nsa_prefill_cp_mode": "round-robin-split", "enable_fused_qk_norm_rope": False,
    "enable_precise_embedding_interpolation": False, "enable_dynamic_batch_tokenizer": False,
    "dynamic_batch_tokenizer_batch_size": 32, "dynamic_batch_tokenizer_batch_timeout": 0.002,
    "debug_tensor_dump_output_folder": None, "debug_tensor_dump_layers": None,
    "debug_tensor_dump_input_file": None, "debug_tensor_dump_inject": False,
    # PD disaggregation, encoder disaggregation, weight loading, multiplexing, multimodal
    "disaggregation_mode": "null", "disaggregation_transfer_backend": "mooncake",
    "disaggregation_bootstrap_port": 8998, "disaggregation_decode_tp": None, "disaggregation_decode_dp": None,
    "disaggregation_prefill_pp": 1, "disaggregation_ib_device": None,
    "disaggregation_decode_enable_offload_kvcache": False, "num_reserved_decode_tokens": 512,
    "disaggregation_decode_polling_interval": 1, "encoder_only": False, "language_only": False,
    "encoder_transfer_backend": "zmq_to_scheduler", "encoder_urls": [], "custom_weight_loader": [],
    "weight_loader_disable_mmap": False, "remote_instance_weight_loader_seed_instance_ip": None,
    "remote_instance_weight_loader_seed_instance_service_port": None,
    "remote_instance_weight_loader_send_weights_group_ports": None,
    "remote_instance_weight_loader_backend": "nccl",
    "remote_instance_weight_loader_start_seed_via_transfer_engine": False, "enable_pdmux": False,
    "pdmux_config_path": None, "sm_group_num": 8, "mm_max_concurrent_calls": 32,
    "mm_per_request_timeout": 10.0, "enable_broadcast_mm_inputs_process": False,
    "enable_prefix_mm_cache": False, "mm_enable_dp_encoder": False, "mm_process_config": {},
    "limit_mm_data_per_request": None, "decrypted_config_file": None, "decrypted_draft_config_file": None,
    "forward_hooks": None,
}


def server_args_repr(overrides: dict[str, object]) -> str:
    """`ServerArgs(...)` as the dataclass repr prints it; an unknown key is a bug in the caller."""
    unknown = set(overrides) - set(SERVER_ARGS_DEFAULTS)
    if unknown:
        raise KeyError(f"not a v0.5.9 ServerArgs field: {sorted(unknown)}")
    values = {**SERVER_ARGS_DEFAULTS, **overrides}
    return "ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in values.items()) + ")"


# --------------------------------------------------------------------------------------------
# One launch: model, GPUs and derived memory figures
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DraftModel:
    """EAGLE3 draft model (per-rank figures)."""

    path: str
    model_class: str
    weights_gib: float
    kv_cell_bytes: int
    capture_gib: float
    accept_len: float  # mean tokens per verify step


@dataclass(frozen=True)
class Launch:
    """What one `sglang.launch_server` invocation looks like to the log."""

    model_path: str
    model_class: str
    tp: int
    gpu_free_gib: float  # `Load weight begin. avail mem` = profiled total memory
    weights_gib: float  # `Load weight end. mem usage` per rank
    kv_cell_bytes: int  # K+V bytes per token per rank over all layers
    mem_fraction_static: float
    context_len: int
    served_model_name: str | None = None
    chunked_prefill: int = 8192
    max_prefill: int = 16384
    max_running: int | None = None  # None = derived like SGLang does
    load_seconds: float = 40.0
    capture_seconds: float = 20.0
    capture_gib: float = 0.9
    hicache_ratio: float | None = None  # None = HiCache off
    draft: DraftModel | None = None
    random_seed: int = 0
    extra_args: dict[str, object] = field(default_factory=dict)

    def server_args(self) -> dict[str, object]:
        """ServerArgs overrides for the dump (the fields a launch sets or that get resolved)."""
        args: dict[str, object] = {
            "model_path": self.model_path,
            "tokenizer_path": self.model_path,
            "context_length": self.context_len,
            "host": "0.0.0.0",
            "mem_fraction_static": self.mem_fraction_static,
            "chunked_prefill_size": self.chunked_prefill,
            "max_prefill_tokens": self.max_prefill,
            "tp_size": self.tp,
            "random_seed": self.random_seed,
            "served_model_name": self.served_model_name or self.model_path,
            "enable_hierarchical_cache": self.hicache_ratio is not None,
        }
        if self.hicache_ratio is not None:
            args["hicache_ratio"] = self.hicache_ratio
        if self.draft is not None:
            args.update(
                speculative_algorithm="EAGLE3",
                speculative_draft_model_path=self.draft.path,
                speculative_draft_model_revision="main",
                speculative_num_steps=3,
                speculative_eagle_topk=1,
                speculative_num_draft_tokens=4,
                max_running_requests=48,
                cuda_graph_max_bs=48,
                cuda_graph_bs=[1, 2, 4, 8, 12, 16, 24, 32, 40, 48],
            )
        args.update(self.extra_args)
        return args


@dataclass(frozen=True)
class MemoryPlan:
    """Per-rank memory figures exactly as printed (rounded to 2 dp, derived from each other)."""

    before_load: float
    after_load: float
    kv_tokens: int
    k_gib: float
    v_gib: float
    pool_end: float
    capture_begin: float
    capture_end: float
    draft_after_load: float | None
    draft_k_gib: float | None
    draft_pool_end: float | None
    draft_capture_end: float | None
    available_gpu_mem: float
    max_running: int
    host_gb_per_rank: float | None  # HiCache pool, decimal GB as SGLang prints it

    @property
    def weights_gib(self) -> float:
        return round(self.before_load - self.after_load, 2)


def plan_memory(launch: Launch) -> MemoryPlan:
    """Follow SGLang's profile_max_num_token: rest = avail_after - total * (1 - mem_fraction_static)."""
    before = round(launch.gpu_free_gib, 2)
    after = round(before - launch.weights_gib, 2)
    rest_gib = after - before * (1 - launch.mem_fraction_static)
    tokens = int(rest_gib * GIB // launch.kv_cell_bytes)
    k = round(tokens * launch.kv_cell_bytes / 2 / GIB, 2)
    pool_end = round(after - 2 * k - 0.31, 2)  # req_to_token pool and small buffers
    capture_begin = round(pool_end - 0.02, 2)
    capture_end = round(capture_begin - launch.capture_gib, 2)
    available = capture_end
    d_after = d_k = d_pool = d_cap = None
    if launch.draft is not None:
        d = launch.draft
        d_after = round(capture_end - d.weights_gib, 2)
        d_k = round(tokens * d.kv_cell_bytes / 2 / GIB, 2)
        d_pool = round(d_after - 2 * d_k, 2)
        d_cap = round(d_pool - 0.02 - d.capture_gib, 2)
        available = d_cap
    if launch.max_running is not None:
        max_running = launch.max_running
    elif launch.draft is not None:
        max_running = 48
    else:  # v0.5.x req_to_token pool sizing, clamped to [2048, 4096]
        max_running = min(max(int(tokens / launch.context_len * 512), 2048), 4096)
    host_gb = None
    if launch.hicache_ratio is not None:  # host pool: int(device tokens * ratio) * bytes/token, in 1e9 GB
        host_gb = round(int(tokens * launch.hicache_ratio) * launch.kv_cell_bytes / 1e9, 2)
    return MemoryPlan(before, after, tokens, k, k, pool_end, capture_begin, capture_end,
                      d_after, d_k, d_pool, d_cap, available, max_running, host_gb)


# --------------------------------------------------------------------------------------------
# Startup sequence of one launch: returns timed lines (a few dozen, so a list is fine)
# --------------------------------------------------------------------------------------------

TimedLine = tuple[float, str]
_Event = tuple[float, "int | None", str, str]  # (t, rank, kind "sglang"/"raw", text)


@dataclass
class LaunchResult:
    lines: list[TimedLine]
    ready_at: float | None  # None when the launch crashed
    end_at: float  # time of the last emitted line
    plan: MemoryPlan


def startup_lines(
    unit: Unit,
    pid: int,
    launch: Launch,
    t0: float,
    rng: random.Random,
    host_free_gb: float | None = None,
) -> LaunchResult:
    """Lines from process start until ready (or until the HiCache host-memory check fails).

    host_free_gb: free host memory the HiCache check sees; a per-rank request above it raises
    `ValueError: Not enough host memory available...` in every rank's scheduler, as v0.5.9 does.
    """
    plan = plan_memory(launch)
    events: list[tuple[float, int | None, str, str]] = []

    def on_main(t: float, msg: str) -> None:
        events.append((t, None, "sglang", msg))

    def on_ranks(t: float, spread: float, make: Callable[[int], str]) -> float:
        """One line per rank at jittered times (ranks interleave arbitrarily); returns the last time."""
        last = t
        for rank in range(launch.tp):
            tt = t + rng.uniform(0, spread)
            last = max(last, tt)
            events.append((tt, rank, "sglang", make(rank)))
        return last

    t = t0 + rng.uniform(5.5, 8.0)  # interpreter start + sglang imports
    if launch.draft is not None:
        on_main(t, MSG_SPEC_MAX_RUNNING)
    on_main(t + 0.4, "server_args=" + server_args_repr(launch.server_args()))
    on_main(t + 1.1, "Using default HuggingFace chat template with detected content format: string")
    t += rng.uniform(9.0, 12.0)  # scheduler processes spawn and import torch
    on_ranks(t, 0.5, lambda r: msg_init_dist_begin())
    events.append((t + 0.7, 0, "sglang", "sglang is using nccl==2.27.5"))
    t = on_ranks(t + 0.9, 0.5, lambda r: msg_init_dist_end(rng.uniform(0.85, 1.4), 0.53))
    t = on_ranks(t + 0.6, 0.3, lambda r: msg_load_begin(plan.before_load))
    elapsed = [launch.load_seconds + rng.uniform(-0.4, 0.4) for _ in range(launch.tp)]
    for rank, secs in enumerate(elapsed):
        events.append((t + secs, rank, "sglang", msg_load_end(
            secs, launch.model_class, "torch.bfloat16", plan.after_load, plan.weights_gib)))
    t += max(elapsed) + 0.3
    events.append((t, 0, "sglang", msg_kv_dtype("torch.bfloat16")))
    on_ranks(t + 0.1, 0.4, lambda r: msg_kv_alloc(plan.kv_tokens, plan.k_gib, plan.v_gib))
    t = on_ranks(t + 0.6, 0.4, lambda r: msg_pool_end(plan.pool_end))
    t = on_ranks(t + 0.8, 0.3, lambda r: msg_capture_begin(plan.capture_begin))
    bs = launch.server_args().get("cuda_graph_bs", _CUDA_GRAPH_BS)
    events.append((t + 0.01, 0, "sglang", msg_capture_bs(list(bs))))  # type: ignore[call-overload]
    cap = launch.capture_seconds
    cap_usage = round(plan.capture_begin - plan.capture_end, 2)
    t = on_ranks(t + cap, 0.4,
                 lambda r: msg_capture_end(cap + rng.uniform(-0.3, 0.3), cap_usage, plan.capture_end))
    if launch.draft is not None:
        d = launch.draft
        assert plan.draft_after_load is not None and plan.draft_k_gib is not None
        assert plan.draft_pool_end is not None and plan.draft_capture_end is not None
        d_after, d_k = plan.draft_after_load, plan.draft_k_gib
        d_pool, d_cap = plan.draft_pool_end, plan.draft_capture_end
        t = on_ranks(t + 0.5, 0.3, lambda r: msg_init_dist_begin())
        t = on_ranks(t + 0.05, 0.2, lambda r: msg_init_dist_end(0.0, 0.0))
        t = on_ranks(t + 0.1, 0.2, lambda r: msg_load_begin(plan.capture_end))
        t = on_ranks(t + 2.5, 0.5, lambda r: msg_load_end(
            rng.uniform(2.2, 3.1), d.model_class, "torch.bfloat16", d_after, d.weights_gib))
        t = on_ranks(t + 0.2, 0.3, lambda r: msg_kv_alloc(plan.kv_tokens, d_k, d_k))
        t = on_ranks(t + 0.1, 0.2, lambda r: msg_pool_end(d_pool))
        t = on_ranks(t + 0.6, 0.2, lambda r: msg_capture_begin(round(d_pool - 0.02, 2), draft=True))
        t = on_ranks(t + 9.0, 0.5,
                     lambda r: msg_capture_end(rng.uniform(8.6, 9.4), d.capture_gib, d_cap, draft=True))
    t += 0.2
    capacity = msg_capacity(plan.kv_tokens, launch.chunked_prefill, launch.max_prefill, plan.max_running,
                            launch.context_len, plan.available_gpu_mem)
    events.append((t, 0, "sglang", capacity))

    host_gb = plan.host_gb_per_rank
    if host_gb is not None:
        if host_free_gb is not None and host_gb > host_free_gb:
            # every rank fails the same check; here their tracebacks come one after the other
            t += 0.3
            for rank in range(launch.tp):
                t += rng.uniform(0.01, 0.08)
                events.append((t, rank, "sglang", MSG_EXCEPTION))
                for body in traceback_lines(HICACHE_FRAMES, msg_hicache_too_big(host_gb, host_free_gb)):
                    events.append((t, None, "raw", body))
            t += 0.4
            on_main(t, MSG_SIGQUIT_LAUNCH)
            return LaunchResult(_render(unit, pid, events), None, t, plan)
        t = on_ranks(t + 0.1, 0.6, lambda r: msg_hicache_alloc(host_gb))
        t += host_gb / 2.5  # pinning host memory runs at a few GB/s

    t += rng.uniform(1.5, 2.5)
    on_main(t, f"INFO:     Started server process [{pid}]")
    on_main(t, "INFO:     Waiting for application startup.")
    on_main(t + 0.01, "Using default chat sampling params from model generation config: "
                      "{'repetition_penalty': 1.0, 'temperature': 0.6, 'top_k': 20, 'top_p': 0.95}")
    on_main(t + 0.02, "INFO:     Application startup complete.")
    on_main(t + 0.02, "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
    port = rng.randint(32768, 60990)
    on_main(t + 1.0, "INFO:     " + msg_access("127.0.0.1", port, "GET", "/model_info"))
    t += 1.0 + rng.uniform(0.3, 1.2)
    # warmup request "The capital city of France is": one 6-token prefill, no Decode line
    events.append((t, 0, "sglang", msg_prefill(1, 6, 0, 0.0, 0, 0, 0.0)))
    on_main(t + 0.3, "INFO:     " + msg_access("127.0.0.1", port + 2, "POST", "/generate"))
    on_main(t + 0.3, MSG_READY)
    return LaunchResult(_render(unit, pid, events), t + 0.3, t + 0.3, plan)


def _render(unit: Unit, pid: int, events: list[tuple[float, int | None, str, str]]) -> list[TimedLine]:
    """Sort by time (stable, so traceback bodies keep their order) and format as journal lines."""
    events.sort(key=lambda e: e[0])
    out: list[TimedLine] = []
    for t, rank, kind, text in events:
        if kind == "raw":
            out.append((t, process_line(unit, t, pid, text)))
        else:
            out.append((t, sglang_line(unit, t, pid, text, rank)))
    return out


# --------------------------------------------------------------------------------------------
# Steady-state traffic (one scheduler; stats lines come from TP0)
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Req:
    kv: int  # tokens held in the KV pool
    remaining: int  # output tokens still to generate


class Traffic:
    """A cheap scheduler model yielding plausible Prefill/Decode/access/health lines lazily.

    Not a faithful simulation: token usage follows the KV held by running requests, throughput =
    tokens / wall time since the previous line of the same kind, long prompts are split into
    chunked-prefill lines, and an idle server answers /health with a one-token prefill.
    """

    def __init__(self, unit: Unit, pid: int, launch: Launch, plan: MemoryPlan, rng: random.Random,
                 t0: float, mean_gap: float = 6.0, health_every: float = 30.0,
                 clients: tuple[str, ...] = ("10.20.0.14", "10.20.0.15", "127.0.0.1"),
                 health_client: str = "10.20.0.2", prompt_scale: float = 1.0) -> None:
        self.unit, self.pid, self.launch, self.plan, self.rng = unit, pid, launch, plan, rng
        self.t = t0
        self.mean_gap = mean_gap
        self.health_every = health_every
        self.clients = clients
        self.health_client = health_client
        self.prompt_mu = 8.6 + math.log(prompt_scale)
        self.running: list[_Req] = []
        self.held = 0  # sum of kv over running requests, kept incrementally (hot path)
        self.queue = 0
        self.last_prefill_t = t0
        self.last_decode_t = t0
        self.next_arrival = t0 + rng.expovariate(1 / mean_gap)
        self.next_health = t0 + rng.uniform(1, health_every)
        self.next_decode = math.inf
        self.new_token_ratio = 0.7
        self.accept = launch.draft.accept_len if launch.draft else None
        self.surge_until = -math.inf  # load surges fill the KV pool now and then (retractions)
        self.surge_chance = 0.004
        self.counts = {"prefill": 0, "decode": 0, "chat": 0, "health": 0, "retract": 0}

    def _usage(self) -> float:
        return self.held / self.plan.kv_tokens

    def _line(self, t: float, msg: str, rank: int | None = 0) -> TimedLine:
        return t, sglang_line(self.unit, t, self.pid, msg, rank)

    def _access(self, t: float, client: str, method: str, path: str) -> TimedLine:
        port = self.rng.randint(32768, 60999)
        return t, uvicorn_line(self.unit, t, self.pid, msg_access(client, port, method, path))

    def _step_seconds(self) -> float:
        return 0.021 + 0.00035 * len(self.running) + self.held * 2.0e-9

    def _prefill(self, t: float, new: int, cached: int) -> TimedLine:
        gap = max(t - self.last_prefill_t, 1e-3)
        self.last_prefill_t = t
        self.counts["prefill"] += 1
        msg = msg_prefill(1, new, cached, self._usage(), len(self.running), self.queue, new / gap)
        return self._line(t, msg)

    def _arrival(self, t: float) -> list[TimedLine]:
        rng = self.rng
        surge = t < self.surge_until
        mu = self.prompt_mu + (1.6 if surge else 0.0)
        prompt = min(int(rng.lognormvariate(mu, 1.0)) + 20, self.launch.context_len - 4096)
        hit = rng.choice((0.0, 0.0, 0.6, 0.85, 0.95)) if self.running or rng.random() < 0.5 else 0.0
        cached = int(prompt * hit)
        new = prompt - cached
        if self.held + prompt > 0.95 * self.plan.kv_tokens:  # no room: waits in the queue (then gives up)
            self.queue += 1
            return []
        out: list[TimedLine] = []
        first = True
        while True:  # chunked prefill: one Prefill line per chunk
            part = min(new, self.launch.chunked_prefill)
            out.append(self._prefill(t, part, cached if first else 0))
            if first:  # streaming responses are logged by uvicorn when they start
                out.append(self._access(t + 0.002, rng.choice(self.clients), "POST", "/v1/chat/completions"))
                self.counts["chat"] += 1
                first = False
            new -= part
            if new <= 0:
                break
            t += part / 9000.0 + 0.05
        out_len = int(rng.lognormvariate(7.0 if surge else 5.6, 0.9)) + 8
        self.running.append(_Req(kv=prompt, remaining=out_len))
        self.held += prompt
        self.t = t
        return out

    def _decode(self, t: float) -> list[TimedLine]:
        per_req = int(round(40 * self.accept)) if self.accept else 40  # decode_log_interval = 40 steps
        bs = len(self.running)
        generated = 0
        for r in self.running:  # hot loop: no min()/function calls
            g = per_req if r.remaining > per_req else r.remaining
            r.kv += g
            r.remaining -= g
            generated += g
        self.held += generated
        gap = max(t - self.last_decode_t, 1e-3)
        self.last_decode_t = t
        accept = None
        if self.accept:
            acc_len = max(1.0, self.rng.gauss(self.accept, 0.25))
            accept = (acc_len, min(1.0, (acc_len - 1) / 3))
        msg = msg_decode(bs, self.held, self._usage(), generated / gap, self.queue, accept)
        out = [self._line(t, msg)]
        self.counts["decode"] += 1
        done = [r for r in self.running if r.remaining <= 0]
        if done:
            self.held -= sum(r.kv for r in done)
            self.queue = max(0, self.queue - len(done))
            self.running = [r for r in self.running if r.remaining > 0]
        if self._usage() > 0.96 and len(self.running) > 1:
            out.extend(self._retract(t))
        return out

    def _retract(self, t: float) -> list[TimedLine]:
        victim = max(self.running, key=lambda r: r.kv)
        self.running.remove(victim)
        self.held -= victim.kv
        old = self.new_token_ratio
        self.new_token_ratio = min(1.0, old + 0.3)
        self.counts["retract"] += 1
        msg = msg_retract(1, victim.kv, old, self.new_token_ratio)
        return [self._line(t, msg, rank) for rank in range(self.launch.tp)]  # every rank logs it

    def _health(self, t: float) -> list[TimedLine]:
        out = []
        if not self.running:
            out.append(self._prefill(t, 1, 0))
        out.append(self._access(t + 0.001, self.health_client, "GET", "/health"))
        self.counts["health"] += 1
        return out

    def lines(self, until: float = math.inf) -> Iterator[TimedLine]:
        """Lines in time order until `until` (exclusive); endless by default."""
        while True:
            t = min(self.next_arrival, self.next_decode, self.next_health)
            if t >= until:
                return
            if t == self.next_health:
                yield from self._health(t)
                self.next_health = t + self.health_every
            elif t == self.next_decode:
                yield from self._decode(t)
                self.new_token_ratio = max(0.05, self.new_token_ratio - 0.0015)
            else:
                yield from self._arrival(t)
                if self.rng.random() < self.surge_chance:
                    self.surge_until = t + self.rng.uniform(120, 400)
                surging = t < self.surge_until
                gap = self.mean_gap * (0.25 if surging or self.rng.random() < 0.15 else 1.0)
                self.next_arrival = self.t + self.rng.expovariate(1 / gap)
            now = max(t, self.t)
            self.next_decode = now + 40 * self._step_seconds() if self.running else math.inf


# --------------------------------------------------------------------------------------------
# systemd lifecycle helpers (timed lines)
# --------------------------------------------------------------------------------------------


def start_lines(unit: Unit, t: float) -> list[TimedLine]:
    return [(t, systemd_line(unit, t, sd_starting(unit))), (t, systemd_line(unit, t, sd_started(unit)))]


def stop_lines(unit: Unit, pid: int, t: float, cpu_seconds: float, peak_gib: float) -> list[TimedLine]:
    """`systemctl stop/restart`: SIGTERM drain, then SGLang SIGKILLs its own tree (status=9/KILL)."""
    te = t + 1.6
    return [
        (t, systemd_line(unit, t, sd_stopping(unit))),
        (t, sglang_line(unit, t, pid, MSG_SIGTERM)),
        (t + 1.0, sglang_line(unit, t + 1.0, pid, MSG_DRAINED)),
        (te, systemd_line(unit, te, sd_main_exited(unit, "killed", "9/KILL"))),
        (te, systemd_line(unit, te, sd_failed(unit, "signal"))),
        (te, systemd_line(unit, te, sd_stopped(unit))),
        (te, systemd_line(unit, te, sd_consumed(unit, cpu_seconds, peak_gib))),
    ]


def failure_lines(unit: Unit, t: float, code: str, status: str, result: str, cpu_seconds: float,
                  peak_gib: float, restart_sec: float, counter: int) -> list[TimedLine]:
    """Main process died; Restart=on-failure schedules the restart RestartSec later."""
    tr = t + restart_sec
    return [
        (t, systemd_line(unit, t, sd_main_exited(unit, code, status))),
        (t, systemd_line(unit, t, sd_failed(unit, result))),
        (t, systemd_line(unit, t, sd_consumed(unit, cpu_seconds, peak_gib))),
        (tr, systemd_line(unit, tr, sd_restart_scheduled(unit, counter))),
        (tr, systemd_line(unit, tr, sd_stopped(unit))),
    ]


# --------------------------------------------------------------------------------------------
# The benchmark journal: many runs of a few model set-ups, streamed
# --------------------------------------------------------------------------------------------

BENCH_UNIT = Unit("gpu-node-7", "sglang-bench.service", "SGLang inference server")

BENCH_PROFILES: tuple[Launch, ...] = (
    Launch("Qwen/Qwen3-32B", "Qwen3ForCausalLM", tp=2, gpu_free_gib=78.62, weights_gib=31.04,
           kv_cell_bytes=131072, mem_fraction_static=0.87, context_len=40960, served_model_name="qwen3-32b",
           load_seconds=41.0, capture_seconds=19.0, capture_gib=0.96),
    Launch("meta-llama/Llama-3.3-70B-Instruct", "LlamaForCausalLM", tp=4, gpu_free_gib=78.62,
           weights_gib=33.47,
           kv_cell_bytes=81920, mem_fraction_static=0.85, context_len=131072, served_model_name="llama-70b",
           load_seconds=58.0, capture_seconds=24.0, capture_gib=1.12,
           draft=DraftModel("yuhuili/EAGLE3-LLaMA3.3-Instruct-70B", "LlamaForCausalLMEagle3",
                            0.82, 1024, 0.11, 2.6)),
    Launch("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "Qwen3MoeForCausalLM", tp=8, gpu_free_gib=78.62,
           weights_gib=29.38, kv_cell_bytes=47104, mem_fraction_static=0.85, context_len=262144,
           served_model_name="qwen3-235b", load_seconds=96.0, capture_seconds=38.0, capture_gib=1.41,
           extra_args={"quantization": "fp8", "enable_cache_report": True}),
)

_BENCH_START = local_epoch(2026, 3, 1, 8, 0, 0)


def _bench_lines(seed: int) -> Iterator[str]:
    """Endless journal, one line at a time: runs separated by restarts, stops and crashes."""
    rng = random.Random(seed)
    unit = BENCH_UNIT
    yield boot_header(f"{rng.getrandbits(128):032x}")
    t = _BENCH_START
    pid = rng.randint(200_000, 900_000)
    restart_counter = 0
    while True:
        launch = replace(rng.choice(BENCH_PROFILES), random_seed=rng.randint(1, 2**30))
        outcome = rng.choices(("stop", "runtime_crash", "startup_crash"), weights=(6, 2, 1))[0]
        if outcome == "startup_crash":  # HiCache sized beyond free host memory
            launch = replace(launch, hicache_ratio=3.0)
        elif rng.random() < 0.35:
            launch = replace(launch, hicache_ratio=2.0)
        yield from (line for _, line in start_lines(unit, t))
        host_free = 88.10 if outcome == "startup_crash" else None
        res = startup_lines(unit, pid, launch, t, rng, host_free_gb=host_free)
        yield from (line for _, line in res.lines)
        cpu = (res.end_at - t) * launch.tp * 1.3
        peak = 7.5 * launch.tp + 3.0
        if res.ready_at is None:
            restart_counter += 1
            yield from (line for _, line in failure_lines(
                unit, res.end_at + 0.8, "exited", "1/FAILURE", "exit-code", cpu, peak, 30.0, restart_counter))
            t = res.end_at + 31.0
        else:
            traffic = Traffic(unit, pid, launch, res.plan, rng, res.ready_at, mean_gap=rng.uniform(2.0, 9.0))
            budget = rng.randint(40_000, 450_000)  # serving lines before this run ends
            last_t = res.ready_at
            for n, (tt, line) in enumerate(traffic.lines()):
                yield line
                last_t = tt
                if n >= budget:
                    break
            cpu += (last_t - res.ready_at) * launch.tp * 0.9
            if outcome == "stop":
                restart_counter = 0
                yield from (line for _, line in stop_lines(unit, pid, last_t + rng.uniform(5, 60), cpu, peak))
                t = last_t + 70.0
            else:  # a scheduler dies mid-flight; v0.5.9's running-phase SIGQUIT handler kills the tree
                tc = last_t + 0.5
                yield sglang_line(unit, tc, pid, MSG_EXCEPTION, 0)
                for body in traceback_lines(RUNTIME_FRAMES, RUNTIME_OOM):
                    yield process_line(unit, tc, pid, body)
                yield sglang_line(unit, tc + 0.2, pid, MSG_SIGQUIT_RUNNING)
                restart_counter += 1
                yield from (line for _, line in failure_lines(
                    unit, tc + 0.9, "killed", "9/KILL", "signal", cpu, peak, 30.0, restart_counter))
                t = tc + 31.0
        pid += rng.randint(300, 40_000)


def write_journal(out: TextIO, lines: int, seed: int) -> int:
    """Write exactly `lines` journal lines (seeded, deterministic) to `out`; returns the line count."""
    written = 0
    batch: list[str] = []
    for line in _bench_lines(seed):
        if written >= lines:
            break
        batch.append(line)
        written += 1
        if len(batch) >= 4096:  # bounded buffer: flat memory, large writes
            out.write("\n".join(batch) + "\n")
            batch.clear()
    if batch:
        out.write("\n".join(batch) + "\n")
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Generate a synthetic SGLang v0.5.9 journal (journalctl short).")
    ap.add_argument("--lines", type=int, default=2_000_000, help="lines to write (default 2,000,000)")
    ap.add_argument("--out", required=True, help="output file")
    ap.add_argument("--seed", type=int, default=1, help="random seed; same seed, same bytes (default 1)")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    with open(args.out, "w", encoding="utf-8", newline="\n") as fh:
        n = write_journal(fh, args.lines, args.seed)
        size = fh.tell()
    print(f"wrote {n} lines, {size} bytes to {args.out} in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
