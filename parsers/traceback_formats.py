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
# An exception's type is a name ending in one of these, or a dotted name whose last part has a capital.
EXCEPTION_SUFFIXES = ("Error", "Exception", "Exit", "Interrupt", "Warning", "Failure")

# The shape of a raw line: the first whose starts it has (`stripped`: read after leading spaces). A blank
# line is `blank`, an exception line (see EXCEPTION_SUFFIXES) `exception`, any other `other`.
SHAPE_STARTS: tuple[tuple[str, bool, tuple[str, ...]], ...] = (
    ("file", False, ('  File "', 'File "')),
    ("code", False, ("    ", "\t")),
    ("chain", True, ("During handling of the above exception", "The above exception was the direct cause")),
    ("restart", True, ("Traceback (most recent call last)",)),
    ("abort", False, ("  what():", "frame #", "Exception raised from", "Extension modules:")),
    ("fatal", False, ("Fatal Python error",)),
    ("thread", False, ("Thread 0x", "Current thread 0x")),
)

# Which shapes may follow which: the last shape of a traceback -> shapes it accepts next.
ACCEPTS = {
    "header": {"file", "exception", "abort", "restart"},
    "file": {"code", "file", "exception"},
    "code": {"code", "file", "exception"},
    "exception": {"other", "blank", "chain", "code"},
    "other": {"other", "blank", "chain", "code", "exception"},
    "chain": {"blank", "restart"},
    "blank": {"restart", "chain"},
    "restart": {"file", "exception"},
    "abort": {"abort", "other", "code", "blank", "fatal", "thread", "file"},
    # faulthandler's dump after an abort: `Thread 0x… (most recent call first):` and `  File "…", line N in f`.
    "fatal": {"blank", "thread", "file", "abort"},
    "thread": {"file", "blank", "thread"},
}
# The shape each state most expects next: used first, to separate interleaved tracebacks.
EXPECTS = {"header": {"file"}, "restart": {"file"}, "file": {"code"}, "code": {"file", "exception"},
           "exception": {"blank"}, "chain": {"blank"}, "blank": {"restart"}}
# After an abort, file lines may follow thread headers, and blank lines separate the threads' stacks.
ABORT_ACCEPTS = {**ACCEPTS, "file": {"file", "blank", "thread", "abort", "fatal"},
                 "blank": {"thread", "fatal", "abort", "blank"}, "other": {"blank", "abort", "fatal"}}
# The shapes a traceback may end on once its exception (or an abort's message) is known.
COMPLETE_AFTER = ("exception", "other", "blank", "abort", "file")
