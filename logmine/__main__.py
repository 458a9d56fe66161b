"""`python -m logmine` and the `logmine` command.

The command's entry point lives here, not in `cli`, so that importing it is cheap: an ingest into a new
database starts the parse worker's server first (`worker.processes`), which then loads the parser while
this process loads the CLI.
"""

import sys
from pathlib import Path

from .store import DEFAULT_DB
from .worker.processes import single_threaded_blas


def database_argument(args: list[str]) -> str:
    """The `--db` of a command line (click's `--db FILE` or `--db=FILE`), before click has read it."""
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--db" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--db="):
            return arg[len("--db="):]
    return DEFAULT_DB


def start() -> None:
    if sys.argv[1:2] == ["ingest"]:
        from . import interrupts

        interrupts.install()  # first: a Ctrl-C while the modules load must not print an import's traceback
    single_threaded_blas()
    if sys.argv[1:2] == ["ingest"] and not Path(database_argument(sys.argv[2:])).exists():
        # A first ingest reads every input whole, so a large one is parsed by the worker. Into an existing
        # database the ingest may read only what was appended since (10,000 lines need no worker, and its
        # server's imports would take the core this process needs): the server starts once it is needed.
        from .worker.processes import start_early

        start_early()
    from .cli import start as start_cli

    start_cli()


if __name__ == "__main__":
    start()
