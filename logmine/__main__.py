"""`python -m logmine` and the `logmine` command.

The command's entry point lives here, not in `cli`, so that importing it is cheap: an ingest starts
the parse worker's server first (`worker.processes`), which then loads the parser while this process
loads the CLI.
"""

import sys

from .worker.processes import single_threaded_blas


def start() -> None:
    if sys.argv[1:2] == ["ingest"]:
        from . import interrupts

        interrupts.install()  # first: a Ctrl-C while the modules load must not print an import's traceback
    single_threaded_blas()
    if sys.argv[1:2] == ["ingest"]:
        from .worker.processes import start_early

        start_early()
    from .cli import start as start_cli

    start_cli()


if __name__ == "__main__":
    start()
