"""Reproducible ingest benchmark: `logmine ingest` on a synthetic SGLang journal, beside grep.

    python bench/ingest_bench.py                       # 2,000,000 lines
    python bench/ingest_bench.py --lines 500000 2000000  # two sizes: memory must not grow with size

For each size it generates the journal once (seeded, cached in --workdir), then times
`grep -c '' FILE` (a pure read), `grep -c 'Decode batch' FILE` (read + match), and
`logmine ingest FILE --db TMP.duckdb --json` (fresh database each run). Wall time is measured
around each child; peak RSS is the largest resident set of any one process of the child's tree: from
GNU time or os.wait4() (the child and the descendants it waited for), and on Linux also from /proc
samples of every descendant (logmine's parse worker is forked by a server nobody waits for).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent


@dataclass
class Measurement:
    tool: str
    lines: int
    megabytes: float
    seconds: float
    peak_rss_mb: float
    exit_code: int
    stdout: str
    cpu_seconds: float = 0.0  # user + system of the child and all its descendants

    @property
    def lines_per_s(self) -> float:
        return self.lines / self.seconds if self.seconds else float("inf")

    @property
    def mb_per_s(self) -> float:
        return self.megabytes / self.seconds if self.seconds else float("inf")


def _rss_mb(ru_maxrss: int) -> float:
    # Linux reports KiB, macOS bytes
    return ru_maxrss / (1 << 20) if sys.platform == "darwin" else ru_maxrss / 1024


GNU_TIME = "/usr/bin/time"


def _gnu_time_peak_kib(report: str) -> int | None:
    for line in report.splitlines():
        if "Maximum resident set size" in line:
            return int(line.rsplit(":", 1)[1])
    return None


class TreePeak:
    """The largest peak RSS (VmHWM) of any process under `pid`, and the CPU time of all of them, sampled
    from /proc while it runs.

    wait4() and GNU time only see descendants their child waited for; logmine's parse worker is a
    child of a forkserver the main process never waits for. CPU times are the last sample of each
    process (up to SAMPLE_S short of its end).
    """

    SAMPLE_S = 0.1

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_kib = pid, 0
        self.cpu_by_pid: dict[int, float] = {}
        self._tick = os.sysconf("SC_CLK_TCK")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    @property
    def cpu_seconds(self) -> float:
        return sum(self.cpu_by_pid.values())

    def _sample(self) -> None:
        while not self._stop.wait(self.SAMPLE_S):
            for pid in self._tree():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                self.cpu_by_pid[pid] = (int(stat[11]) + int(stat[12])) / self._tick  # utime + stime
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak_kib = max(self.peak_kib, int(line.split()[1]))

    def _tree(self) -> list[int]:
        parents: dict[int, list[int]] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(stat.parent.name))
        tree, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo += parents.get(pid, [])
        return tree

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak_kib


def child_env(extra: dict[str, str] | None) -> dict[str, str]:
    """This environment with `extra`, and Python writing its bytecode caches as it does by default: where
    PYTHONDONTWRITEBYTECODE is set (this project's machine sets it), each logmine run would compile its
    modules from source again, about 0.15 s that no installed copy pays."""
    env = {**os.environ, **(extra or {})}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def measure(tool: str, argv: list[str], lines: int, size_bytes: int, env: dict[str, str] | None = None) -> Measurement:
    """Run argv to completion; wall time around the child, peak RSS of the child's process tree.

    Peak RSS comes from GNU `/usr/bin/time -v` when present (exact for the exec'd program);
    otherwise from os.wait4() on the child, which can never read below the size of the forked
    Python interpreter image (~20 MB), so tiny programs like grep look bigger than they are. On
    Linux, /proc is also sampled for processes neither of them sees (`TreePeak`); the larger wins.
    """
    use_time = os.access(GNU_TIME, os.X_OK)
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
            tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        cmd = [GNU_TIME, "-v", "-o", report.name, *argv] if use_time else argv
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=child_env(env))
        tree = TreePeak(proc.pid) if sys.platform.startswith("linux") else None
        # reap it ourselves: wait4 returns this child's rusage, untouched by earlier children
        _, status, usage = os.wait4(proc.pid, 0)
        tree_kib = tree.stop() if tree else 0
        tree_cpu = tree.cpu_seconds if tree else 0.0
        seconds = time.perf_counter() - started
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
        peak_kib = _gnu_time_peak_kib(report.read()) if use_time else None
    peak_mb = max(peak_kib / 1024 if peak_kib is not None else _rss_mb(usage.ru_maxrss), tree_kib / 1024)
    if code not in (0, 1):  # grep -c exits 1 when nothing matched
        sys.stderr.write(f"{tool} exited {code}: {stderr.strip()[-500:]}\n")
    # The child's own rusage is exact but misses the processes it did not wait for; the samples see them.
    return Measurement(tool, lines, size_bytes / 1e6, seconds, peak_mb, code, stdout,
                       max(usage.ru_utime + usage.ru_stime, tree_cpu))


def ensure_journal(workdir: Path, lines: int, seed: int) -> Path:
    path = workdir / f"journal-{lines}-seed{seed}.txt"
    if path.exists():
        return path
    import synth_journal as gen  # beside this script, which Python puts first on sys.path

    tmp = path.with_suffix(".partial")
    started = time.perf_counter()
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        gen.write_journal(fh, lines, seed)
    tmp.rename(path)
    print(f"generated {path} ({path.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - started:.1f} s")
    return path


def find_logmine(extras: str = "dev") -> str:
    """The `logmine` command of the Python running this script (a virtualenv's, even when not activated),
    else the first on PATH: a pyenv shim there may run another checkout's logmine. Without one, the bench
    says how to install it and exits."""
    beside = Path(sys.executable).parent / "logmine"
    found = str(beside) if beside.exists() else shutil.which("logmine")
    if found is None:
        print(f"{Path(sys.argv[0]).stem}: `logmine` is not on PATH (pip install -e '.[{extras}]' first)",
              file=sys.stderr)
        raise SystemExit(2)
    return found


def run_size(workdir: Path, lines: int, seed: int, logmine: str) -> list[Measurement]:
    journal = ensure_journal(workdir, lines, seed)
    size = journal.stat().st_size
    results = [
        measure("grep -c ''", ["grep", "-c", "", str(journal)], lines, size),
        measure("grep -c 'Decode batch'", ["grep", "-c", "Decode batch", str(journal)], lines, size),
    ]
    with tempfile.TemporaryDirectory(prefix="logmine-bench-db-") as dbdir:
        db = Path(dbdir) / "bench.duckdb"
        results.append(measure("logmine ingest", [logmine, "ingest", str(journal), "--db", str(db), "--json"],
                               lines, size))
    return results


def summarize_ingest_output(stdout: str) -> str:
    """One line from `--json` output, whatever its exact shape (the CLI is still evolving)."""
    try:
        data = json.loads(stdout)
    except (json.JSONDecodeError, ValueError):
        return stdout.strip().splitlines()[-1][:200] if stdout.strip() else "(no output)"
    if isinstance(data, dict):
        keys = [k for k, v in data.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)]
        return ", ".join(f"{k}={data[k]}" for k in keys[:8]) or json.dumps(data)[:200]
    return json.dumps(data)[:200]


def print_table(results: list[Measurement]) -> None:
    header = (f"{'tool':<24}{'lines':>11}{'MB':>9}{'wall s':>9}{'lines/s':>13}{'MB/s':>9}"
              f"{'peak RSS MB':>13}{'exit':>6}")
    print(header)
    print("-" * len(header))
    for m in results:
        print(f"{m.tool:<24}{m.lines:>11,}{m.megabytes:>9.1f}{m.seconds:>9.2f}{m.lines_per_s:>13,.0f}"
              f"{m.mb_per_s:>9.1f}{m.peak_rss_mb:>13.1f}{m.exit_code:>6}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, nargs="+", default=[2_000_000],
                    help="journal size(s) in lines, e.g. --lines 500000 2000000")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "logmine-bench",
                    help="where generated journals are cached (default: $TMPDIR/logmine-bench)")
    args = ap.parse_args(argv)

    logmine = find_logmine()
    args.workdir.mkdir(parents=True, exist_ok=True)

    all_results: list[Measurement] = []
    for lines in args.lines:
        results = run_size(args.workdir, lines, args.seed, logmine)
        all_results.extend(results)
        ingest = results[-1]
        print(f"logmine ingest --json ({lines:,} lines): {summarize_ingest_output(ingest.stdout)}")
    print()
    print_table(all_results)
    ingests = [m for m in all_results if m.tool == "logmine ingest"]
    if len(ingests) > 1:
        small, big = min(ingests, key=lambda m: m.lines), max(ingests, key=lambda m: m.lines)
        print(f"\npeak RSS {small.lines:,} -> {big.lines:,} lines: {small.peak_rss_mb:.0f} -> "
              f"{big.peak_rss_mb:.0f} MB (x{big.peak_rss_mb / max(small.peak_rss_mb, 1e-9):.2f} "
              f"for x{big.lines / small.lines:.1f} input)")
    return 0 if all(m.exit_code == 0 for m in ingests) else 1


if __name__ == "__main__":
    sys.exit(main())
