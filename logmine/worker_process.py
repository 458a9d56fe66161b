"""How the parse worker process is started: forked from a server that has already loaded the parser.

Starting Python and importing pyarrow, numpy and the parser takes most of a second. A forkserver pays
that once, in the background: the `logmine ingest` command starts it before loading the CLI itself, so
the two overlap, and each worker is then a fork of a process that has nothing else running. Where
there is no forkserver (Windows), workers are spawned.

This module imports nothing heavy, so that starting the server early costs the command nothing.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.context import BaseContext

PRELOAD = ["logmine.ingest"]


def worker_context() -> BaseContext:
    """The multiprocessing context parse workers are started from."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def start_early() -> None:
    """Start the forkserver now, so that it loads the parser while the caller loads the rest."""
    if worker_context().get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()
