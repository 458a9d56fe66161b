"""Writing a command's output to a person: through a pager when it is longer than the terminal."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable

import click

from .render import visible

# less: quit if it fits one screen, pass colours through, chop long lines (no wrap), leave the screen as is.
LESS_FLAGS = "FRSX"


def emit(text: str, pager: bool = True) -> None:
    """Print `text`; on a terminal, with characters that would act on it shown as escapes (CSV keeps a log
    line's escape sequences, which must not set the clipboard) and through $PAGER (else `less -FRSX`)
    when it has more lines than fit."""
    if sys.stdout.isatty():
        text = visible(text)
    if pager and sys.stdout.isatty() and text.count("\n") + 1 >= shutil.get_terminal_size().lines:
        command = shlex.split(os.environ.get("PAGER") or "less")
        if shutil.which(command[0]) and command[0] != "cat":
            page(command, text)
            return
    click.echo(text)


def emit_pieces(pieces: Iterable[str]) -> None:
    """Print text given piece by piece as it is made (a large CSV or JSON result), without a pager; a
    reader that stops early (`| head`) ends the command quietly, as it would a program killed by SIGPIPE."""
    shown = sys.stdout.isatty()
    try:
        for piece in pieces:
            click.echo(visible(piece) if shown else piece, nl=False)
        click.echo()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more reaches the closed pipe
        sys.exit(141)


def page(command: list[str], text: str) -> None:
    env = dict(os.environ)
    env.setdefault("LESS", LESS_FLAGS)
    with subprocess.Popen(command, stdin=subprocess.PIPE, env=env) as pager:
        try:
            assert pager.stdin is not None
            pager.stdin.write((text + "\n").encode())
            pager.stdin.close()
        except BrokenPipeError:  # the reader quit the pager before reading everything
            pass
        while True:
            try:
                pager.wait()
                break
            except KeyboardInterrupt:  # Ctrl-C belongs to less (it stops a search), not to us
                continue
