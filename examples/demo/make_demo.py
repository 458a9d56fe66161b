"""Build the bundled demo: examples/demo/journal.txt and examples/demo/session.opencode.json.

    python examples/demo/make_demo.py            # rewrite both files (deterministic)
    python examples/demo/make_demo.py --summary  # print the per-run figures quoted in README.md

Story (host gpu-box, unit sglang-qwen.service, Qwen3-32B on TP2 = 2 x H100 80GB, SGLang v0.5.9,
2026-03-12, host clock UTC+1): run 1 serves without HiCache; an opencode agent rewrites the unit
with `--enable-hierarchical-cache --hicache-ratio 3.0` and restarts it; run 2 dies in scheduler
init on both ranks (host pool 120.34 GB > 88.10 GB free); the agent lowers the ratio to 2.0 and
runs daemon-reload while systemd waits out RestartSec=120, so the scheduled restart (run 3) picks
the new flags up, pins 80.23 GB per rank and serves ~10 minutes of traffic.

Every journal line is built by bench/synth_journal.py, so the demo and the
benchmark share one implementation of each line layout.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from logmine.scripts import load_script

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sj = load_script(REPO / "bench" / "synth_journal.py")

SEED = 20260312
UTC_OFFSET_S = 3600  # gpu-box runs on CET (UTC+1); opencode stores epoch ms (UTC)
UNIT = sj.Unit("gpu-box", "sglang-qwen.service", "SGLang Qwen3-32B", ident="python")
BASE = sj.Launch(
    "Qwen/Qwen3-32B", "Qwen3ForCausalLM", tp=2, gpu_free_gib=78.62, weights_gib=31.04,
    kv_cell_bytes=131072,  # 64 layers x 4 KV heads per rank x 128 dims x (K+V) x 2 bytes
    mem_fraction_static=0.87, context_len=40960, served_model_name="qwen3-32b",
    load_seconds=38.5, capture_seconds=17.8, capture_gib=0.96,
    extra_args={"reasoning_parser": "qwen3"},
)
RESTART_SEC = 120
HOST_FREE_GB = 88.10  # psutil available - 10 GiB, as the HiCache check reports it


def at(hms: str) -> float:
    """Host-local time on the demo day."""
    h, m, s = (int(x) for x in hms.split(":"))
    return sj.local_epoch(2026, 3, 12, h, m, s)


def utc_ms(t_local: float) -> int:
    return int(round((t_local - UTC_OFFSET_S) * 1000))


# --------------------------------------------------------------------------------------------
# Journal
# --------------------------------------------------------------------------------------------


@dataclass
class RunInfo:
    ordinal: int
    pid: int
    started: float
    ready: float | None
    ended: float | None
    end_reason: str
    launch: object
    plan: object


@dataclass
class Journal:
    lines: list[tuple[float, str]]
    runs: list[RunInfo]
    crash_exit: float  # run 2's "Main process exited"
    restart_at: float  # systemd's scheduled restart (start of run 3)

    def tail(self, cutoff: float, n: int) -> list[str]:
        """What `journalctl -u sglang-qwen -n N --no-pager` prints at `cutoff`."""
        return [line for t, line in self.lines if t <= cutoff][-n:]

    def grep(self, cutoff: float, pattern: str) -> list[str]:
        rx = re.compile(pattern)
        return [line for t, line in self.lines if t <= cutoff and rx.search(line)]


def build_journal() -> Journal:
    rng = random.Random(SEED)
    lines: list[tuple[float, str]] = []

    # run 1: baseline, no HiCache; the operator's agent restarts it at 10:33:41
    r1 = replace(BASE, random_seed=rng.randint(1, 2**30))
    t1, pid1 = at("10:05:20"), 18342
    lines += sj.start_lines(UNIT, t1)
    res1 = sj.startup_lines(UNIT, pid1, r1, t1, rng)
    lines += res1.lines
    stop1 = at("10:33:41")
    traffic = sj.Traffic(UNIT, pid1, r1, res1.plan, rng, res1.ready_at, mean_gap=38.0, health_every=60.0,
                         clients=("10.20.0.31", "10.20.0.32"), health_client="10.20.0.2")
    lines += list(traffic.lines(until=stop1 - 2))
    lines += sj.stop_lines(UNIT, pid1, stop1, cpu_seconds=3417.262, peak_gib=21.7)
    end1 = stop1 + 1.6

    # run 2: --enable-hierarchical-cache --hicache-ratio 3.0 -> ValueError on both ranks
    t2, pid2 = stop1 + 1.7, 24817
    r2 = replace(BASE, random_seed=rng.randint(1, 2**30), hicache_ratio=3.0)
    lines += sj.start_lines(UNIT, t2)
    res2 = sj.startup_lines(UNIT, pid2, r2, t2, rng, host_free_gb=HOST_FREE_GB)
    lines += res2.lines
    crash_exit = res2.end_at + 0.8
    restart_at = crash_exit + RESTART_SEC
    lines += sj.failure_lines(UNIT, crash_exit, "exited", "1/FAILURE", "exit-code", cpu_seconds=141.538,
                              peak_gib=19.3, restart_sec=RESTART_SEC, counter=1)

    # run 3: the scheduled restart runs the unit as rewritten (ratio 2.0) before it fired
    t3, pid3 = restart_at, 25133
    r3 = replace(BASE, random_seed=rng.randint(1, 2**30), hicache_ratio=2.0)
    lines += sj.start_lines(UNIT, t3)
    res3 = sj.startup_lines(UNIT, pid3, r3, t3, rng)
    lines += res3.lines
    traffic3 = sj.Traffic(UNIT, pid3, r3, res3.plan, rng, res3.ready_at, mean_gap=30.0, health_every=60.0,
                          clients=("10.20.0.31", "10.20.0.32"), health_client="10.20.0.2")
    lines += list(traffic3.lines(until=res3.ready_at + 600))

    lines.sort(key=lambda e: e[0])  # stable: equal times keep emission order
    runs = [
        RunInfo(1, pid1, t1, res1.ready_at, end1, "restarted", r1, res1.plan),
        RunInfo(2, pid2, t2, None, crash_exit, "crashed", r2, res2.plan),
        RunInfo(3, pid3, t3, res3.ready_at, None, "running", r3, res3.plan),
    ]
    return Journal(lines, runs, crash_exit, restart_at)


def journal_text(j: Journal) -> str:
    header = sj.boot_header("5f1c0e9a2b7d4c81a6e3f0d29b8c7a14")
    return "\n".join([header] + [line for _, line in j.lines]) + "\n"


# --------------------------------------------------------------------------------------------
# opencode export (v1.1.x objects)
# --------------------------------------------------------------------------------------------

_B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


class Ids:
    """opencode ids: prefix_ + 12 hex of (ms*4096 + counter) mod 2^48 + 14 base62 characters."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.counter = 0

    def make(self, prefix: str, ms: int, descending: bool = False) -> str:
        self.counter += 1
        value = (ms * 4096 + self.counter) % (1 << 48)
        if descending:  # sessions sort newest-first
            value = ~value & ((1 << 48) - 1)
        tail = "".join(self.rng.choice(_B62) for _ in range(14))
        return f"{prefix}_{value:012x}{tail}"


