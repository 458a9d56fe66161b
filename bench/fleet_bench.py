"""Fleet benchmark: a folder of journals, one per node, ingested with `--jobs 1`, `--jobs 2` and Spark.

    python bench/fleet_bench.py                          # 50 journals of 200,000 lines
    python bench/fleet_bench.py --nodes 8 --lines 20000  # a quick run
    python bench/fleet_bench.py --skip spark             # without Spark (no Java, no pyspark)

The journals come from `synth_journal.py` (one seeded journal, each node's copy with its own host name
instead of the generator's, so the files are as alike as a fleet's and hosts stay distinct), cached in
--workdir. Each way of ingesting runs as a fresh `logmine` process on a fresh output: wall time around
it, and peak memory as the largest resident set of any one process of its tree, and their sum at the
sampled moment they were largest together (Spark's JVM and its Python workers are in that tree).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ingest_bench import (  # beside this script, which Python puts first on sys.path
    TreePeak,
    ensure_journal,
    find_logmine,
)

GENERATOR_HOST = b" gpu-node-7 "


class TreeTotal(TreePeak):
    """TreePeak, plus the largest sum of the resident sets of the tree's processes at one sample."""

    def __init__(self, pid: int) -> None:
        self.total_kib = 0
        super().__init__(pid)

    def _sample(self) -> None:
        while not self._stop.wait(0.25):
            total = 0
            for pid in self._tree():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak_kib = max(self.peak_kib, int(line.split()[1]))
                    elif line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            self.total_kib = max(self.total_kib, total)


def fleet(workdir: Path, nodes: int, lines: int, seed: int) -> Path:
    """`nodes` journals of `lines` lines, `node-000.txt`... each naming its own host."""
    folder = workdir / f"fleet-{nodes}x{lines}-seed{seed}"
    if folder.is_dir() and len(list(folder.glob("node-*.txt"))) == nodes:
        return folder
    base = ensure_journal(workdir, lines, seed).read_bytes()
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(nodes):
        (folder / f"node-{n:03d}.txt").write_bytes(base.replace(GENERATOR_HOST, f" node-{n:03d} ".encode()))
    return folder


def measure(argv: list[str]) -> tuple[float, float, float, int, str]:
    """(wall s, peak RSS of one process MB, peak RSS of the tree MB, exit code, stderr tail)."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    tree = TreeTotal(proc.pid)
    stderr: list[str] = []
    reader = threading.Thread(target=lambda: stderr.append(proc.stderr.read()), daemon=True)
    reader.start()
    code = proc.wait()
    tree.stop()
    reader.join()
    return time.perf_counter() - started, tree.peak_kib / 1024, tree.total_kib / 1024, code, "".join(stderr)[-300:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--lines", type=int, default=200_000, help="lines per journal")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip", nargs="*", default=[], choices=["jobs1", "jobs2", "spark"])
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "logmine-bench")
    args = ap.parse_args(argv)
    logmine = find_logmine("dev,spark")
    args.workdir.mkdir(parents=True, exist_ok=True)
    folder = fleet(args.workdir, args.nodes, args.lines, args.seed)
    total_lines = args.nodes * args.lines
    megabytes = sum(f.stat().st_size for f in folder.glob("node-*.txt")) / 1e6
    print(f"{args.nodes} journals x {args.lines:,} lines = {total_lines:,} lines, {megabytes:,.0f} MB in {folder}")
    ways = {
        "jobs1": ("logmine ingest --jobs 1", lambda out: [logmine, "ingest", str(folder), "--jobs", "1", "--db",
                                                          str(out / "db.duckdb"), "--json"]),
        "jobs2": ("logmine ingest --jobs 2", lambda out: [logmine, "ingest", str(folder), "--jobs", "2", "--db",
                                                          str(out / "db.duckdb"), "--json"]),
        "spark": ("ingest --engine spark local[2]", lambda out: [logmine, "ingest", "--engine", "spark", "--master",
                                                                "local[2]", str(folder), "--out", str(out / "pq")]),
    }
    header = f"{'how':<32}{'wall s':>9}{'lines/s':>12}{'peak RSS MB':>13}{'tree MB':>9}"
    print(f"\n{header}\n{'-' * len(header)}", flush=True)
    failed = False
    for key, (label, command) in ways.items():
        if key in args.skip:
            continue
        with tempfile.TemporaryDirectory(prefix="logmine-fleet-") as scratch:
            seconds, peak, tree, code, err = measure(command(Path(scratch)))
        if code != 0:
            print(f"{label}: exit {code}: {err.strip()}", file=sys.stderr)
            failed = True
        print(f"{label:<32}{seconds:>9.1f}{total_lines / seconds:>12,.0f}{peak:>13.0f}{tree:>9.0f}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
