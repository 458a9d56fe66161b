"""What `logmine follow` shows: the current run's status, redrawn in place on a terminal, one plain line
per change in a pipe, and the alerts as they come."""

from __future__ import annotations

import shutil
from typing import IO

from ..live.alerts import Alert, Sink
from ..live.follow import Commit
from .render import visible

CLEAR_LINE = "\x1b[2K"
# What a starting server is doing, by the kind of its last typed line.
PHASES = {
    "systemd_starting": "launching", "systemd_started": "launching", "server_args": "launching",
    "init_distributed_begin": "initialising torch distributed", "init_distributed_end": "loading weights",
    "load_weight_begin": "loading weights", "load_weight_end": "allocating the KV pool",
    "kv_cache_allocated": "allocating the KV pool", "memory_pool_end": "capturing CUDA graphs",
    "cuda_graph_begin": "capturing CUDA graphs", "cuda_graph_batch_sizes": "capturing CUDA graphs",
    "cuda_graph_end": "starting the HTTP server", "capacity": "starting the HTTP server",
    "hicache_host_alloc": "pinning the HiCache host pool", "uvicorn_started": "warming up",
    "uvicorn_startup": "warming up", "uvicorn_running": "warming up",
}
UP = "\x1b[{n}F"


def status_lines(status: dict | None, commit: Commit) -> list[str]:
    """The one-screen status: the run, its state and time, its KV pool, its serving figures."""
    if status is None:
        return [f"following: no run yet ({commit.lines:,} lines in the last commit)"]
    elapsed = _seconds(status.get("elapsed_s"))
    head = f"{status['source']} run {status['run']}: {status['state']}"
    if status["state"] == "starting":
        head += f" ({PHASES.get(status.get('last_event') or '', 'launching')}, {elapsed})"
    elif status.get("load_s") is not None:
        head += f" (ready after {_seconds(status['load_s'])}, up {elapsed})"
    else:
        head += f" ({elapsed})"
    lines = [head]
    if status.get("kv_tokens") is not None:
        lines.append(f"  KV pool: {status['kv_tokens']:,} tokens, {status['kv_gib'] or 0:.2f} GiB per rank")
    if status.get("gen_throughput_tok_s") is not None:
        usage = status.get("token_usage")
        lines.append(f"  serving: {status.get('running_req') or 0} running, {status.get('queue_req') or 0} queued, "
                     f"token usage {usage if usage is not None else '?'}, "
                     f"{status['gen_throughput_tok_s']:.1f} tok/s; {status.get('http_requests') or 0:,} requests")
    lines.append(f"  last commit: {commit.lines:,} lines in {commit.seconds * 1000:.0f} ms")
    return lines


class StatusView(Sink):
    """Redraws the status in place on a terminal; in a pipe, prints it as one line when it changed. As a
    sink, prints each alert above the status."""

    def __init__(self, stream: IO[str], tty: bool) -> None:
        self.stream, self.tty = stream, tty
        self.drawn = 0  # lines of the status on screen, below the alerts
        self.last: str | None = None

    def show(self, commit: Commit) -> None:
        lines = [visible(line, one_line=True) for line in status_lines(commit.status, commit)]
        if self.tty:
            width = shutil.get_terminal_size().columns
            self._erase()
            for line in lines:
                self.stream.write(line[:width] + "\n")
            self.drawn = len(lines)
        else:
            text = "; ".join(line.strip() for line in lines[:-1]) or lines[-1]
            if text != self.last:
                self.stream.write(text + "\n")
                self.last = text
        self.stream.flush()

    def above(self, text: str) -> None:
        """A line (an alert, a notice) printed above the status, which is drawn again at the next commit."""
        if self.tty:
            self._erase()
        self.stream.write(visible(text, one_line=True) + "\n")
        self.stream.flush()

    def send(self, alert: Alert) -> None:
        where = f" ({alert.evidence})" if alert.evidence else ""
        self.above(f"ALERT {alert.severity}: {alert.message}{where}")

    def _erase(self) -> None:
        if self.drawn:
            self.stream.write(UP.format(n=self.drawn) + "".join(CLEAR_LINE + "\n" for _ in range(self.drawn))
                              + UP.format(n=self.drawn))
            self.drawn = 0


def _seconds(value: float | None) -> str:
    if value is None:
        return "?"
    minutes, seconds = divmod(int(value), 60)
    return f"{minutes}m{seconds:02d}s" if minutes else f"{value:.0f}s"
