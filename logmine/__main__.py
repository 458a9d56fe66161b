"""`python -m logmine` and the `logmine` command.

The command's entry point lives here, not in `cli`, so that importing it is cheap: a spawned parse
worker re-imports the program's main module, and should not load the whole CLI to do so.
"""


def run() -> None:
    from .cli import run as cli_run

    cli_run()


if __name__ == "__main__":
    run()