UNIT_TEMPLATE = """[Unit]
Description=SGLang Qwen3-32B
After=network-online.target nvidia-persistenced.service
Wants=network-online.target

[Service]
Type=simple
User=root
Environment=HF_HOME=/data/hf
Environment=PYTHONUNBUFFERED=1
ExecStart=/opt/venv/bin/python -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp 2 {hicache}\
--served-model-name qwen3-32b --mem-fraction-static 0.87 --context-length 40960 --reasoning-parser qwen3 \
--host 0.0.0.0 --port 30000
Restart=on-failure
RestartSec=120
TimeoutStartSec=600
LimitMEMLOCK=infinity

[Install]
WantedBy=multi-user.target
"""


def unit_file(ratio: float | None) -> str:
    flags = "" if ratio is None else f"--enable-hierarchical-cache --hicache-ratio {ratio} "
    return UNIT_TEMPLATE.format(hicache=flags)


def tee_command(ratio: float, then: str) -> str:
    body = unit_file(ratio)
    return (f"ssh root@gpu-box 'sudo tee /etc/systemd/system/sglang-qwen.service > /dev/null <<EOF\n"
            f"{body}EOF\n{then}'")


class Session:
    """Accumulates messages of one opencode session in export shape."""

    MODEL = {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}
    CWD = "/home/ana/src/gpu-infra"
    SNAPSHOT = "9e2d41c07b5a38f6e1d04a7c2b9f35e8d60a1c47"

    def __init__(self, rng: random.Random, created_ms: int) -> None:
        self.rng = rng
        self.ids = Ids(rng)
        self.id = self.ids.make("ses", created_ms, descending=True)
        self.created_ms = created_ms
        self.messages: list[dict] = []
        self.last_user: str | None = None

    def _part(self, msg_id: str, ms: int, body: dict) -> dict:
        return {"id": self.ids.make("prt", ms), "sessionID": self.id, "messageID": msg_id, **body}

    def user(self, t: float, text: str, title: str) -> None:
        ms = utc_ms(t)
        msg_id = self.ids.make("msg", ms)
        info = {"id": msg_id, "sessionID": self.id, "role": "user", "time": {"created": ms},
                "summary": {"title": title, "diffs": []}, "agent": "build", "model": dict(self.MODEL)}
        parts = [self._part(msg_id, ms + 1, {"type": "text", "text": text})]
        self.messages.append({"info": info, "parts": parts})
        self.last_user = msg_id

    def assistant(self, t_start: float, t_end: float, steps: list[dict], tokens: dict, finish: str) -> str:
        """One assistant message = one LLM step: optional text, then tool calls, then step-finish."""
        ms0, ms1 = utc_ms(t_start), utc_ms(t_end)
        msg_id = self.ids.make("msg", ms0)
        cost = round((tokens["input"] * 3 + tokens["output"] * 15 + tokens["cache"]["read"] * 0.3
                      + tokens["cache"]["write"] * 3.75) / 1e6, 6)
        info = {"id": msg_id, "sessionID": self.id, "role": "assistant",
                "time": {"created": ms0, "completed": ms1}, "parentID": self.last_user,
                "modelID": self.MODEL["modelID"], "providerID": self.MODEL["providerID"], "mode": "build",
                "agent": "build", "path": {"cwd": self.CWD, "root": self.CWD}, "cost": cost,
                "tokens": tokens, "finish": finish}
        parts = [self._part(msg_id, ms0 + 400, {"type": "step-start", "snapshot": self.SNAPSHOT})]
        for step in steps:
            if step["kind"] == "text":
                ts = utc_ms(step["t"])
                parts.append(self._part(msg_id, ts, {"type": "text", "text": step["text"],
                                                     "time": {"start": ts, "end": ts}}))
            else:
                ts, te = utc_ms(step["t"]), utc_ms(step["t_end"])
                output = step["output"]
                state = {"status": "completed",
                         "input": {"command": step["command"], "description": step["description"]},
                         "output": output, "title": step["description"],
                         "metadata": {"output": output, "exit": 0, "description": step["description"],
                                      "truncated": False},
                         "time": {"start": ts, "end": te}}
                call = "toolu_01" + "".join(self.rng.choice(_B62) for _ in range(22))
                parts.append(self._part(msg_id, ts - 300, {"type": "tool", "callID": call, "tool": "bash",
                                                           "state": state}))
        parts.append(self._part(msg_id, ms1 - 20, {"type": "step-finish", "reason": finish,
                                                   "snapshot": self.SNAPSHOT, "cost": cost,
                                                   "tokens": tokens}))
        self.messages.append({"info": info, "parts": parts})
        return msg_id

    def export(self, title: str) -> dict:
        updated = max(m["info"]["time"].get("completed", m["info"]["time"]["created"]) for m in self.messages)
        info = {"id": self.id, "slug": "steady-lantern", "version": "1.1.53",
                "projectID": "3b7f0c2e91d84a56c0e7f1b2d3a4958c6e7f8a90", "directory": self.CWD,
                "title": title, "time": {"created": self.created_ms, "updated": updated},
                "summary": {"additions": 0, "deletions": 0, "files": 0}}
        return {"info": info, "messages": self.messages}


