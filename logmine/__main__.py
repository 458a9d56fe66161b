"""`python -m logmine` and the `logmine` command.

The command's entry point lives here, not in `cli`, so that an ingest notes Ctrl-C before anything
loads. The CLI itself loads nothing heavy until a command runs: `ingest` then starts the parse worker's
server when a worker is likely, before it loads the parser (`worker.processes`).
"""

import sys

from .ingest.worker.processes import single_threaded_blas


def start() -> None:
    ingest = sys.argv[1:2] == ["ingest"]
    if ingest:
        from .ingest import interrupts

        interrupts.install()  # first: a Ctrl-C while the modules load must not print an import's traceback
    single_threaded_blas()
    from .cli import start as start_cli

    try:
        start_cli()
    finally:
        if ingest:
            interrupts.ignore_from_now()


if __name__ == "__main__":
    start()
