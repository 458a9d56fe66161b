"""How the parse worker process is started: forked from a server that has already loaded the parser.

Starting Python and importing pyarrow, numpy and the parser takes most of a second. A forkserver pays
that once, in the background: the `logmine ingest` command starts it before loading the CLI itself, so
the two overlap, and each worker is then a fork of a process that has nothing else running. Where
there is no forkserver (Windows), workers are spawned.

This module imports nothing heavy, so that starting the server early costs the command nothing.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
from multiprocessing.context import BaseContext

PRELOAD = ["logmine.ingest"]


def worker_context() -> BaseContext:
    """The multiprocessing context parse workers are started from."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    _ensure_server()
    return context


def start_early() -> None:
    """Start the forkserver now, so that it loads the parser while the caller loads the rest."""
    worker_context()


def _ensure_server() -> None:
    """Start the forkserver ignoring Ctrl-C, and so its workers: the main process answers it (a worker
    interrupted by the terminal's SIGINT printed its traceback; the main process stops it)."""
    from multiprocessing import forkserver

    if threading.current_thread() is not threading.main_thread():
        forkserver.ensure_running()
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited by the server through exec
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, previous)
