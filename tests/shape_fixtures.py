"""One SGLang TP=4 day written in each shape its logs take in 2026, for tests that compare the tables.

The records are what SGLang's loggers say (message texts from its source); each writer renders them as
one shape would: SGLang's own `[time TPn]` prefix, NVIDIA Dynamo's readable line (`logging.rs`: UTC
stamp, level padded to five, `module.function:`), Dynamo's JSONL (`time`, `level`, `target: "log"`,
`log.target`, a request's trace context), and SGLang's JSON events as bare lines or in the per-rank
files `<host>_<rank>.log` with their hourly copies. The host runs in UTC, so the local times SGLang
prints are the times Dynamo prints.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import duckdb

from logmine.query import named_queries

TP = 4
HOST = "gpu-node-7"
KV_GIB_PER_RANK = 48.96  # K 24.48 + V 24.48
WEIGHTS_GIB_PER_RANK = 15.29

RUN_FIGURES = ("ordinal", "started_at", "ready_at", "ended_at", "end_reason", "ranks", "weights_gib_per_rank",
               "kv_tokens", "kv_gib_per_rank", "weights_seconds", "prefill_batches", "decode_batches", "http_requests")
SERVING_FIGURES = ("run", "prefill_batches", "decode_batches", "http_requests", "requests_received",
                   "requests_finished", "warmup_requests", "health_checks", "e2e_latency_s_p50", "completion_tokens")


@dataclass
class Record:
    at: datetime
    message: str
    rank: int | None = None  # the scheduler rank whose prefix carries `TPn`; None for the main process
    level: str = "INFO"
    target: str = "engine._launch_subprocesses"  # Dynamo's `module.function` of the logger call
    raw: bool = False  # written by a process to stderr, not by a logger (traceback lines, JSON events)
    trace: dict[str, str] | None = None


ARGS = ("server_args=ServerArgs(model_path='Qwen/Qwen3-32B', tp_size={tp}, pp_size=1, mem_fraction_static=0.88, "
        "port=30000, enable_mfu_metrics=True, log_requests=True, log_requests_format='json')")
OOM = [
    "  File \"/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py\", line 3169, in "
    "run_scheduler_process",
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)",
    "  File \"/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/cuda_graph_runner.py\", line 512, "
    "in capture",
    "    out = run_once()",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.12 GiB. GPU 0 has a total capacity of "
    "79.19 GiB of which 2.31 GiB is free.",
]


def _per_rank(at: datetime, message: str, target: str, tp: int, step: float = 0.2) -> list[Record]:
    return [Record(at + timedelta(seconds=step * r), message, r, target=target) for r in range(tp)]


def _startup(t0: datetime, tp: int) -> list[Record]:
    out = [Record(t0, ARGS.format(tp=tp), target="server_args.print_server_args")]
    out += _per_rank(t0 + timedelta(seconds=2), "Init torch distributed begin.", "model_runner.init_torch_distributed",
                     tp)
    out += _per_rank(t0 + timedelta(seconds=4), "Init torch distributed ends. elapsed=1.42 s, mem usage=0.69 GB",
                     "model_runner.init_torch_distributed", tp)
    out += _per_rank(t0 + timedelta(seconds=5), "Load weight begin. avail mem=78.31 GB", "model_runner.load_model", tp)
    out += _per_rank(t0 + timedelta(seconds=65), "Load weight end. elapsed=60.12 s, type=Qwen3ForCausalLM, "
                     f"dtype=torch.bfloat16, avail mem=62.97 GB, mem usage={WEIGHTS_GIB_PER_RANK} GB",
                     "model_runner.load_model", tp)
    out += _per_rank(t0 + timedelta(seconds=66), "KV Cache is allocated. #tokens: 801792, K size: 24.48 GB, "
                     "V size: 24.48 GB", "memory_pool._create_buffers", tp)
    out += _per_rank(t0 + timedelta(seconds=66.5), "Memory pool end. avail mem=13.85 GB",
                     "model_runner.init_memory_pool", tp)
    out.append(Record(t0 + timedelta(seconds=67), "max_total_num_tokens=801792, chunked_prefill_size=8192, "
                      "max_prefill_tokens=16384, max_running_requests=4096, context_len=40960, "
                      "available_gpu_mem=13.85 GB", 0, target="scheduler.__init__"))
    out += _per_rank(t0 + timedelta(seconds=68), "Capture cuda graph begin. This can take up to several minutes. "
                     "avail mem=13.80 GB", "cuda_graph_runner.__init__", tp)
    return out


def launch_records(day: datetime = datetime(2026, 3, 1, 22, 0, 0), tp: int = TP,
                   served: timedelta = timedelta(seconds=120)) -> list[Record]:
    """Two launches of `tp` ranks: the first dies of a CUDA OOM while capturing graphs, the second serves
    (for `served` from its uvicorn start) and is stopped."""
    records = _startup(day, tp)
    crash = day + timedelta(seconds=80)
    records.append(Record(crash, "Scheduler hit an exception: Traceback (most recent call last):", 0, "ERROR",
                          "scheduler.run_scheduler_process"))
    records += [Record(crash, line, raw=True) for line in OOM]
    records.append(Record(crash + timedelta(seconds=1), "Received sigquit from a child process. It usually means "
                          "the child failed.", None, "ERROR", "engine.launch_phase_sigquit_handler"))
    t0 = day + timedelta(minutes=10)
    records += _startup(t0, tp)
    records += _per_rank(t0 + timedelta(seconds=90), "Capture cuda graph end. Time elapsed: 21.40 s. "
                         "mem usage=1.12 GB. avail mem=12.68 GB.", "cuda_graph_runner.__init__", tp)
    at = t0 + timedelta(seconds=92)
    records.append(Record(at, "Started server process [48211]", target="server.serve"))
    records.append(Record(at, "Waiting for application startup.", target="on.startup"))
    records.append(Record(at, "Application startup complete.", target="on.startup"))
    records.append(Record(at, "Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
                          target="server._log_started_message"))
    records += request_records(at + timedelta(seconds=1), "warmup", 1)
    records.append(Record(at + timedelta(seconds=3), "The server is fired up and ready to roll!",
                          target="http_server._wait_and_warmup"))
    records += request_records(at + timedelta(seconds=10), "HEALTH_CHECK", 1)
    records += request_records(at + timedelta(seconds=20), "req", 5)
    records.append(status_record(at + timedelta(seconds=61)))
    end = at + served
    records.append(Record(end, "SIGTERM received. signum=15 frame=None. Draining requests and shutting down...",
                          target="http_server.sigterm_handler"))
    for text in ("Shutting down", "Waiting for application shutdown.", "Application shutdown complete.",
                 "Finished server process [48211]"):
        records.append(Record(end + timedelta(seconds=1), text, target="server.shutdown"))
    return records


def request_records(at: datetime, kind: str, count: int) -> list[Record]:
    out = []
    for i in range(count):
        rid = f"HEALTH_CHECK_{1772402400 + i}" if kind == "HEALTH_CHECK" else f"{kind}{i:04d}"
        text = "The capital city of France is" if kind == "warmup" else "Hello"
        got, done = at + timedelta(seconds=2 * i), at + timedelta(seconds=2 * i + 1)
        trace = {"trace_id": f"{i + 1:032x}", "span_id": f"{i + 1:016x}", "x_request_id": rid}
        out.append(Record(got, json.dumps({"timestamp": got.isoformat(), "event": "request.received", "rid": rid,
                                           "obj": {"text": text, "rid": rid}}), raw=True))
        out.append(Record(got, "Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, "
                          "#running-req: 0, #queue-req: 0, cuda graph: False, input throughput (token/s): 0.53, "
                          "est. prefill TFLOPS/s (per GPU): 12.50", 0, target="scheduler.log_prefill_stats",
                          trace=trace))
        out.append(Record(got + timedelta(milliseconds=500), "Decode batch, #running-req: 1, #token: 47, "
                          "token usage: 0.00, cuda graph: True, gen throughput (token/s): 73.90, #queue-req: 0, "
                          "est. decode TFLOPS/s (per GPU): 0.61, est. read BW (GB/s per GPU): 702.15, "
                          "est. write BW (GB/s per GPU): 0.38", 0, target="scheduler.log_decode_stats", trace=trace))
        out.append(Record(done, json.dumps({
            "timestamp": done.isoformat(), "event": "request.finished", "rid": rid, "obj": {"rid": rid},
            "out": {"meta_info": {"id": rid, "finish_reason": {"type": "length", "length": 8}, "prompt_tokens": 7,
                                  "completion_tokens": 8, "cached_tokens": 0, "e2e_latency": 0.25 + i / 10}}}),
            raw=True))
        path = "/health_generate" if kind == "HEALTH_CHECK" else "/generate"
        out.append(Record(done, f'127.0.0.1:{51234 + i} - "POST {path} HTTP/1.1" 200 OK',
                          target="httptools_impl.send"))
    return out


def figures(con: duckdb.DuckDBPyConnection) -> dict[str, list[dict]]:
    """What a shape must agree on: each run's figures, its first error's headline and its serving counts."""
    runs = named_queries.execute(con, "runs")
    serving = named_queries.execute(con, "serving")
    return {
        "runs": [{k: (None if v != v else v) for k, v in row.items() if k in RUN_FIGURES}
                 for row in runs.to_dict("records")],
        "first_error": [(list(e)[0]["last_line"] if len(e) else None) for e in runs["errors"]],
        "serving": [{k: (None if v != v else v) for k, v in row.items() if k in SERVING_FIGURES}
                    for row in serving.to_dict("records")],
    }


# ---------------------------------------------------------------- the writers

def as_sglang(records: list[Record]) -> list[str]:
    """SGLang's own format: `[YYYY-MM-DD HH:MM:SS TPn] message`, uvicorn's `INFO:     ` after the bracket."""
    out = []
    for r in records:
        if r.raw:
            out.append(r.message)
            continue
        tag = f" TP{r.rank}" if r.rank is not None else ""
        uvicorn = "INFO:     " if r.target.startswith(("server.", "on.", "httptools")) else ""
        out.append(f"[{r.at:%Y-%m-%d %H:%M:%S}{tag}] {uvicorn}{r.message}")
    return out


def as_docker_stamped(records: list[Record]) -> list[str]:
    """`docker logs -t` (and `kubectl logs --timestamps`): an RFC 3339 stamp and one space before each line,
    a traceback's indented frames too."""
    return [f"{r.at:%Y-%m-%dT%H:%M:%S.%f}123Z {line}" for r, line in zip(records, as_sglang(records), strict=True)]


