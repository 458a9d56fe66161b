"""The journals of the claim-checker evaluation's synthetic scenarios (deterministic).

Each scenario is a systemd unit running SGLang v0.5.9 on a host of its own, its lines built by
`bench/synth_journal.py` (the line layouts live there) and by the few failure lines written here
(a CUDA OOM during graph capture). `python bench/data/claims_eval/make_sessions.py` writes every
scenario's `journal.txt` and `session.jsonl` side by side; `--summary` prints what each journal
measured, the page a reader annotating the sessions has open.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, replace
from pathlib import Path

from logmine.scripts import load_script

REPO = Path(__file__).resolve().parents[3]
sj = load_script(REPO / "bench" / "synth_journal.py")


@dataclass
class Scenario:
    name: str
    unit: object
    lines: list[tuple[float, str]]
    runs: list[dict]  # what a reader of the journal sees per run (for --summary)


def _start(unit, pid: int, launch, t0: float, rng: random.Random, host_free_gb: float | None = None):
    lines = sj.start_lines(unit, t0)
    res = sj.startup_lines(unit, pid, launch, t0, rng, host_free_gb=host_free_gb)
    return lines + res.lines, res


def _summary(pid: int, t0: float, launch, res) -> dict:
    p = res.plan
    return {"pid": pid, "start": sj.journal_stamp(t0), "ready": res.ready_at and sj.journal_stamp(res.ready_at),
            "start_to_ready_s": res.ready_at and round(res.ready_at - t0, 1), "tp": launch.tp,
            "load_s": launch.load_seconds, "capture_s": launch.capture_seconds, "avail_before": p.before_load,
            "weights": p.weights_gib, "tokens": p.kv_tokens, "k": p.k_gib, "host_gb": p.host_gb_per_rank,
            "available_gpu_mem": p.available_gpu_mem, "mem_fraction": launch.mem_fraction_static}


def qwen_hicache_loop() -> Scenario:
    """4 x H100: Qwen3-235B-A22B-FP8; HiCache sized far above the host's free memory crash-loops
    (Restart=on-failure), then a smaller host pool starts. The host has 503 GiB of RAM (never logged)."""
    rng = random.Random(2911)
    unit = sj.Unit("h100-a7", "sglang-qwen235.service", "SGLang Qwen3-235B", ident="python3")
    base = sj.Launch("Qwen/Qwen3-235B-A22B-FP8", "Qwen3MoeForCausalLM", tp=4, gpu_free_gib=78.58,
                     weights_gib=57.41, kv_cell_bytes=48128, mem_fraction_static=0.88, context_len=40960,
                     served_model_name="qwen3-235b", load_seconds=652.0, capture_seconds=41.0, capture_gib=1.32)
    t = sj.local_epoch(2026, 11, 24, 8, 2, 10)
    lines, runs = [], []
    l1, r1 = _start(unit, 40211, base, t, rng)
    lines += l1
    runs.append(_summary(40211, t, base, r1))
    stop = r1.ready_at + 3600 * 1.5
    lines += sj.stop_lines(unit, 40211, stop, cpu_seconds=8123.4, peak_gib=71.2)
    t = stop + 1.7
    pid = 51877
    for counter in range(1, 4):
        big = replace(base, hicache_ratio=22.0, load_seconds=648.0 + counter)
        l2, r2 = _start(unit, pid, big, t, rng, host_free_gb=251.30)
        lines += l2
        runs.append({**_summary(pid, t, big, r2), "ready": None, "crash_at": sj.journal_stamp(r2.end_at),
                     "host_free": 251.30, "start_to_crash_s": round(r2.end_at - t, 1)})
        exit_at = r2.end_at + 0.9
        lines += sj.failure_lines(unit, exit_at, "exited", "1/FAILURE", "exit-code", cpu_seconds=1422.7,
                                  peak_gib=66.0, restart_sec=30, counter=counter)
        t = exit_at + 30
        pid += 1331
    ok = replace(base, hicache_ratio=3.808, load_seconds=655.0)
    l3, r3 = _start(unit, pid, ok, t, rng)
    lines += l3
    runs.append(_summary(pid, t, ok, r3))
    return Scenario("qwen-hicache-loop", unit, lines, runs)


def llama_oom_start() -> Scenario:
    """2 x A100 80GB: Llama-3.3-70B at mem-fraction 0.95 runs out of memory capturing CUDA graphs;
    at 0.88 it starts."""
    rng = random.Random(2912)
    unit = sj.Unit("a100-lab2", "sglang-llama.service", "SGLang Llama 3.3 70B", ident="python")
    base = sj.Launch("meta-llama/Llama-3.3-70B-Instruct", "LlamaForCausalLM", tp=2, gpu_free_gib=78.96,
                     weights_gib=65.72, kv_cell_bytes=163840, mem_fraction_static=0.95, context_len=131072,
                     served_model_name="llama-70b", load_seconds=96.0, capture_seconds=27.0, capture_gib=1.81)
    t = sj.local_epoch(2026, 11, 25, 14, 10, 0)
    pid = 7731
    lines, runs = sj.start_lines(unit, t), []
    res = sj.startup_lines(unit, pid, base, t, rng)
    # cut the start at the capture: every line up to "Capture cuda graph bs", then the OOM
    kept = []
    for tt, line in res.lines:
        kept.append((tt, line))
        if "Capture cuda graph bs" in line:
            break
    tc = kept[-1][0] + 6.2
    oom = ("Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.76 GiB. GPU 0 has a total "
           "capacity of 79.15 GiB of which 1.07 GiB is free. Including non-PyTorch memory, this process has "
           "78.07 GiB memory in use. Of the allocated memory 75.20 GiB is allocated by PyTorch, and 1.39 GiB is "
           "reserved by PyTorch but unallocated.")
    for rank in range(2):
        kept.append((tc + 0.05 * rank, sj.sglang_line(unit, tc + 0.05 * rank, pid, sj.MSG_EXCEPTION, rank)))
        for body in sj.traceback_lines(
                [("srt/managers/scheduler.py", 3043, "run_scheduler_process", "scheduler = Scheduler("),
                 ("srt/model_executor/model_runner.py", 412, "__init__", "self.init_device_graphs()"),
                 ("srt/model_executor/cuda_graph_runner.py", 391, "__init__",
                  "raise Exception(")],
                "Exception: " + oom + " Possible solutions:"):
            kept.append((tc + 0.05 * rank, sj.process_line(unit, tc + 0.05 * rank, pid, body)))
    kept.append((tc + 0.4, sj.sglang_line(unit, tc + 0.4, pid, sj.MSG_SIGQUIT_LAUNCH)))
    lines += kept
    runs.append({**_summary(pid, t, base, res), "ready": None, "oom_at": sj.journal_stamp(tc),
                 "start_to_oom_s": round(tc - t, 1), "oom": oom})
    exit_at = tc + 1.1
    lines += sj.failure_lines(unit, exit_at, "exited", "1/FAILURE", "exit-code", cpu_seconds=301.2,
                              peak_gib=22.4, restart_sec=10, counter=1)
    # the agent stops the loop, edits the unit, starts it again
    t2 = exit_at + 10 + 95
    fixed = replace(base, mem_fraction_static=0.88, load_seconds=93.5)
    l2, r2 = _start(unit, 9120, fixed, t2, rng)
    lines += l2
    runs.append(_summary(9120, t2, fixed, r2))
    return Scenario("llama-oom-start", unit, lines, runs)


def deepseek_mla() -> Scenario:
    """8 x H200: DeepSeek-V3 (MLA, FP8), two starts (mem-fraction 0.85 then 0.90), HiCache on the second."""
    rng = random.Random(2913)
    unit = sj.Unit("h200-node3", "sglang-dsv3.service", "SGLang DeepSeek-V3", ident="python3")
    base = sj.Launch("deepseek-ai/DeepSeek-V3", "DeepseekV3ForCausalLM", tp=8, gpu_free_gib=139.28,
                     weights_gib=83.17, kv_cell_bytes=70272, mem_fraction_static=0.85, context_len=163840,
                     served_model_name="deepseek-v3", load_seconds=548.0, capture_seconds=63.0, capture_gib=2.11)
    t = sj.local_epoch(2026, 11, 26, 9, 30, 5)
    lines, runs = [], []
    l1, r1 = _start(unit, 3301, base, t, rng)
    lines += l1
    runs.append(_summary(3301, t, base, r1))
    stop = r1.ready_at + 2400
    lines += sj.stop_lines(unit, 3301, stop, cpu_seconds=10411.0, peak_gib=88.3)
    t2 = stop + 1.7
    second = replace(base, mem_fraction_static=0.90, hicache_ratio=2.0, load_seconds=541.0)
    l2, r2 = _start(unit, 4482, second, t2, rng)
    lines += l2
    runs.append(_summary(4482, t2, second, r2))
    return Scenario("deepseek-mla", unit, lines, runs)


def multinode() -> Scenario:
    """Node 0 of a 2-node x 8 x H100 launch (TP16, nnodes=2) of Llama-3.1-405B-FP8: its journal shows
    ranks TP0-TP7 only."""
    rng = random.Random(2914)
    unit = sj.Unit("h100-n0", "sglang-405b.service", "SGLang Llama 405B node 0", ident="python3")
    extra = {"tp_size": 16, "nnodes": 2, "node_rank": 0, "dist_init_addr": "10.40.1.10:5000"}
    base = sj.Launch("meta-llama/Llama-3.1-405B-Instruct-FP8", "LlamaForCausalLM", tp=8, gpu_free_gib=78.68,
                     weights_gib=25.34, kv_cell_bytes=64512, mem_fraction_static=0.85, context_len=131072,
                     served_model_name="llama-405b", load_seconds=431.0, capture_seconds=52.0, capture_gib=1.47,
                     extra_args=extra)
    t = sj.local_epoch(2026, 11, 27, 16, 0, 0)
    lines, runs = [], []
    l1, r1 = _start(unit, 60110, base, t, rng)
    lines += l1
    runs.append(_summary(60110, t, base, r1))
    return Scenario("multinode", unit, lines, runs)


def qwen72b_runs() -> Scenario:
    """4 x L40S 48GB: Qwen2.5-72B-Instruct, three starts while the agent tunes mem-fraction-static."""
    rng = random.Random(2915)
    unit = sj.Unit("l40s-box", "sglang-72b.service", "SGLang Qwen2.5-72B", ident="python")
    base = sj.Launch("Qwen/Qwen2.5-72B-Instruct", "Qwen2ForCausalLM", tp=4, gpu_free_gib=43.97,
                     weights_gib=33.92, kv_cell_bytes=81920, mem_fraction_static=0.85, context_len=32768,
                     served_model_name="qwen-72b", load_seconds=212.0, capture_seconds=31.0, capture_gib=0.74)
    t = sj.local_epoch(2026, 11, 28, 10, 0, 0)
    lines, runs = [], []
    pid = 2210
    for fraction, load in ((0.85, 212.0), (0.90, 205.0), (0.92, 209.0)):
        launch = replace(base, mem_fraction_static=fraction, load_seconds=load)
        lr, rr = _start(unit, pid, launch, t, rng)
        lines += lr
        runs.append(_summary(pid, t, launch, rr))
        stop = rr.ready_at + 900
        lines += sj.stop_lines(unit, pid, stop, cpu_seconds=1210.0, peak_gib=30.1)
        t = stop + 1.7
        pid += 517
    lines = lines[: -len(sj.stop_lines(unit, pid, 0, 0, 0))]  # the last run keeps running
    return Scenario("qwen72b-runs", unit, lines, runs)


SCENARIOS = (qwen_hicache_loop, llama_oom_start, deepseek_mla, multinode, qwen72b_runs)


def journal_text(s: Scenario) -> str:
    s.lines.sort(key=lambda e: e[0])
    boot = hashlib.md5(s.name.encode()).hexdigest()  # a boot id of its own per scenario, the same every time
    return "\n".join([f"-- Boot {boot} --"] + [x for _, x in s.lines]) + "\n"
