"""A TP=2 launch whose JSON events SGLang writes to per-rank files, and the same launch in SGLang's single log.

`--log-requests-target DIR` (the tokenizer manager's `request.received`/`request.finished`, written as rank 0:
torch.distributed is not initialised in that process) and `SGLANG_LOG_SCHEDULER_STATUS_TARGET=DIR` (each
scheduler's `scheduler.status`) open `DIR/<hostname>_<rank>.log` with `TimedRotatingFileHandler(when="H",
backupCount=0)` and the formatter `%(message)s` (`log_utils._create_log_target_file`); without a target the
events go to stdout, that is into the server's own log, the single-file shape. The server's own lines stay on
its stderr either way. The handler rolls a file over at its first write an hour or more after it opened it
(or last rolled it over), not at the top of the hour, and names the copy after the hour that interval began in.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from .shape_fixtures import HOST, Record, as_sglang, launch_records, request_records, status_record, write

RANKS = 2
DAY = datetime(2026, 3, 1, 22, 0, 0)
SERVED = timedelta(minutes=65)  # past the hour after the files were opened, so that each rolls over once
STATUS_EVERY = timedelta(minutes=10)  # SGLANG_LOG_SCHEDULER_STATUS_INTERVAL


def is_event(record: Record) -> bool:
    return record.raw and record.message.startswith("{")


def launch(ranks: int = RANKS, day: datetime = DAY) -> list[Record]:
    """The crashed and the served launch of `shape_fixtures`, the second serving an hour: every rank's status
    every ten minutes, and two requests after its files rolled over."""
    records = launch_records(day, tp=ranks, served=SERVED)
    ready = next(r.at for r in records if r.message.startswith("The server is fired up"))
    for n in range(1, SERVED // STATUS_EVERY + 1):
        records += [status_record(ready + n * STATUS_EVERY + timedelta(milliseconds=rank), rank, [f"q{rank}"])
                    for rank in range(ranks)]
    records += request_records(ready + timedelta(minutes=62), "late", 2)
    return sorted(records, key=lambda r: r.at)


def single_log(records: list[Record]) -> list[str]:
    """SGLang's own log of the launch, its events on stdout beside the server's lines."""
    return as_sglang(records)


def server_log(records: list[Record]) -> list[str]:
    """The server's own log when the events go to per-rank files: everything else."""
    return as_sglang([r for r in records if not is_event(r)])


def write_rank_files(folder: Path, records: list[Record], hosts: list[str] | None = None) -> list[Path]:
    """The files the launch's events go to, rank r's on `hosts[r]` (every rank on `HOST` by default): the
    request events in rank 0's, each scheduler's status in its rank's, each file rolled over hourly from when
    its rank's scheduler opened it at the first launch's start."""
    folder.mkdir(parents=True, exist_ok=True)
    events = [r for r in records if is_event(r)]
    ranks = len(hosts) if hosts else 1 + max(r.rank or 0 for r in records)
    opened = min(r.at for r in records)
    written = []
    for rank in range(ranks):
        name = f"{(hosts or [HOST] * ranks)[rank]}_{rank}.log"
        mine = [r for r in events if (r.rank or 0) == rank]
        for suffix, lines in hourly_files(mine, opened).items():
            written.append(write(folder / (name + suffix), lines))
    return written


def hourly_files(records: list[Record], opened: datetime) -> dict[str, list[str]]:
    """The lines of each file one handler leaves, by the suffix of its name ('' for the file it still writes):
    a rollover at the first write an hour or more after the interval began, the next interval from that write."""
    files: dict[str, list[str]] = {}
    lines: list[str] = []
    rollover_at = opened + timedelta(hours=1)
    for r in records:
        if r.at >= rollover_at:
            files[f".{rollover_at - timedelta(hours=1):%Y-%m-%d_%H}"] = lines
            lines, rollover_at = [], r.at + timedelta(hours=1)
        lines.append(r.message)
    files[""] = lines
    return files
