"""How fast the `logmine` command answers: `--help`, and named queries on a 2M-line database.

    python bench/front_door.py                  # builds the database once in --workdir, then measures
    python bench/front_door.py --repeat 9 --queries runs errors

Each figure is the median wall time of `--repeat` runs of the command in a fresh process (what a
person waits for), output to a pipe in CSV. The breakdown below it times, in one process, what such a
command does: import the CLI, import DuckDB, open the database read-only, run the query, render it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
STEPS = ["import", "duckdb", "open", "query", "render"]
QUERIES = ["runs", "load-time", "memory-budget", "errors", "config-diff", "serving"]


def database(workdir: Path, lines: int) -> Path:
    """A database holding a synthetic journal of `lines` lines (made once, then reused)."""
    db = workdir / f"front-door-{lines}.duckdb"
    if not db.exists():
        journal = workdir / f"journal-{lines}.txt"
        if not journal.exists():
            subprocess.run([sys.executable, str(BENCH_DIR / "synth_journal.py"), "--lines", str(lines),
                            "--out", str(journal)], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([sys.executable, "-m", "logmine", "ingest", str(journal), "--db", str(db), "--json"],
                       check=True, stdout=subprocess.DEVNULL)
    return db


def wall(args: list[str], repeat: int, program: tuple[str, ...] = ("-m", "logmine")) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, *program, *args], check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def breakdown(db: Path, name: str) -> dict[str, float]:
    """Seconds per step of `logmine query NAME`, in a fresh interpreter so imports are counted."""
    script = f"""
import time
t0 = time.perf_counter()
import logmine.cli
from logmine import api, named_queries, render
t1 = time.perf_counter()
import duckdb
t1b = time.perf_counter()
with api.open_db({str(db)!r}) as con:
    t2 = time.perf_counter()
    rows = api.query_rows(con, {name!r})
    t3 = time.perf_counter()
render.render(rows, "table", 120, key_columns=named_queries.key_columns({name!r}))
t4 = time.perf_counter()
print(t1 - t0, t1b - t1, t2 - t1b, t3 - t2, t4 - t3)
"""
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout
    return dict(zip(STEPS, map(float, out.split()), strict=True))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--queries", nargs="+", default=QUERIES)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "logmine-bench")
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    db = database(args.workdir, args.lines)

    def row(label: str, seconds: float) -> None:
        print(f"{label:<44} {seconds:>9.3f}")

    print(f"{'command':<44} {'median s':>9}")
    print("-" * 54)
    # The floor any command stands on: the interpreter alone, and with DuckDB imported.
    row("python -c pass", wall(["pass"], args.repeat, ("-c",)))
    row("python -c 'import duckdb'", wall(["import duckdb"], args.repeat, ("-c",)))
    row("logmine --help", wall(["--help"], args.repeat))
    row("logmine query --help", wall(["query", "--help"], args.repeat))
    for name in args.queries:
        row(f"logmine query {name} ({args.lines:,} lines)",
            wall(["query", name, "--db", str(db), "--format", "csv"], args.repeat))
    print()
    print(f"{'in one process':<16} " + " ".join(f"{step:>7}" for step in STEPS))
    for name in args.queries:
        steps = breakdown(db, name)
        print(f"{name:<16} " + " ".join(f"{steps[k]:>7.3f}" for k in STEPS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
