"""How soon `logmine follow` makes an appended line queryable, and what it costs per line against `ingest`.

    python bench/follow_bench.py [--rates 1000,20000] [--seconds 8] [--poll 0.05]

For each rate, a synthetic SGLang journal (bench/synth_journal.py) is appended to a log file at that many
lines per second, in slices every 20 ms, for a bounded time, while `logmine follow FILE` runs; a reader
process polls the database read-only (`SELECT max(line_no) FROM lines`) every `--poll` seconds, as a user
re-running a query would. A slice's delay is from its write to the first poll that sees its last line,
so it includes up to one poll interval (and the reader's own open). Printed: the median and the 99th
percentile of the delay, then follow's CPU time per line (user + system, its start-up included) beside a
one-shot `logmine ingest --jobs 1` of the same lines.

Then the derivation a batch pays: on a database of the bundled example's journal ingested as 20 sources,
one of them repeated 40 times over (120 runs), the full `runs.rebuild_runs` of an ingest beside the
`runs.update_open_runs` of a follow's batch (the open run of the grown source), best of 5.
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth_journal import write_journal  # noqa: E402

LOGMINE = [sys.executable, "-m", "logmine"]
SLICE_S = 0.02
POLLER = """
import sys, time, duckdb
from logmine.store import connect
db, poll = sys.argv[1], float(sys.argv[2])
while True:
    try:
        con = connect(db, read_only=True)
        try:
            seen = con.execute("SELECT coalesce(max(line_no), 0) FROM lines").fetchone()[0]
        finally:
            con.close()
        print(time.time(), seen, flush=True)
    except Exception:
        pass
    time.sleep(poll)
"""


def journal_lines(count: int) -> list[bytes]:
    out = io.StringIO()
    write_journal(out, count, seed=7)
    return [line.encode() + b"\n" for line in out.getvalue().splitlines()[:count]]


def cpu_seconds(process: subprocess.Popen) -> float:
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def run_rate(rate: int, seconds: float, poll: float, folder: Path) -> dict:
    lines = journal_lines(int(rate * seconds))
    log, db = folder / f"server-{rate}.log", folder / f"follow-{rate}.duckdb"
    log.write_bytes(b"")
    follow = subprocess.Popen([*LOGMINE, "follow", str(log), "--db", str(db), "--no-builtin-rules"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen: list[tuple[float, int]] = []
    poller = subprocess.Popen([sys.executable, "-c", POLLER, str(db), str(poll)], stdout=subprocess.PIPE, text=True)

    def read_polls() -> None:
        for row in poller.stdout:
            at, line = row.split()
            seen.append((float(at), int(line)))

    threading.Thread(target=read_polls, daemon=True).start()
    time.sleep(3)  # follow's start-up (imports, the empty file's first ingest)
    written: list[tuple[float, int]] = []
    per_slice = max(1, round(rate * SLICE_S))
    started = time.monotonic()
    with log.open("ab") as out:
        for n, first in enumerate(range(0, len(lines), per_slice)):
            wait = started + n * SLICE_S - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            out.write(b"".join(lines[first:first + per_slice]))
            out.flush()
            written.append((time.time(), min(len(lines), first + per_slice)))
    deadline = time.time() + 60
    while (not seen or seen[-1][1] < len(lines)) and time.time() < deadline:
        time.sleep(0.1)
    follow.send_signal(signal.SIGINT)
    follow_cpu = cpu_seconds(follow)
    poller.kill()
    poller.wait()
    delays = []
    for at, last in written:
        first_seen = next((t for t, line in seen if line >= last and t >= at), None)
        if first_seen is not None:
            delays.append(first_seen - at)
    once = subprocess.Popen([*LOGMINE, "ingest", str(log), "--db", str(folder / f"once-{rate}.duckdb"), "--jobs", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ingest_cpu = cpu_seconds(once)
    delays.sort()
    return {"rate": rate, "lines": len(lines), "slices": len(written), "seen": len(delays),
            "median_s": statistics.median(delays) if delays else None,
            "p99_s": delays[min(len(delays) - 1, int(0.99 * len(delays)))] if delays else None,
            "follow_us_per_line": follow_cpu / len(lines) * 1e6, "ingest_us_per_line": ingest_cpu / len(lines) * 1e6}


def derivation(folder: Path) -> tuple[float, float, int, int]:
    """(full rebuild s, open-run update s, runs, lines) on a database of many runs and sources."""
    import duckdb

    from logmine import api
    from logmine.derive import runs

    demo = (Path(__file__).resolve().parents[1] / "examples" / "demo" / "journal.txt").read_bytes()
    paths = []
    for n in range(20):
        path = folder / f"host{n:02d}.journal.txt"
        path.write_bytes(demo * (40 if n == 0 else 1))
        paths.append(str(path))
    db = folder / "derive.duckdb"
    api.ingest(paths, db=db, jobs=1)
    con = duckdb.connect(str(db))

    def best(step: object) -> float:
        times = []
        for _ in range(5):
            con.execute("BEGIN")
            started = time.perf_counter()
            step()
            times.append(time.perf_counter() - started)
            con.execute("ROLLBACK")
        return min(times)

    full = best(lambda: runs.rebuild_runs(con))
    grown = con.execute("SELECT source_id FROM sources WHERE path LIKE '%host00%'").fetchone()[0]
    part = best(lambda: runs.update_open_runs(con, {grown}))
    counts = con.execute("SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM lines)").fetchone()
    con.close()
    return full, part, counts[0], counts[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="1000,20000")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--poll", type=float, default=0.05)
    args = parser.parse_args()
    print(f"{'lines/s':>8} {'lines':>7} {'median delay':>13} {'p99 delay':>10} {'follow CPU/line':>16} "
          f"{'ingest CPU/line':>16}")
    with tempfile.TemporaryDirectory(prefix="follow-bench-") as folder:
        for rate in (int(r) for r in args.rates.split(",")):
            r = run_rate(rate, args.seconds, args.poll, Path(folder))
            print(f"{r['rate']:>8,} {r['lines']:>7,} {r['median_s']:>12.2f}s {r['p99_s']:>9.2f}s "
                  f"{r['follow_us_per_line']:>14.0f}µs {r['ingest_us_per_line']:>14.0f}µs", flush=True)
        full, part, n_runs, n_lines = derivation(Path(folder))
        print(f"\nruns derived after a batch, {n_runs} runs of {n_lines:,} lines in 20 sources: "
              f"every run (ingest) {full * 1000:.0f} ms, the open run (follow) {part * 1000:.0f} ms")
        print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
