"""A process-wide allocator setting for the processes logmine owns: the CLI and the parse worker."""

from __future__ import annotations

import ctypes
import sys

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters
M_MMAP_THRESHOLD = -3


def reuse_freed_memory() -> None:
    """Keep freed blocks in glibc's heap for reuse instead of handing them back to the system.

    Every batch allocates arrays of the same large sizes again, and fresh pages cost a page fault each:
    about a fifth of the time spent typing batch statistics. The library does not call this, since a
    caller's process (a notebook kernel) would keep that memory afterwards.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc
        return
    mallopt(M_MMAP_THRESHOLD, 256 << 20)
    mallopt(M_TRIM_THRESHOLD, 512 << 20)
