"""What a person sees of an ingest: its progress bar on a terminal and the summary printed after it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from .render import visible

if TYPE_CHECKING:
    from ..ingest.logs import Progress


def summary_text(summary: dict) -> str:
    """The human summary printed after an ingest."""
    out = []
    for s in summary["sources"]:  # one line per file, short enough for 80 columns: a fleet has many
        out.append(f"{visible(s['path'], one_line=True)}: {s['status']}, {s['format']}, "
                   f"{s['lines_read']:,} lines, {s['lines_untyped']:,} untyped")
        if s.get("note"):
            out.append(f"  {visible(s['note'], one_line=True)}")
        if s.get("new_shape"):
            out.append(f"  new shape: {visible(s['new_shape'], one_line=True)}")
        if s.get("lines_cut"):
            from ..parsers.limits import MAX_LINE_BYTES

            out.append(f"  {s['lines_cut']:,} lines longer than {MAX_LINE_BYTES.value():,} bytes stored cut to it "
                       "(they end in `…[logmine: line cut, N bytes]`)")
        if s.get("hole_bytes"):
            out.append(f"  {s['hole_bytes']:,} NUL bytes where lines begin dropped (the hole a copytruncate log "
                       "rotation leaves at a file's start, or a crash at its end)")
        if s["untimed_markers"]:
            out.append(f"  {s['untimed_markers']:,} start, stop or exit lines have no time of their own (as in "
                       "`journalctl -o cat`): runs may miss the times only they show")
    if summary["sources"]:  # a transcript alone, or inputs that all failed, read no log line
        out.append(f"total: {summary['lines_read']:,} lines read, {summary['lines_typed']:,} typed "
                   f"-> {summary['db']}")
    if summary["lines_untyped"]:
        out.append(f"  {summary['lines_untyped']:,} lines kept untyped: `logmine unparsed` groups them")
    for t in summary.get("transcripts", []):
        out.append(f"{visible(t['path'], one_line=True)}: {t['status']}, {t['format']}")
        out.append(f"  {t['sessions']} sessions, {t['messages']} messages, {t['tool_calls']} tool calls"
                   + (f", {t['unknown_records']} unknown records kept" if t["unknown_records"] else ""))
        out.extend(f"  skipped malformed input: {visible(p, one_line=True)}" for p in t["problems"][:20])
    if summary.get("transcripts") and not summary["sources"]:
        out.append(f"total: {len(summary['transcripts'])} transcript(s) -> {summary['db']}")
    out.extend(visible(line, one_line=True) for line in summary.get("left", []))
    if summary["failed"]:
        out.append(f"not stored, could not be read: {len(summary['failed'])} input(s) (listed on stderr)")
    if summary.get("db_removed"):
        out.append(f"nothing was stored: {summary['db']} was not made")
    kinds = summary["by_kind"]
    if kinds:
        width = max(len(k) for k in kinds)
        out.append("lines by event kind:")
        out.extend(f"  {kind:<{width}}  {count:>10,}" for kind, count in kinds.items())
    return "\n".join(out)


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[Progress | None]:
    """A rich progress bar on a terminal (stderr); nothing when output is piped."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, TimeRemainingColumn
    from rich.progress import Progress as RichProgress

    with RichProgress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                      TimeRemainingColumn(), transient=True) as bar:
        tasks: dict[str, int] = {}

        def update(name: str, done: int, total: int | None) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(visible(name, one_line=True), total=total)
            bar.update(tasks[name], completed=done)

        yield update
