"""Run a parse in the worker process and take its batches in the main process.

The worker knows nothing of logs: it is handed a picklable plan, the function that parses it into
batches, and the function that finishes typing a batch. A batch is any object with `tables` (table
name → Arrow table) and `final` (the last batch of the input).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import queue as queue_errors
import signal
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from .processes import caller_main_hidden, tune_for_ingest, worker_context
from .slots import SharedSlots

WORKER_QUEUE = 2  # batches parsed ahead of the main process
Tables = dict[str, pa.Table]


class WorkerParse:
    """`parse(plan)` in a second process, so parsing and the DuckDB appends use both cores.

    The worker starts when this is made; iterating yields its batches in the main process, and `close`
    stops it if it has not finished (Ctrl-C, a failed append, a parse no longer wanted). Batches come
    through shared slots (`slots`), each handed back once the next batch is asked for; a batch too large
    for a slot, or every batch when no slot file could be made, comes through the queue. Both are
    bounded: the worker waits while the database falls behind, keeping memory flat. While the main
    process has a batch waiting, the worker also applies `finish_typing`, so that the main process need
    not.
    """

    def __init__(self, plan: object, parse: Callable[[Any], Iterator[Any]],
                 finish_typing: Callable[[Tables], Tables]) -> None:
        context = worker_context()
        self._queue = context.Queue(maxsize=WORKER_QUEUE)
        self._free = context.Queue()
        self._slots = SharedSlots.create(WORKER_QUEUE + 1)
        for slot in range(self._slots.slots if self._slots else 0):
            self._free.put(slot)
        self._process = context.Process(target=_parse_worker,
                                        args=(plan, parse, finish_typing, self._queue, self._slots, self._free),
                                        daemon=True)
        self._finished = False
        try:
            with caller_main_hidden():
                self._process.start()
        except BaseException:
            self.close()
            raise

    def __iter__(self) -> Iterator[Any]:
        while not self._finished:
            item = self._next_item()
            if isinstance(item, BaseException):
                raise item
            parsed, layout = item
            if layout is not None:
                parsed.tables = self._slots.read(layout)
            self._finished = parsed.final
            yield parsed
            if layout is not None and not self._finished:
                self._free.put(layout.slot)

    def _next_item(self) -> Any:
        """The worker's next batch or error; `WorkerDied` if it is gone without sending one (killed, out
        of memory, or it failed to start), where waiting for it would wait for ever."""
        while True:
            try:
                return self._queue.get(timeout=1)
            except queue_errors.Empty:
                if self._process.is_alive():
                    continue
            try:  # what it sent before it ended is in the pipe already
                return self._queue.get(timeout=0.5)
            except queue_errors.Empty:
                raise WorkerDied(self._process.exitcode) from None

    def close(self) -> None:
        if not self._finished and self._process.pid is not None:  # its batches are not wanted
            self._process.kill()
        if self._process.pid is not None:
            self._process.join(timeout=5)
            if self._process.is_alive():
                self._process.kill()
        if self._slots:
            self._slots.remove()
            self._slots = None


class WorkerDied(RuntimeError):
    """The parse worker ended without sending its next batch."""

    def __init__(self, exitcode: int | None) -> None:
        if exitcode is not None and exitcode < 0:
            try:
                name = signal.Signals(-exitcode).name
            except ValueError:
                name = f"signal {-exitcode}"
            how = f"was killed by {name}" + (" (as by the out-of-memory killer)" if name == "SIGKILL" else "")
        else:
            how = f"exited with status {exitcode}"
        super().__init__(f"the parse worker process {how} before it finished")


def _parse_worker(plan: object, parse: Callable[[Any], Iterator[Any]], finish_typing: Callable[[Tables], Tables],
                  queue: multiprocessing.Queue, slots: SharedSlots | None, free: multiprocessing.Queue) -> None:
    """Parse and send batches; give up if the main process dies (killed), since nobody would read them."""
    tune_for_ingest()
    if slots:
        slots.attach()
        slots.remove()  # both processes have it mapped: a killed ingest leaves no file behind
    try:
        for parsed in parse(plan):
            if _has_backlog(queue):
                # The main process is behind: finish typing the batch here, so that it need not.
                parsed.tables = finish_typing(parsed.tables)
            layout = None
            if slots:
                slot = _patiently(free.get)
                layout = slots.write(slot, parsed.tables)
                if layout is None:
                    free.put(slot)
                else:
                    parsed.tables = {}
            _patiently(queue.put, (parsed, layout))
    except MainProcessGone:
        return
    except BaseException as exc:  # reported to, and raised in, the main process
        with contextlib.suppress(MainProcessGone):
            _patiently(queue.put, exc)


def _has_backlog(queue: multiprocessing.Queue) -> bool:
    """Whether a sent batch is still waiting for the main process (never, where qsize is unknown: macOS)."""
    try:
        return queue.qsize() > 0
    except NotImplementedError:
        return False


class MainProcessGone(Exception):
    pass


def _patiently(call: Callable, *args: object) -> object:
    """A blocking queue `get` or `put` that stops waiting once the main process is gone."""
    while True:
        try:
            return call(*args, timeout=1)
        except (queue_errors.Empty, queue_errors.Full):
            if not multiprocessing.parent_process().is_alive():
                raise MainProcessGone from None
