"""logmine's full typed ingest beside lnav's index and grep, on the same machine in one run, and the
first typed answers of both.

    python bench/lnav_compare.py                          # 2,000,000 and 4,000,000 lines
    python bench/lnav_compare.py --lines 2000000 --repeats 3

For each size of `synth_journal.py` output (generated once, cached in --workdir like `ingest_bench.py`),
the tools run one after another, `--repeats` times each, interleaved:

* `lnav -n -c ';SELECT count(*) FROM syslog_log' FILE`: lnav indexes the file (skipped when lnav is
  not installed);
* lnav's index and one typed question (`QUESTIONS[0]`: how many decode batches, and their mean
  generation throughput, by a regex over the lines in lnav's SQL), then the same with all three
  questions;
* `grep -c '' FILE`: the cost of reading it;
* `duckdb_floor.py FILE` and `duckdb_floor.py FILE --envelope`: DuckDB alone storing each line's text,
  then the text with the journal envelope split into five typed columns, with every core and no logmine
  code: the floor of any ingest that keeps the text in DuckDB;
* `kernel_floor.py FILE`: typing without storing, by library kernels alone: pyarrow reads the lines
  into Arrow, and RE2 (`pyarrow.compute.extract_regex`) splits off the envelope, the SGLang prefix and
  the figures of decode lines, one vectorised pass each;
* `logmine ingest FILE --db NEW.duckdb --json`: every line typed and stored, on the compiled parse path
  and, with `LOGMINE_PURE_PYTHON=1`, on the Python path (only the latter where nothing is compiled);
* `logmine sql QUESTION --db NEW.duckdb`: each question on the stored tables.

Then the incremental case: a copy of the 2M-line journal is ingested, 10,000 more lines are appended to
it, and `logmine ingest` runs again on the grown file (only the new lines are read).

It prints the machine (cores, load average at the start), then per tool the median wall and CPU seconds
(user + system of the process and all its descendants, logmine's parse worker and its server included),
lines/s and peak RSS, and logmine's ratio to lnav in wall and in CPU time; then the answers of both tools
side by side, and the ratio of the times to the first typed answer and to all three. Other work on the
machine shows in the wall times more than in the CPU times.
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

from ingest_bench import Measurement, child_env, ensure_journal, find_logmine, measure

APPENDED_LINES = 10_000
BENCH = Path(__file__).parent
FLOORS = {"duckdb: text": [BENCH / "duckdb_floor.py"],
          "duckdb: +envelope": [BENCH / "duckdb_floor.py", "--envelope"],
          "pyarrow+RE2 typing": [BENCH / "kernel_floor.py"]}
LNAV_QUERY = ";SELECT count(*) FROM syslog_log"
# Typed questions, as each tool asks them: lnav by a regex over the journal's lines, logmine over its tables.
QUESTIONS = [
    ("decode batches, mean generation throughput (token/s)",
     ";SELECT count(*), round(avg(CAST(regexp_match('gen throughput \\(token/s\\): ([0-9.]+)', log_body) AS REAL)), 2) "
     "FROM syslog_log WHERE log_body LIKE '%Decode batch%'",
     "SELECT count(*), round(avg(gen_throughput_tok_s), 2) FROM decode_batches"),
    ("prefill batches, mean input throughput (token/s)",
     ";SELECT count(*), round(avg(CAST(regexp_match('input throughput \\(token/s\\): ([0-9.]+)', log_body) "
     "AS REAL)), 2) FROM syslog_log WHERE log_body LIKE '%Prefill batch%'",
     "SELECT count(*), round(avg(input_throughput_tok_s), 2) FROM prefill_batches"),
    ("HTTP requests, of them status 500 or more",
     ";SELECT count(*), count(*) FILTER (WHERE CAST(regexp_match('HTTP/1.1\" ([0-9]+)', log_body) AS INTEGER) >= 500) "
     "FROM syslog_log WHERE log_body LIKE '%HTTP/1.1\" %'",
     "SELECT count(*), count(*) FILTER (status >= 500) FROM http_requests"),
]
PATHS = {"compiled": {}, "Python": {"LOGMINE_PURE_PYTHON": "1"}}


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


def compare_size(journal: Path, lines: int, repeats: int, logmine: str, lnav: str | None, paths: list[str],
                 scratch: Path) -> tuple[dict[str, Measurement], dict[str, str]]:
    """The median measurement of each tool, and each tool's answer to each question (`lnav 1`, `logmine 1`, ...)."""
    size = journal.stat().st_size
    runs: dict[str, list[Measurement]] = {}
    answers: dict[str, str] = {}

    def run(tool: str, argv: list[str], env: dict[str, str] | None = None) -> Measurement:
        measured = measure(tool, argv, lines, size, env)
        runs.setdefault(tool, []).append(measured)
        return measured

    for _ in range(repeats):
        if lnav:
            run("lnav -n", [lnav, "-n", "-c", LNAV_QUERY, str(journal)])
            answers["lnav 1"] = run("lnav: +1 question", [lnav, "-n", "-c", QUESTIONS[0][1], str(journal)]).stdout
            run("lnav: +3 questions", [lnav, "-n", *[arg for q in QUESTIONS for arg in ("-c", q[1])], str(journal)])
        run("grep -c", ["grep", "-c", "", str(journal)])
        for tool, (script, *extra) in FLOORS.items():
            run(tool, [sys.executable, str(script), str(journal), *extra])
        for path in paths:
            db = scratch / f"compare-{path}.duckdb"
            db.unlink(missing_ok=True)
            run(f"logmine ({path})", [logmine, "ingest", str(journal), "--db", str(db), "--json"], PATHS[path])
        db = scratch / f"compare-{paths[0]}.duckdb"
        for number, (_, _, sql) in enumerate(QUESTIONS, 1):
            asked = run(f"logmine: question {number}", [logmine, "sql", sql, "--db", str(db), "--format", "csv"])
            answers[f"logmine {number}"] = asked.stdout
        for path in paths:
            (scratch / f"compare-{path}.duckdb").unlink(missing_ok=True)
    if lnav:  # the other two questions' answers, each asked on its own once (lnav prints the last -c only)
        for number, (_, lnav_sql, _) in enumerate(QUESTIONS[1:], 2):
            answers[f"lnav {number}"] = measure("lnav", [lnav, "-n", "-c", lnav_sql, str(journal)], lines, size).stdout
    return {tool: median(found) for tool, found in runs.items()}, answers