def as_kubectl(records: list[Record], stamps: bool = False) -> list[str]:
    """`kubectl logs --prefix` of the server's pod: SGLang's own lines behind `[pod/NAME/CONTAINER] `, and with
    `--timestamps` behind kubelet's RFC 3339 stamp (nanoseconds) too."""
    return [f"[pod/sglang-0/sglang] {f'{r.at:%Y-%m-%dT%H:%M:%S.%f}123Z ' if stamps else ''}{line}"
            for r, line in zip(records, as_sglang(records), strict=True)]


def as_compose(records: list[Record], stamps: bool = False) -> list[str]:
    """`docker compose logs` on a terminal: the container's name padded to the longest one's (the router's here)
    and ` | `, coloured, and with `-t` the daemon's RFC 3339 stamp after it."""
    return [f"\x1b[36msglang-1        | \x1b[0m{f'{r.at:%Y-%m-%dT%H:%M:%S.%f}123Z ' if stamps else ''}{line}"
            for r, line in zip(records, as_sglang(records), strict=True)]


def as_srun_label(records: list[Record]) -> list[str]:
    """Slurm's `srun --label` of one task: its number and `: ` before each line."""
    return [f"0: {line}" for line in as_sglang(records)]


def as_dynamo(records: list[Record]) -> list[str]:
    """Dynamo's readable line; the rank tag is gone, raw stderr lines stay as they were."""
    return [r.message if r.raw else f"{r.at:%Y-%m-%dT%H:%M:%S.%f}Z {r.level:>5} {r.target}: {r.message}"
            for r in records]


