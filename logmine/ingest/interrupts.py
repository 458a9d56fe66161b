"""Ctrl-C during `logmine ingest`: noted by a signal handler, acted on where stopping is clean.

Raising KeyboardInterrupt wherever the signal lands interrupted DuckDB mid-query (a 52-line `Query
interrupted` traceback), a rollback after the commit had finished, or an import. Instead the handler only
notes the request; the ingest checks it between batches and files, rolls back and stops, and a request that
comes during the commit is answered after it, truthfully: the database then holds the new data.
Nothing is installed unless the command line asks for it (`install`), so the library in a notebook keeps
Python's usual KeyboardInterrupt.
"""

from __future__ import annotations

import signal

_requested = False


class Interrupted(BaseException):  # noqa: N818 - like KeyboardInterrupt, which it replaces; not an Exception,
    """The user pressed Ctrl-C; `committed` says whether the database holds the new data."""  # so no input guard

    def __init__(self, committed: bool) -> None:
        super().__init__("interrupted")
        self.committed = committed

    def message(self) -> str:
        if self.committed:
            return "interrupted after the commit: the database holds the new data"
        return "interrupted: nothing was stored, the database is as it was"


def install() -> None:
    """Note Ctrl-C instead of raising KeyboardInterrupt wherever it lands."""
    signal.signal(signal.SIGINT, _note)


def ignore_from_now() -> None:
    """The command has finished and said so: a Ctrl-C now has nothing left to stop. Ignored, it cannot kill
    the process while the interpreter tears down, where Python puts back the default handler in place of
    `_note` (the process died of SIGINT, its database complete, its exit status saying otherwise)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _note(signum: int, frame: object) -> None:
    global _requested
    _requested = True


def check(committed: bool = False) -> None:
    """Stop here if Ctrl-C was pressed."""
    if _requested:
        raise Interrupted(committed)
