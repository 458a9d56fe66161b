"""`python -m logmine` is the `logmine` command."""

from .cli import run

run()