def _tok(inp: int, out: int, read: int, write: int = 0, reasoning: int = 0) -> dict:
    return {"input": inp, "output": out, "reasoning": reasoning, "cache": {"read": read, "write": write}}


def build_session(j: Journal) -> tuple[dict, dict[str, str]]:
    """The export plus the ids of the two messages that rewrote the unit (enable, lower)."""
    rng = random.Random(SEED + 1)
    r1, r2, r3 = j.runs
    plan1, plan2, plan3 = r1.plan, r2.plan, r3.plan
    s = Session(rng, utc_ms(at("10:30:52")))

    s.user(at("10:31:05"),
           "the qwen box keeps re-prefilling the same long agent prompts, prefix cache gets evicted all "
           "the time. enable HiCache on sglang-qwen (gpu-box) with --hicache-ratio 3.0, the host has "
           "plenty of RAM",
           "Enable HiCache on sglang-qwen")

    unit_now = "# /etc/systemd/system/sglang-qwen.service\n" + unit_file(None)
    probe = j.grep(at("10:31:20"), r"Load weight end|KV Cache is allocated|max_total_num_tokens")[-5:]
    s.assistant(at("10:31:07"), at("10:31:24"), [
        {"kind": "text", "t": at("10:31:12"),
         "text": "Checking the current unit and what run 1 logged for the KV pool first."},
        {"kind": "bash", "t": at("10:31:14"), "t_end": at("10:31:15"),
         "command": "ssh root@gpu-box 'systemctl cat sglang-qwen.service'",
         "description": "Show the current sglang-qwen unit", "output": unit_now},
        {"kind": "bash", "t": at("10:31:19"), "t_end": at("10:31:20"),
         "command": "ssh root@gpu-box 'journalctl -u sglang-qwen --no-pager | grep -E "
                    "\"Load weight end|KV Cache is allocated|max_total_num_tokens\" | tail -n 5'",
         "description": "Show run 1 weight and KV pool lines", "output": "\n".join(probe) + "\n"},
    ], _tok(2381, 212, 14208, 1830), "tool-calls")

    kv_gb = plan1.kv_tokens * BASE.kv_cell_bytes / 1e9
    msg_enable = s.assistant(at("10:31:25"), at("10:33:44"), [
        {"kind": "text", "t": at("10:33:31"),
         "text": (f"Each rank holds a {plan1.kv_tokens:,}-token KV pool (K {plan1.k_gib:.2f} + V "
                  f"{plan1.v_gib:.2f} GiB = {kv_gb:.2f} GB). With `--hicache-ratio 3.0` every rank "
                  f"pins 3x that in host RAM, about {3 * kv_gb:.1f} GB per GPU. Writing the unit with "
                  "`--enable-hierarchical-cache --hicache-ratio 3.0` and restarting.")},
        {"kind": "bash", "t": at("10:33:38"), "t_end": at("10:33:44"),
         "command": tee_command(3.0, "systemctl daemon-reload && systemctl restart sglang-qwen"),
         "description": "Enable HiCache (ratio 3.0) in sglang-qwen and restart", "output": ""},
    ], _tok(611, 903, 18874, 0, reasoning=240), "tool-calls")

    look1 = at("10:35:33")
    s.assistant(at("10:33:46"), look1 + 1, [
        {"kind": "bash", "t": at("10:33:52"), "t_end": look1,
         "command": "sleep 100 && ssh root@gpu-box 'journalctl -u sglang-qwen -n 40 --no-pager'",
         "description": "Wait for startup and show the last 40 journal lines",
         "output": "\n".join(j.tail(look1, 40)) + "\n"},
    ], _tok(402, 88, 20790), "tool-calls")

    req3, req2 = plan2.host_gb_per_rank, plan3.host_gb_per_rank
    s.assistant(look1 + 2, at("10:35:51"), [
        {"kind": "text", "t": at("10:35:49"),
         "text": (f"The restart failed. Both ranks raised in scheduler init: `ValueError: Not enough host "
                  f"memory available. Requesting {req3:.2f} GB but only have {HOST_FREE_GB:.2f} GB free.` "
                  f"SGLang checks each rank's pool ({plan2.kv_tokens:,} tokens x 3.0 = {req3:.2f} GB) "
                  f"against free RAM minus a 10 GiB reserve. systemd will retry in {RESTART_SEC} s "
                  f"(RestartSec) with the same flags and fail again. `--hicache-ratio 2.0` asks for "
                  f"{req2:.2f} GB per rank, which passes the check. "
                  "Shall I switch to 2.0?")},
    ], _tok(3544, 301, 21632), "stop")

    s.user(at("10:36:02"), "yes go with 2.0, before it retries", "Lower HiCache ratio to 2.0")

    msg_lower = s.assistant(at("10:36:04"), at("10:36:31"), [
        {"kind": "text", "t": at("10:36:21"),
         "text": ("Rewriting the unit with `--hicache-ratio 2.0` and reloading systemd. The unit is "
                  "waiting in auto-restart, so the scheduled restart picks up the new ExecStart; no manual "
                  "restart needed.")},
        {"kind": "bash", "t": at("10:36:24"), "t_end": at("10:36:27"),
         "command": tee_command(2.0, "systemctl daemon-reload && "
                                     "systemctl status sglang-qwen --no-pager -n 0"),
         "description": "Set HiCache ratio 2.0 in sglang-qwen and reload systemd",
         "output": ("● sglang-qwen.service - SGLang Qwen3-32B\n"
                    "     Loaded: loaded (/etc/systemd/system/sglang-qwen.service; enabled; "
                    "preset: enabled)\n"
                    "     Active: activating (auto-restart) (Result: exit-code) since Thu 2026-03-12 "
                    f"{sj.journal_stamp(j.crash_exit)[7:]} CET; 1min 25s ago\n"
                    f"    Process: {r2.pid} ExecStart=/opt/venv/bin/python -m sglang.launch_server "
                    "--model-path Qwen/Qwen3-32B --tp 2 --enable-hierarchical-cache --hicache-ratio 3.0 "
                    "--served-model-name qwen3-32b --mem-fraction-static 0.87 --context-length 40960 "
                    "--reasoning-parser qwen3 --host 0.0.0.0 --port 30000 (code=exited, status=1/FAILURE)\n"
                    f"   Main PID: {r2.pid} (code=exited, status=1/FAILURE)\n"
                    "        CPU: 2min 21.538s\n")},
    ], _tok(952, 884, 25410), "tool-calls")

    assert r3.ready is not None
    look2 = r3.ready + 14
    s.assistant(at("10:36:33"), look2 + 1, [
        {"kind": "bash", "t": at("10:36:36"), "t_end": look2,
         "command": "sleep 150 && ssh root@gpu-box 'journalctl -u sglang-qwen -n 40 --no-pager'",
         "description": "Wait for the scheduled restart and show the last 40 journal lines",
         "output": "\n".join(j.tail(look2, 40)) + "\n"},
    ], _tok(380, 90, 27215), "tool-calls")

    s.assistant(look2 + 2, look2 + 16, [
        {"kind": "text", "t": look2 + 15,
         "text": (f"Up again: systemd's scheduled restart (counter 1) at {sj.journal_stamp(r3.started)[7:]} "
                  f"ran the new unit; both ranks logged `Allocating {req2:.2f} GB host memory for "
                  f"hierarchical KV cache.` and the server was ready at {sj.journal_stamp(r3.ready)[7:]}. "
                  "The GPU KV pool is unchanged "
                  f"({plan3.kv_tokens:,} tokens per rank); HiCache adds {req2:.2f} GB of pinned host RAM per "
                  "rank behind it.")},
    ], _tok(4102, 196, 27650), "stop")

    return s.export("Enable HiCache on gpu-box sglang-qwen"), {"enable": msg_enable, "lower": msg_lower}


