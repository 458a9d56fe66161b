"""How the parse worker process is started, and the process-wide settings of the processes an ingest owns.

Starting Python and importing pyarrow, numpy and the parser takes most of a second. A forkserver pays
that once, in the background: the `logmine ingest` command starts it before it loads the parser itself,
when a worker is likely (`worker_likely`), so the two overlap, and each worker is then a fork of a process
that has nothing else running. Where there is no forkserver (Windows), workers are spawned.

The settings (`single_threaded_blas`, `arrow_without_pandas`, `tune_for_ingest`) apply to the CLI and the
parse worker only: the library never applies them to a caller's process (a notebook kernel would keep the
memory, and its objects would escape the garbage collector).

This module imports nothing heavy, so that starting the server early costs the command nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import os
import signal
import sys
import threading
import types
from collections.abc import Iterator
from multiprocessing.context import BaseContext

PRELOAD = ["logmine.ingest.worker.preload"]  # the parser, without pandas
# Inputs with this much left to read are parsed in a worker process; less is not worth starting one.
WORKER_MIN_BYTES = 32 << 20
M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters
M_MMAP_THRESHOLD = -3


def worker_context() -> BaseContext:
    """The multiprocessing context parse workers are started from."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    _ensure_server()
    return context


@contextlib.contextmanager
def caller_main_hidden() -> Iterator[None]:
    """While a worker starts, hide the caller's main module from multiprocessing, which would have the
    worker run that script again first: all of a script that calls `api.ingest` without a `__name__`
    guard, and, for a script read from stdin (`python - < job.py`), a file named `<stdin>` that does not
    exist, which killed the worker before its first batch. A parse worker needs nothing from it."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def start_early() -> None:
    """Start the forkserver now, so that it loads the parser while the caller loads the rest."""
    worker_context()


def worker_likely(paths: list[str], db: str) -> bool:
    """Whether an ingest of `paths` into `db` will probably parse in a worker: some file has
    WORKER_MIN_BYTES or more that the database has not read. Then the server is worth starting before
    anything else (`start_early`); when the guess is wrong, the ingest starts it when it needs it.

    Appending a few lines to a stored journal must not pay for the server's imports (0.7 s of CPU on the
    core that checks the file's stored content meanwhile).
    """
    files = [f for path in paths if path != "-" for f in file_sizes(path)]
    if not any(size >= WORKER_MIN_BYTES for _, size in files):
        return False
    if db == ":memory:" or not os.path.exists(db):
        return True
    try:
        from ...store import connect

        with connect(db, read_only=True) as con:
            read = dict(con.execute("SELECT path, bytes_ingested FROM sources WHERE compression IS NULL").fetchall())
    except Exception:  # noqa: BLE001 - locked, from another version, not a database: assume the worker
        return True
    return any(size - read.get(path, 0) >= WORKER_MIN_BYTES for path, size in files)


def file_sizes(path: str) -> list[tuple[str, int]]:
    """(resolved path, size) of the file, or of every file under the folder; none for a path that cannot
    be read (its ingest says why)."""
    if os.path.isdir(path):
        return [entry for root, _, names in os.walk(path) for name in names
                for entry in file_sizes(os.path.join(root, name))]
    try:
        return [(os.path.realpath(path), os.path.getsize(path))]
    except OSError:
        return []


def _ensure_server() -> None:
    """Start the forkserver ignoring Ctrl-C, and so its workers: the main process answers it (a worker
    interrupted by the terminal's SIGINT printed its traceback; the main process stops it)."""
    from multiprocessing import forkserver

    if threading.current_thread() is not threading.main_thread():
        forkserver.ensure_running()
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited by the server through exec
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, previous)


def single_threaded_blas() -> None:
    """Ask numpy's OpenBLAS for no thread pool; call before numpy is imported.

    logmine makes no BLAS calls, yet the pool's threads took ~2% of both cores, which the parse worker
    and the DuckDB appends already fill.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def arrow_without_pandas() -> None:
    """Let pyarrow settle, once, that it has no pandas to recognise; call before pyarrow converts anything.

    pyarrow imports pandas the first time it builds an array (to tell pandas objects apart), which costs
    an ingest 0.2 s of its ~1 s for a few appended lines, though an ingest never hands it one. pandas is
    hidden for that first conversion only: importing it works afterwards, as do pyarrow's own pandas
    conversions (`to_pandas`), which import it when asked.
    """
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    sys.meta_path.insert(0, _HidePandas)
    try:
        pa.array([])
    finally:
        sys.meta_path.remove(_HidePandas)


class _HidePandas:
    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        if name == "pandas":
            raise ImportError("pandas is hidden from pyarrow's first conversion")


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