def as_dynamo_jsonl(records: list[Record]) -> list[str]:
    """Dynamo's JSONL: a Python record through the `log` crate; a traceback logged whole is one record."""
    out: list[str] = []
    for r in records:
        if r.raw and out and r.message.startswith(" ") or r.raw and r.message.startswith("torch."):
            last = json.loads(out[-1])
            if isinstance(last, dict) and "message" in last:
                last["message"] += "\n" + r.message
                out[-1] = json.dumps(last, separators=(",", ":"))
                continue
        if r.raw:
            out.append(r.message)
            continue
        record = {"time": f"{r.at:%Y-%m-%dT%H:%M:%S.%f}Z", "level": r.level.replace("WARNING", "WARN"),
                  "target": "log", "message": r.message,
                  "log.file": f"/usr/local/lib/python3.12/dist-packages/sglang/srt/{r.target.split('.')[0]}.py",
                  "log.line": 100, "log.target": r.target, **(r.trace or {})}
        out.append(json.dumps(record, separators=(",", ":")))
    return out


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_per_rank_folder(folder: Path, records: list[Record]) -> Path:
    """The JSON events a launch writes with `--log-requests-target <folder>` and the scheduler status target:
    rank 0's file holds the requests, every rank's its status; an hour boundary rotates each file."""
    folder.mkdir(parents=True, exist_ok=True)
    events = [r for r in records if r.raw and r.message.startswith("{")]
    for rank in range(TP):
        mine = [r for r in events if rank == 0 or '"scheduler.status"' in r.message]
        mine += [r for r in _status_every_hour(records, rank)]
        mine.sort(key=lambda r: r.at)
        by_hour: dict[str, list[str]] = {}
        for r in mine:
            by_hour.setdefault(f"{r.at:%Y-%m-%d_%H}", []).append(r.message)
        hours = sorted(by_hour)
        for hour in hours[:-1]:
            write(folder / f"{HOST}_{rank}.log.{hour}", by_hour[hour])
        write(folder / f"{HOST}_{rank}.log", by_hour[hours[-1]])
    return folder


def _status_every_hour(records: list[Record], rank: int) -> list[Record]:
    """One status line just before the top of the hour, so the files rotate once."""
    first = min(r.at for r in records)
    at = first.replace(minute=59, second=59) - timedelta(hours=1)
    return [status_record(at, queued=[f"q{rank}"])]


def status_record(at: datetime, rank: int | None = None, queued: list[str] | None = None) -> Record:
    """A scheduler's `scheduler.status` event (`SchedulerStatusLogger.maybe_dump`), written by its rank."""
    return Record(at, json.dumps({"timestamp": at.isoformat(), "event": "scheduler.status", "running_rids": [],
                                  "queued_rids": queued or []}), rank, raw=True)
