"""Report benchmark: `logmine report` on a database holding a synthetic SGLang journal (2M lines).

    python bench/report_bench.py                     # 2,000,000 lines, 3 repeats per format
    python bench/report_bench.py --lines 500000 --repeats 5

The journal is generated once (seeded, cached in --workdir, shared with ingest_bench.py) and ingested
once into a cached database; each repeat then runs `logmine report --db DB -o FILE` as a fresh process
(imports included, as a user runs it) for HTML and for Markdown. It prints every wall time, the
median, and, measured in this process, the time of each named query the report runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ingest_bench  # beside this script, which Python puts first on sys.path (its cached journal generator)

TARGET_S = 5.0


def ensure_database(workdir: Path, lines: int, seed: int, logmine: str) -> Path:
    db = workdir / f"report-{lines}-seed{seed}.duckdb"
    if db.exists():
        return db
    journal = ingest_bench.ensure_journal(workdir, lines, seed)
    partial = db.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    started = time.perf_counter()
    subprocess.run([logmine, "ingest", str(journal), "--db", str(partial), "--json"], check=True,
                   stdout=subprocess.DEVNULL)
    partial.rename(db)
    print(f"ingested {journal.name} into {db} in {time.perf_counter() - started:.1f} s")
    return db


def time_report(logmine: str, db: Path, out: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one `logmine report` process: on a shared machine the
    CPU time says what the report costs when the wall time also counts waiting for a core."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([logmine, "report", "--db", str(db), "-o", str(out)], stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    if done.returncode:
        sys.exit(f"report_bench: {done.stderr.strip()}\n(a database cached by an older logmine: delete {db})")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def query_times(db: Path) -> list[tuple[str, float, int]]:
    """Each named query the report runs, timed in this process (name, seconds, rows)."""
    from logmine import api
    from logmine.report.data import RUN_QUERIES, SESSION_QUERIES

    timings = []
    with api.open_db(db) as con:
        for name in [*RUN_QUERIES, *SESSION_QUERIES, "config-diff"]:
            started = time.perf_counter()
            rows = len(api.query(con, name))
            timings.append((name, time.perf_counter() - started, rows))
    return timings


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=2_000_000, help="journal size in lines (default 2,000,000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3, help="report runs per format (default 3)")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "logmine-bench",
                    help="where the journal and its database are cached (default: $TMPDIR/logmine-bench)")
    args = ap.parse_args(argv)
    logmine = ingest_bench.find_logmine()
    args.workdir.mkdir(parents=True, exist_ok=True)
    db = ensure_database(args.workdir, args.lines, args.seed, logmine)

    print(f"database: {db} ({db.stat().st_size / 1e6:.0f} MB, {args.lines:,} journal lines); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    medians = {}
    with tempfile.TemporaryDirectory(prefix="logmine-report-bench-") as outdir:
        for suffix in ("html", "md"):
            out = Path(outdir) / f"report.{suffix}"
            runs = [time_report(logmine, db, out) for _ in range(args.repeats)]
            medians[suffix] = statistics.median(wall for wall, _ in runs)
            print(f"logmine report -o report.{suffix:<5} wall s: " + ", ".join(f"{w:.2f}" for w, _ in runs)
                  + f"  median {medians[suffix]:.2f}; CPU s median {statistics.median(c for _, c in runs):.2f}"
                  + f"  ({out.stat().st_size / 1e3:,.0f} KB)")
    print("\nnamed queries (in process, after imports):")
    for name, seconds, rows in query_times(db):
        print(f"  {name:<18}{seconds:>7.2f} s {rows:>8,} rows")
    worst = max(medians.values())
    print(f"\nslowest median {worst:.2f} s: {'under' if worst < TARGET_S else 'OVER'} the {TARGET_S:.0f} s target")
    return 0 if worst < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
