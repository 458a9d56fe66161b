"""logmine's full typed ingest beside lnav's index and grep, on the same machine in one run.

    python bench/lnav_compare.py                          # 2,000,000 and 4,000,000 lines
    python bench/lnav_compare.py --lines 2000000 --repeats 3

For each size of `synth_journal.py` output (generated once, cached in --workdir like `ingest_bench.py`),
the tools run one after another, `--repeats` times each, interleaved:

* `lnav -n -c ';SELECT count(*) FROM syslog_log' FILE`: lnav indexes the file (skipped when lnav is
  not installed);
* `grep -c '' FILE`: the cost of reading it;
* `duckdb_floor.py FILE` and `duckdb_floor.py FILE --envelope`: DuckDB alone storing each line's text,
  then the text with the journal envelope split into five typed columns, with every core and no logmine
  code: the floor of any ingest that keeps the text in DuckDB;
* `kernel_floor.py FILE`: typing without storing, by library kernels alone: pyarrow reads the lines
  into Arrow, and RE2 (`pyarrow.compute.extract_regex`) splits off the envelope, the SGLang prefix and
  the figures of decode lines, one vectorised pass each;
* `logmine ingest FILE --db NEW.duckdb --json`: every line typed and stored.

Then the incremental case: a copy of the 2M-line journal is ingested, 10,000 more lines are appended to
it, and `logmine ingest` runs again on the grown file (only the new lines are read).

It prints the machine (cores, load average at the start), then per tool the median wall and CPU seconds
(user + system of the process and all its descendants, logmine's parse worker and its server included),
lines/s and peak RSS, and logmine's ratio to lnav in wall and in CPU time. Other work on the machine
shows in the wall times more than in the CPU times.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ingest_bench import Measurement, ensure_journal, find_logmine, measure

APPENDED_LINES = 10_000
BENCH = Path(__file__).parent
FLOORS = {"duckdb: text": [BENCH / "duckdb_floor.py"],
          "duckdb: +envelope": [BENCH / "duckdb_floor.py", "--envelope"],
          "pyarrow+RE2 typing": [BENCH / "kernel_floor.py"]}
LNAV_QUERY = ";SELECT count(*) FROM syslog_log"


def machine() -> str:
    cores = os.cpu_count()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                      if line.startswith("model name")), "")
    memory = ""
    if hasattr(os, "sysconf") and "SC_PHYS_PAGES" in os.sysconf_names:
        memory = f", {os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GB"
    return f"{platform.system()} {platform.machine()}, {cores} cores {model}{memory}, load average {load}"


def tool_version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (out.strip().splitlines() or ["?"])[0]


def median(runs: list[Measurement]) -> Measurement:
    """The run of median wall time, with the median CPU time and the largest peak RSS of all runs."""
    ordered = sorted(runs, key=lambda m: m.seconds)
    middle = ordered[(len(ordered) - 1) // 2]
    return Measurement(middle.tool, middle.lines, middle.megabytes, middle.seconds,
                       max(m.peak_rss_mb for m in runs), max(m.exit_code for m in runs), middle.stdout,
                       statistics.median(m.cpu_seconds for m in runs))


def compare_size(journal: Path, lines: int, repeats: int, logmine: str, lnav: str | None,
                 scratch: Path) -> dict[str, Measurement]:
    size = journal.stat().st_size
    runs: dict[str, list[Measurement]] = {}
    for _ in range(repeats):
        if lnav:
            runs.setdefault("lnav -n", []).append(
                measure("lnav -n", [lnav, "-n", "-c", LNAV_QUERY, str(journal)], lines, size))
        runs.setdefault("grep -c", []).append(measure("grep -c", ["grep", "-c", "", str(journal)], lines, size))
        for tool, (script, *extra) in FLOORS.items():
            runs.setdefault(tool, []).append(measure(tool, [sys.executable, str(script), str(journal), *extra],
                                                     lines, size))
        db = scratch / "compare.duckdb"
        db.unlink(missing_ok=True)
        runs.setdefault("logmine ingest", []).append(
            measure("logmine ingest", [logmine, "ingest", str(journal), "--db", str(db), "--json"], lines, size))
        db.unlink(missing_ok=True)
    return {tool: median(found) for tool, found in runs.items()}


def continuation(journal: Path, lines: int, longer: Path | None) -> bytes:
    """The APPENDED_LINES lines that follow the journal's `lines`: those of a longer journal of the same
    seed (which starts with the same bytes), else the journal's own last lines again."""
    with open(longer or journal, "rb") as fh:
        if longer is None:
            kept: list[bytes] = []
            for line in fh:
                kept.append(line)
                if len(kept) > APPENDED_LINES:
                    del kept[:len(kept) - APPENDED_LINES]
            return b"".join(kept)
        for _ in range(lines):
            fh.readline()
        return b"".join(fh.readline() for _ in range(APPENDED_LINES))