def numbers(output: str) -> list[str]:
    """The figures of a one-row answer, as lnav's table and logmine's CSV print them (header first)."""
    rows = [line.replace(",", " ").split() for line in output.strip().splitlines()]
    return rows[-1] if rows else []


def print_answers(results: dict[str, Measurement], answers: dict[str, str], first_path: str) -> None:
    ingest = results[f"logmine ({first_path})"]
    for number, (question, _, _) in enumerate(QUESTIONS, 1):
        lnav, mine = numbers(answers.get(f"lnav {number}", "")), numbers(answers[f"logmine {number}"])
        same = "equal" if lnav == mine else ("lnav not run" if not lnav else "DIFFERENT")
        print(f"{'':13}{question}: lnav {' / '.join(lnav) or '-'}, logmine {' / '.join(mine)} ({same})")
    if "lnav: +1 question" not in results:
        return
    first = ingest.seconds + results["logmine: question 1"].seconds
    three = ingest.seconds + sum(results[f"logmine: question {n}"].seconds for n in range(1, len(QUESTIONS) + 1))
    lnav_first, lnav_three = results["lnav: +1 question"].seconds, results["lnav: +3 questions"].seconds
    print(f"{'':13}first typed answer: logmine ({first_path}) {first:.2f} s (ingest + query), lnav {lnav_first:.2f} s "
          f"(index + query): ratio {first / lnav_first:.2f}")
    print(f"{'':13}three answers: logmine {three:.2f} s, lnav {lnav_three:.2f} s: ratio {three / lnav_three:.2f}; "
          f"each further answer: logmine {results['logmine: question 2'].seconds:.2f} s, lnav "
          f"{(lnav_three - lnav_first) / (len(QUESTIONS) - 1):.2f} s")


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
        first = subprocess.run([logmine, "ingest", str(copy), "--db", str(db), "--json"], capture_output=True,
                               env=child_env(None))
        if first.returncode:
            sys.exit(f"lnav_compare: the first ingest failed: {first.stderr.decode(errors='replace')[-300:]}")
        with open(copy, "ab") as fh:
            fh.write(tail)
        os.sync()  # the copy and the first ingest's writes, on disk before the clock starts
        runs.append(measure(f"+{APPENDED_LINES:,} lines", [logmine, "ingest", str(copy), "--db", str(db), "--json"],
                            APPENDED_LINES, len(tail)))
        copy.unlink()
        db.unlink(missing_ok=True)
    return median(runs)


def print_rows(lines: int, results: dict[str, Measurement]) -> None:
    lnav = results.get("lnav -n")
    for tool, m in results.items():
        ratio = ""
        if lnav and tool.startswith("logmine ("):
            ratio = f"{m.seconds / lnav.seconds:>8.2f}{m.cpu_seconds / max(lnav.cpu_seconds, 1e-9):>8.2f}"
        print(f"{lines:>11,}  {tool:<21}{m.seconds:>8.2f}{m.cpu_seconds:>8.2f}{m.lines_per_s:>12,.0f}"
              f"{m.peak_rss_mb:>9.0f}{ratio}")


def parse_path(python: str) -> str:
    """`compiled` or `Python`: the parse path the logmine beside this Python takes."""
    out = subprocess.run([python, "-c", "from logmine.parsers import hot_path; print(hot_path.path_name())"],
                         capture_output=True, text=True)
    return out.stdout.strip() or "?"


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
    paths = ["compiled", "Python"] if parse_path(sys.executable) == "compiled" else ["Python"]
    print(f"parse paths: {', '.join(paths)} (the compiled loops are {'' if 'compiled' in paths else 'not '}built)")
    print(f"\n{'lines':>11}  {'tool':<21}{'wall s':>8}{'CPU s':>8}{'lines/s':>12}{'RSS MB':>9}"
          f"{'/lnav':>8}{'CPU/':>8}")
    failed = False
    with tempfile.TemporaryDirectory(prefix="logmine-lnav-") as scratch:
        for lines, journal in journals.items():
            results, answers = compare_size(journal, lines, args.repeats, logmine, lnav, paths, Path(scratch))
            failed |= any(results[f"logmine ({path})"].exit_code != 0 for path in paths)
            print_rows(lines, results)
            if "lnav -n" in results:  # that lnav indexed every line: its count is the last word it prints
                counted = (results["lnav -n"].stdout.split() or ["?"])[-1]
                print(f"{'':13}(lnav counted {counted} lines)")
            print_answers(results, answers, paths[0])
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
