"""Tracebacks: group the unprefixed lines of Python tracebacks, C++ aborts and faulthandler dumps into one
error each, even when several ranks' tracebacks interleave. The grammar is `traceback_formats`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from . import traceback_formats as grammar

CXX_ABORT_START = re.compile(grammar.CXX_ABORT_START)
FATAL_START = re.compile(grammar.FATAL_START)
WORD = re.compile(r"\w+")
SHELL_PROMPT = re.compile(grammar.SHELL_PROMPT)


def opens_traceback(text: str) -> bool:
    return grammar.TRACEBACK_HEADER in text


def traceback_origin(text: str) -> str | None:
    """`Scheduler` in `Scheduler hit an exception: Traceback (most recent call last):`, else None.

    The word is read backwards from the header: a regex searching for it took time quadratic in the
    length of a long run of word characters.
    """
    before = text[:text.find(grammar.TRACEBACK_HEADER)]
    if not before.endswith(grammar.TRACEBACK_ORIGIN_SUFFIX):
        return None
    word = WORD.match(before[:-len(grammar.TRACEBACK_ORIGIN_SUFFIX)][::-1])
    return word[0][::-1] if word else None


def could_start_error(body: str) -> bool:
    """Whether a line opens a Python traceback, a C++ abort or a faulthandler dump."""
    return bool(opens_traceback(body) or CXX_ABORT_START.match(body) or FATAL_START.match(body))


DOTTED_NAME = re.compile(r"[\w.]+")
UPPERCASE = re.compile(r"[A-Z]")


def exception_line(text: str) -> tuple[str, str | None] | None:
    """(type, message) of `ValueError: bad value` or `torch.OutOfMemoryError`, else None.

    The type is a name ending in Error, Exception, ... or a dotted name whose last part has a capital.
    Read without a backtracking regex, which took time quadratic in the length of a long dotted name.
    """
    name = DOTTED_NAME.match(text)
    if not name or not (name.end() == len(text) or text.startswith(": ", name.end())):
        return None
    kind = name[0]
    first = kind[0]
    named = kind in grammar.UNSUFFIXED_EXCEPTIONS or (first == "_" or first.isascii() and first.isalpha()) and \
        any(kind.endswith(s) and len(kind) > len(s) for s in grammar.EXCEPTION_SUFFIXES)
    dotted = (first == "_" or "a" <= first <= "z") and "." in kind and UPPERCASE.search(kind.rsplit(".", 1)[1])
    if not (named or dotted):
        return None
    return kind, text[name.end() + 2:] if name.end() < len(text) else None


OOM = re.compile(grammar.OOM_TEXT, re.IGNORECASE)
HOST_MEMORY = re.compile(grammar.HOST_MEMORY_TEXT)
MAX_TRACEBACK_LINES = 5000
# One traceback per rank may be open at once; beyond this many the oldest is closed, since every line
# offered is weighed against each open one.
MAX_OPEN_TRACEBACKS = 1024


@dataclass
class OpenError:
    first_line_no: int
    origin: str | None
    context: dict[str, object]
    is_abort: bool = False
    lines: list[str] = field(default_factory=list)
    last_line_no: int = 0
    last_shape: str = "header"
    exception_type: str | None = None
    exception_message: str | None = None
    headline: str | None = None  # the line saying why it failed, once read: its `last_line`
    idle: int = 0

    def accepts(self) -> set[str]:
        """The shapes this error takes next, in the state it is in."""
        return (grammar.ABORT_ACCEPTS if self.is_abort else grammar.ACCEPTS)[self.last_shape]

    def is_finished(self) -> bool:
        """Its reason is known and it stands where it may end."""
        return self.headline is not None and self.last_shape in grammar.COMPLETE_AFTER

    def note_exception(self, kind: str, message: str | None) -> None:
        self.exception_type, self.exception_message = kind, message
        self.headline = f"{kind}: {message}" if message else kind


def line_shape(line: str) -> str:
    """What part of a traceback a raw line is: file, code, exception, chain, blank or other (see
    `traceback_formats.SHAPE_STARTS`)."""
    stripped = line.strip()
    if not stripped:
        return "blank"
    for shape, after_spaces, starts in grammar.SHAPE_STARTS:
        if (stripped if after_spaces else line).startswith(starts):
            return shape
    if exception_line(stripped):
        return "exception"
    if SHELL_PROMPT.match(line):
        return "prompt"  # a shell's prompt, pasted with the log: the traceback before it is over
    return "other"


class TracebackAssembler:
    """Collect unprefixed traceback lines into errors; several may be open at once (one per rank)."""

    def __init__(self) -> None:
        self.open: list[OpenError] = []
        # Closed between ticks, not yet taken: for want of room (MAX_OPEN_TRACEBACKS) or ended by their last line.
        self.closed: list[OpenError] = []

    def start(self, body: str, line_no: int, context: Callable[[], dict[str, object]]) -> bool:
        """Open an error when `body` begins a traceback, a C++ abort or a faulthandler dump; returns whether it did.

        `context` gives the common columns of the line (only asked for when an error opens).
        """
        if opens_traceback(body):
            err = OpenError(line_no, traceback_origin(body), context(), last_shape="header")
        elif m := CXX_ABORT_START.match(body):
            # The thrown type is both who reported it and the exception; `what():` gives its message.
            err = OpenError(line_no, m["origin"], context(), is_abort=True, last_shape="abort",
                            exception_type=m["origin"])
        elif m := FATAL_START.match(body):
            err = OpenError(line_no, m["origin"], context(), is_abort=True, last_shape="fatal",
                            headline=body.strip())
        else:
            return False
        err.lines, err.last_line_no = [body], line_no
        # A new error is a boundary like a prefixed line: the text printed after it is not a finished one's.
        finished = [e for e in self.open if e.is_finished()]
        self.open = [e for e in self.open if not e.is_finished()]
        self.closed += finished
        if len(self.open) >= MAX_OPEN_TRACEBACKS:
            self.closed.append(self.open.pop(0))
        self.open.append(err)
        return True

    def take_closed(self) -> list[OpenError]:
        taken, self.closed = self.closed, []
        return taken

    def feed(self, line: str, line_no: int) -> OpenError | None:
        """Offer an unprefixed line; returns the error it joined, or None when it belongs to none."""
        if not self.open or CXX_ABORT_START.match(line):
            return None  # a new abort begins; the caller opens it
        shape = line_shape(line)
        if opens_traceback(line) and shape != "restart":
            return None  # `<origin> hit an exception: Traceback …` always begins a new error
        err = self._owner(shape)
        if err is None:
            return None  # a bare `Traceback …` no chain waits for, a `Fatal Python error` no abort ends with
        err.lines.append(line)
        err.last_line_no = line_no
        err.idle = 0
        self._read_reason(err, shape, line)
        err.last_shape = grammar.NEXT_STATE.get((err.last_shape, shape), shape)
        if not err.accepts():
            self._close(err)
        return err

    @staticmethod
    def _read_reason(err: OpenError, shape: str, line: str) -> None:
        """Note the exception line of a traceback or the `what():` message of an abort."""
        if shape == "exception" and err.last_shape in ("file", "code", "header", "restart", "other"):
            found = exception_line(line.strip())
            if found:
                err.note_exception(*found)
        elif shape == "what" and err.is_abort and err.exception_type and err.exception_message is None:
            err.note_exception(err.exception_type, line.strip().removeprefix("what():").strip())

    def _close(self, err: OpenError) -> None:
        self.open = [e for e in self.open if e is not err]
        self.closed.append(err)

    def _owner(self, shape: str) -> OpenError | None:
        """The open error this line most likely continues.

        Interleaved tracebacks of several ranks are told apart by what each expects next (a code line
        after a File line, say); Python tracebacks are tried oldest first, C++ aborts newest first,
        since aborts of several ranks print one after another. Among those that merely accept the line,
        one still reading its stack goes before one past its reason: a finished traceback takes the text
        printed after it, not the code lines of the next traceback.
        """
        candidates = [e for e in self.open if not e.is_abort] + [e for e in reversed(self.open) if e.is_abort]
        candidates = [e for e in candidates if len(e.lines) < MAX_TRACEBACK_LINES]
        for err in candidates:
            if shape in grammar.EXPECTS.get(err.last_shape, ()):
                return err
        for err in sorted(candidates, key=lambda e: e.headline is not None):  # stable: keeps the order above
            if shape in err.accepts():
                return err
        return None

    def tick(self) -> list[OpenError]:
        """Called for every prefixed line: close errors that are complete or have gone quiet."""
        done = []
        for err in self.open:
            err.idle += 1
            if err.is_finished() or err.idle > 200:
                done.append(err)
        if done:
            closed = {id(e) for e in done}  # by identity: comparing the dataclasses field by field was quadratic
            self.open = [e for e in self.open if id(e) not in closed]
        return done

    def close_all(self) -> list[OpenError]:
        done, self.open = self.open, []
        return done


def error_fields(err: OpenError) -> dict[str, object]:
    """The `errors` row of a finished traceback or abort."""
    lines = err.lines
    while len(lines) > 1 and not lines[-1].strip():
        lines = lines[:-1]
    text = "\n".join(lines)
    if OOM.search(text):
        kind = "oom"
    elif HOST_MEMORY.search(text):
        kind = "host_memory"
    elif err.is_abort:
        kind = "abort"
    else:
        kind = "exception"
    last = err.headline or unexplained_reason(err, lines)
    return {
        "error_kind": kind, "origin": err.origin, "exception_type": err.exception_type,
        "exception_message": err.exception_message, "last_line": last, "first_line_no": err.first_line_no,
        "last_line_no": err.last_line_no, "n_lines": len(err.lines), "text": text,
    }


def unexplained_reason(err: OpenError, lines: list[str]) -> str:
    """The line that says most of an error whose exception line or message never came: an abort's
    `terminate called …` (its dump's lines say nothing of why), else the traceback's last line."""
    if err.is_abort:
        return lines[0].strip()
    return next((ln.strip() for ln in reversed(lines) if ln.strip()), "")
