"""How fast and how lean `logmine ingest` reads a large agent transcript (issue: 200 MB within 60 s, 500 MB).

    python bench/transcript_bench.py              # a 200 MB Claude Code session
    python bench/transcript_bench.py --mb 20 50   # smaller ones: time and memory should grow no faster

The session is generated (seeded, cached in --workdir): a user asks, the assistant answers with prose
that quotes figures and runs Bash tools over ssh whose outputs are SGLang journal excerpts (the lines
logmine matches against journals), unit-file heredocs and `systemctl cat` outputs. Each size is
ingested into a fresh database and measured as bench/ingest_bench.py measures a journal.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
from pathlib import Path

import duckdb
import ingest_bench  # beside this script, which Python puts first on sys.path
import synth_journal as sj

UNIT = sj.Unit("gpu-node", "sglang-qwen.service", "SGLang server")
PROSE = ("The KV pool holds {tokens:,} tokens ({kv:.2f} GB per GPU) and HiCache pins {host:.2f} GB of host "
         "memory per rank. Loading took {load} s; I will set --hicache-ratio {ratio} and restart the unit.")


def journal_excerpt(rng: random.Random, start: float, lines: int) -> str:
    """Journal lines as `journalctl -u` prints them: batch statistics and access lines."""
    out = []
    for i in range(lines):
        t = start + i * 0.5
        if i % 3 == 0:
            out.append(sj.uvicorn_line(UNIT, t, 4242, sj.msg_access("127.0.0.1", 40000 + i, "POST",
                                                                  "/v1/chat/completions")))
        else:
            out.append(sj.sglang_line(UNIT, t, 4242, f"Decode batch, #running-req: {rng.randint(1, 40)}, "
                                      f"#token: {rng.randint(1000, 90000)}, token usage: 0.{rng.randint(10, 99)}, "
                                      f"cuda graph: True, gen throughput (token/s): {rng.uniform(50, 900):.2f}, "
                                      f"#queue-req: 0", rank=0))
    return "\n".join(out)


def line(kind: str, n: int, t: float, message: dict, **extra: object) -> str:
    return json.dumps({"type": kind, "uuid": f"{kind[0]}{n}", "sessionId": "bench", "cwd": "/work",
                       "version": "2.1.39", "timestamp": f"2026-03-12T{int(t) // 3600 % 24:02d}:"
                       f"{int(t) // 60 % 60:02d}:{int(t) % 60:02d}Z", "message": message, **extra})


def write_session(path: Path, megabytes: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    start = sj.local_epoch(2026, 3, 12, 10)
    target, n = megabytes * 1_000_000, 0
    with path.open("w") as out:
        while out.tell() < target:
            t = start + n * 30
            text = PROSE.format(tokens=rng.randint(100_000, 400_000), kv=rng.uniform(5, 40), host=rng.uniform(20, 90),
                                load=rng.randint(60, 700), ratio=rng.choice([2.0, 3.0, 4.0]))
            command = "ssh root@gpu-node 'journalctl -u sglang-qwen -n 200 --no-pager'"
            out.write(line("user", n, t, {"role": "user", "content": "How is the server doing?"}) + "\n")
            tool = {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": command}}
            out.write(line("assistant", n, t + 1, {"id": f"msg_{n}", "role": "assistant", "model": "claude-x",
                                                   "content": [{"type": "text", "text": text}, tool],
                                                   "usage": {"input_tokens": 10, "output_tokens": 90}}) + "\n")
            result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": journal_excerpt(rng, t, 200)}
            out.write(line("user", n + 1, t + 5, {"role": "user", "content": [result]}) + "\n")
            n += 2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, nargs="+", default=[200])
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "logmine-bench")
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    results, embedded, cpu = [], [], []
    for megabytes in args.mb:
        session = args.workdir / f"claude-session-{megabytes}mb.jsonl"
        if not session.exists():
            write_session(session, megabytes)
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "t.duckdb"
            # This interpreter's logmine: a `logmine` on PATH may be another checkout's.
            argv_ = [sys.executable, "-m", "logmine", "ingest", str(session), "--db", str(db), "--json"]
            lines = sum(1 for _ in session.open())
            before = cpu_seconds()
            results.append(ingest_bench.measure("logmine ingest (transcript)", argv_, lines, session.stat().st_size))
            cpu.append(cpu_seconds() - before)
            with duckdb.connect(str(db), read_only=True) as con:
                embedded.append(con.execute("SELECT count(*) FROM embedded_lines").fetchone()[0])
    ingest_bench.print_table(results)
    # On a shared machine the wall time follows the load; the CPU time does not.
    print("\nlines are JSONL records; the journal lines in their tool outputs are parsed too:")
    for m, count, seconds in zip(results, embedded, cpu, strict=True):
        print(f"{m.megabytes:>7.1f} MB: {count:>11,} embedded journal lines stored, {count / m.seconds:>9,.0f}/s; "
              f"CPU {seconds:.1f} s")
    return 0


def cpu_seconds() -> float:
    """User and system time of the children waited for so far (the measured command and its own)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    raise SystemExit(main())
