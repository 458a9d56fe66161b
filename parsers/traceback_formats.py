"""The grammar of Python tracebacks, C++ aborts and faulthandler dumps, as data.

`tracebacks.py` reads unprefixed lines with it. Sources: ../shared/docs/sglang-log-formats.md §5.
"""

from __future__ import annotations

# A traceback opens with this header, after `<origin> hit an exception: ` when SGLang reports it.
TRACEBACK_HEADER = "Traceback (most recent call last):"
TRACEBACK_ORIGIN_SUFFIX = " hit an exception: "
# A C++ abort and a faulthandler dump open with these (plain text, no regex characters).
CXX_ABORT_OPENING = "terminate called after throwing an instance of '"
FATAL_OPENING = "Fatal Python error: "
CXX_ABORT_START = CXX_ABORT_OPENING + r"(?P<origin>[^']+)'"
FATAL_START = FATAL_OPENING + r"(?P<origin>.+)"
# What makes an error an out-of-memory or a host-memory one, found anywhere in its text.
OOM_TEXT = r"out of memory|OutOfMemoryError"
HOST_MEMORY_TEXT = r"Not enough host memory"
# An exception's type is a name ending in one of these, or a dotted name whose last part has a capital, or
# one of the builtin names that end in none of them (`Exception: Server process exited ...`).
EXCEPTION_SUFFIXES = ("Error", "Exception", "Exit", "Interrupt", "Warning", "Failure")
UNSUFFIXED_EXCEPTIONS = ("Exception", "StopIteration", "StopAsyncIteration")

# The shape of a raw line: the first whose starts it has (`stripped`: read after leading spaces). A blank
# line is `blank`, an exception line (see EXCEPTION_SUFFIXES) `exception`, any other `other`.
# A C++ abort prints `what():` (its message), then `Exception raised from` and `frame #N` lines; when
# faulthandler is on, Python then dumps `Fatal Python error: <signal>`, each thread's stack (`Thread 0x…`,
# `Current thread 0x…`, `  File "…", line N in f`) and, since 3.10, the `Extension modules: …` trailer.
SHAPE_STARTS: tuple[tuple[str, bool, tuple[str, ...]], ...] = (
    ("file", False, ('  File "', 'File "', "  <no Python frame>")),
    ("code", False, ("    ", "\t")),
    ("chain", True, ("During handling of the above exception", "The above exception was the direct cause")),
    ("restart", True, ("Traceback (most recent call last)",)),
    ("what", False, ("  what():",)),
    ("frame", False, ("frame #", "Exception raised from", "<omitting python frames>")),
    ("fatal", False, ("Fatal Python error",)),
    ("thread", False, ("Thread 0x", "Current thread 0x")),
    ("trailer", False, ("Extension modules:",)),
)

# A shell's prompt before a command, as pasted logs show it (`$ python -m sglang.launch_server ...`,
# `root@mi300x:/sgl-workspace# export X=1`, `(venv) user@box:~$ ...`): shape `prompt`, which no traceback
# accepts.
SHELL_PROMPT = r"(?:\([\w.-]+\) )?(?:[\w.-]+@[\w.-]+:[^\s$#]*)?[$#] \S"

# Which shapes may follow which in a Python traceback: its state (the last shape, see NEXT_STATE) ->
# shapes it accepts next. A chained traceback's own `Traceback (most recent call last):` continues the
# error only right after the chain sentence and its blank line. Lines of a multi-line message that look like
# an exception line (`ncclSystemError: System call ... failed`) continue the message.
ACCEPTS = {
    "header": {"file", "exception"},
    "file": {"code", "file", "exception"},
    "code": {"code", "file", "exception"},
    "exception": {"other", "blank", "chain", "code", "exception", "frame"},
    "other": {"other", "blank", "chain", "code", "exception", "frame"},
    # A C++ exception's trailer inside the message (`Exception raised from …`, `frame #N: …`) ends it: the
    # next `Traceback (most recent call last):` is another error.
    "frame": {"frame", "blank"},
    "chain": {"blank", "restart"},
    "blank": {"chain"},
    "chain_blank": {"restart"},
    "restart": {"file", "exception"},
}
# The same for a C++ abort (state `abort` after its `terminate called …` line) or a faulthandler dump
# (state `fatal`). Lines after `what():` that are not frames continue its message. The trailer ends the
# dump: what follows belongs to someone else (the next rank's abort, a library's log line).
ABORT_ACCEPTS = {
    "abort": {"what", "frame", "blank", "fatal"},
    "what": {"other", "code", "frame", "blank", "fatal"},
    "other": {"other", "code", "frame", "blank", "fatal"},
    "code": {"other", "code", "frame", "blank", "fatal"},
    "frame": {"frame", "blank", "fatal"},
    "blank": {"frame", "fatal", "thread", "blank", "trailer"},
    "fatal": {"blank", "thread", "file", "trailer"},
    "thread": {"file", "blank", "thread"},
    "file": {"file", "blank", "thread", "fatal", "trailer"},
    "trailer": set(),
}
# A state named apart from its shape: the blank line after a chain sentence, before the next traceback.
NEXT_STATE = {("chain", "blank"): "chain_blank"}
# The shape each state most expects next: used first, to separate interleaved tracebacks.
EXPECTS = {"header": {"file"}, "restart": {"file"}, "file": {"code"}, "code": {"file", "exception"},
           "exception": {"blank"}, "blank": {"chain"}, "chain": {"blank"}, "chain_blank": {"restart"}}
# The states an error may end in once its reason (exception line, `what():` message, fatal signal) is known.
COMPLETE_AFTER = ("exception", "other", "blank", "what", "frame", "trailer", "file")