# --------------------------------------------------------------------------------------------
# Summary (figures quoted in README.md)
# --------------------------------------------------------------------------------------------


def summarize(j: Journal) -> list[dict]:
    out = []
    for run in j.runs:
        tag = f"[{run.pid}]: "
        own = [line for _, line in j.lines if tag in line]
        plan = run.plan
        host = plan.host_gb_per_rank if any("Allocating" in x for x in own) else None
        out.append({
            "run": run.ordinal, "pid": run.pid,
            "started": sj.sglang_stamp(run.started), "ready": run.ready and sj.sglang_stamp(run.ready),
            "ended": run.ended and sj.sglang_stamp(run.ended), "end_reason": run.end_reason,
            "weights_gib_per_rank": plan.weights_gib, "kv_tokens": plan.kv_tokens,
            "kv_gib_per_rank": round(plan.k_gib + plan.v_gib, 2),
            "available_gpu_mem": plan.available_gpu_mem,
            "host_cache_gb_per_rank": host, "host_cache_gb_total": host and round(host * run.launch.tp, 2),
            "prefill_batches": sum("Prefill batch" in x for x in own),
            "decode_batches": sum("Decode batch" in x for x in own),
            "chat_requests": sum("POST /v1/chat/completions" in x for x in own),
            "health_polls": sum("GET /health" in x for x in own),
            "access_lines": sum('HTTP/1.1"' in x for x in own),
            "retractions": sum("TP0] KV cache pool is full" in x for x in own),
            "random_seed": run.launch.random_seed,
        })
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summary", action="store_true", help="print per-run figures instead of writing files")
    args = ap.parse_args(argv)
    j = build_journal()
    session, links = build_session(j)
    if args.summary:
        for row in summarize(j):
            print(json.dumps(row))
        print(json.dumps({"links": links, "journal_lines": len(j.lines) + 1,
                          "restart_scheduled": sj.sglang_stamp(j.restart_at)}))
        return 0
    (HERE / "journal.txt").write_text(journal_text(j), encoding="utf-8")
    (HERE / "session.opencode.json").write_text(json.dumps(session, indent=2, ensure_ascii=False) + "\n",
                                                encoding="utf-8")
    print(f"wrote {HERE / 'journal.txt'} ({len(j.lines) + 1} lines) and {HERE / 'session.opencode.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
