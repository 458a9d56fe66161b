"""Process-wide settings for the processes logmine owns during an ingest: the CLI and the parse worker.

The library never applies them to a caller's process (a notebook kernel would keep the memory, and
its objects would escape the garbage collector).
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters
M_MMAP_THRESHOLD = -3


def single_threaded_blas() -> None:
    """Ask numpy's OpenBLAS for no thread pool; call before numpy is imported.

    logmine makes no BLAS calls, yet the pool's threads took ~2% of both cores, which the parse worker
    and the DuckDB appends already fill.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def tune_for_ingest() -> None:
    """Reuse freed memory, and stop scanning the objects that exist now for garbage cycles.

    Every batch allocates arrays of the same large sizes again, and fresh pages cost a page fault
    each. glibc is told to keep freed blocks in its heap, and Arrow's buffers are moved there too:
    Arrow's default pool (mimalloc) hands freed pages back within milliseconds, which cost the parse
    worker a third of its CPU time. Freezing the objects of the imported modules keeps the collector's
    full passes, triggered by the batches' short-lived objects, from walking them every time.
    """
    gc.freeze()
    if not sys.platform.startswith("linux"):
        return
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc
        return
    mallopt(M_MMAP_THRESHOLD, 256 << 20)
    mallopt(M_TRIM_THRESHOLD, 512 << 20)


def release_free_memory() -> None:
    """Hand the heap's free pages back to the system (glibc), which `tune_for_ingest` tells to keep them.

    A transcript's batches hold texts of every size, freed for good after they are stored; kept, their
    pages grew the process by the size of the transcript (1.3 GB for 200 MB).
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        return
