"""What typing a journal's lines costs when library kernels reachable from Python do all of it, storing nothing.

    python bench/kernel_floor.py FILE

No logmine code runs. pyarrow's multithreaded CSV reader reads the file into one Arrow column of lines
(no field splitting, no quoting), then RE2, through `pyarrow.compute.extract_regex`, splits off the
journal-short envelope (time, host, identifier, PID, message), the SGLang prefix (time, rank tags) and,
for decode batch lines, their eight figures, which are cast to numbers: one vectorised pass of one C++
kernel per step, the obvious way to type without a Python loop. It prints each step's wall and CPU
seconds, then the totals; `lnav_compare.py` runs it beside lnav, DuckDB's storing floor and logmine.
Measured here, RE2's capture groups make this slower than logmine's own pipeline (which cuts the envelope
by byte positions in numpy): C++ kernels alone are no shortcut to lnav's figure.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

ENVELOPE = (r"^(?P<stamp>\w{3} \d\d \d\d:\d\d:\d\d) (?P<host>\S+) (?P<ident>[^\[: ]+)\[(?P<pid>\d+)\]: "
            r"(?P<message>.*)$")
PREFIX = r"^\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?: (?P<ranks>[^\]]*))?\] (?P<body>.*)$"
DECODE = (r"^Decode batch, #running-req: (?P<running>\d+), #token: (?P<tokens>\d+), token usage: "
          r"(?P<usage>[\d.]+), (?:accept len: (?P<accept_len>[\d.]+), accept rate: (?P<accept_rate>[\d.]+), )?"
          r"cuda graph: (?P<cuda_graph>\w+), gen throughput \(token/s\): (?P<throughput>[\d.]+), "
          r"#queue-req: (?P<queued>\d+)")
NUMBERS = ("running", "tokens", "usage", "accept_len", "accept_rate", "throughput", "queued")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Steps:
    """Times each step, wall and CPU, and prints it."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), cpu_seconds()
        self.first_wall, self.first_cpu = self.wall, self.cpu

    def run(self, name: str, step: Callable[[], pa.Array]) -> pa.Array:
        result = step()
        wall, cpu = time.perf_counter(), cpu_seconds()
        print(f"  {name:<44}{wall - self.wall:>7.2f} s wall{cpu - self.cpu:>7.2f} s CPU")
        self.wall, self.cpu = wall, cpu
        return result


def as_number(texts: pa.Array) -> pa.Array:
    """A figure's texts as numbers; an optional group that took no part (RE2 gives "") is null."""
    return pc.cast(pc.if_else(pc.equal(texts, ""), pa.scalar(None, pa.string()), texts), pa.float64())


def read_lines(path: Path) -> pa.ChunkedArray:
    table = pcsv.read_csv(
        path, read_options=pcsv.ReadOptions(column_names=["line"], block_size=1 << 24),
        parse_options=pcsv.ParseOptions(delimiter="\x01", quote_char=False, escape_char=False),
        convert_options=pcsv.ConvertOptions(column_types={"line": pa.string()}))
    return table.column("line")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    args = ap.parse_args(argv)
    steps = Steps()
    lines = steps.run("read into Arrow (all cores)", lambda: read_lines(args.file))
    envelope = steps.run("envelope: time, host, ident, PID, message", lambda: pc.extract_regex(lines, ENVELOPE))
    prefix = steps.run("SGLang prefix: time, rank tags",
                       lambda: pc.extract_regex(pc.struct_field(envelope, "message"), PREFIX))
    body = pc.struct_field(prefix, "body")
    decode = steps.run("decode lines picked", lambda: pc.filter(body, pc.starts_with(body, "Decode batch")))
    figures = steps.run("decode figures", lambda: pc.extract_regex(decode, DECODE))
    steps.run("figures cast to numbers", lambda: [as_number(pc.struct_field(figures, name)) for name in NUMBERS])
    steps.run("times parsed", lambda: pc.strptime(pc.struct_field(prefix, "time"), "%Y-%m-%d %H:%M:%S", "s",
                                                  error_is_null=True))
    print(f"{len(lines)} lines, {len(decode)} decode lines typed, "
          f"{steps.wall - steps.first_wall:.2f} s wall, {steps.cpu - steps.first_cpu:.2f} s CPU, "
          f"{os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