def incremental(journal: Path, tail: bytes, logmine: str, scratch: Path, repeats: int) -> Measurement:
    """`logmine ingest` of `tail` appended to the journal once it is stored."""
    runs = []
    for _ in range(repeats):
        copy, db = scratch / "grown.txt", scratch / "grown.duckdb"
        db.unlink(missing_ok=True)
        shutil.copyfile(journal, copy)
        first = subprocess.run([logmine, "ingest", str(copy), "--db", str(db), "--json"], capture_output=True)
        if first.returncode:
            sys.exit(f"lnav_compare: the first ingest failed: {first.stderr.decode(errors='replace')[-300:]}")
        with open(copy, "ab") as fh:
            fh.write(tail)
        runs.append(measure(f"+{APPENDED_LINES:,} lines", [logmine, "ingest", str(copy), "--db", str(db), "--json"],
                            APPENDED_LINES, len(tail)))
        copy.unlink()
        db.unlink(missing_ok=True)
    return median(runs)


def print_rows(lines: int, results: dict[str, Measurement]) -> None:
    lnav = results.get("lnav -n")
    for tool, m in results.items():
        ratio = ""
        if lnav and tool == "logmine ingest":
            ratio = f"{m.seconds / lnav.seconds:>8.2f}{m.cpu_seconds / max(lnav.cpu_seconds, 1e-9):>8.2f}"
        print(f"{lines:>11,}  {tool:<18}{m.seconds:>8.2f}{m.cpu_seconds:>8.2f}{m.lines_per_s:>12,.0f}"
              f"{m.peak_rss_mb:>9.0f}{ratio}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, nargs="+", default=[2_000_000, 4_000_000])
    ap.add_argument("--repeats", type=int, default=1, help="runs of each tool per size (medians are shown)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "logmine-bench",
                    help="where generated journals are cached (default: $TMPDIR/logmine-bench)")
    ap.add_argument("--no-incremental", action="store_true", help="skip the 10,000 appended lines case")
    args = ap.parse_args(argv)

    logmine = find_logmine()
    lnav = shutil.which("lnav")
    args.workdir.mkdir(parents=True, exist_ok=True)
    journals = {lines: ensure_journal(args.workdir, lines, args.seed) for lines in sorted(args.lines)}
    print(f"machine: {machine()}")
    print(f"logmine: {logmine}")
    print(f"lnav: {tool_version([lnav, '-V']) if lnav else 'not installed (skipped)'}; "
          f"grep: {tool_version(['grep', '-V'])}")
    print(f"\n{'lines':>11}  {'tool':<18}{'wall s':>8}{'CPU s':>8}{'lines/s':>12}{'RSS MB':>9}"
          f"{'/lnav':>8}{'CPU/':>8}")
    failed = False
    with tempfile.TemporaryDirectory(prefix="logmine-lnav-") as scratch:
        for lines, journal in journals.items():
            results = compare_size(journal, lines, args.repeats, logmine, lnav, Path(scratch))
            failed |= results["logmine ingest"].exit_code != 0
            print_rows(lines, results)
            if "lnav -n" in results:  # that lnav indexed every line: its count is the last word it prints
                counted = (results["lnav -n"].stdout.split() or ["?"])[-1]
                print(f"{'':13}(lnav counted {counted} lines)")
        if not args.no_incremental:
            base = min(journals)
            longer = journals[max(journals)] if max(journals) > base else None
            tail = continuation(journals[base], base, longer)
            grown = incremental(journals[base], tail, logmine, Path(scratch), args.repeats)
            failed |= grown.exit_code != 0
            print(f"\nincremental: {APPENDED_LINES:,} lines appended to the {base:,}-line journal already "
                  f"stored: {grown.seconds:.2f} s wall, {grown.cpu_seconds:.2f} s CPU, "
                  f"peak RSS {grown.peak_rss_mb:.0f} MB")
    print(f"\nload average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
