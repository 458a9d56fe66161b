"""Writing a command's output to a person: through a pager when it is longer than the terminal."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

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
