"""Parsed batches from the worker process to the main process through a file both of them map.

A batch is written once, as one Arrow IPC stream per table, into one of a few reusable slots; the main
process reads its tables in place. Through a pipe, a batch was pickled (sliced columns with their whole
parent buffers), copied through the kernel and unpickled: as much CPU in the main process as typing it.

The file is allocated in full when it is created (`posix_fallocate`), so a /dev/shm without room is
an error there, answered by sending batches through the pipe, and never a SIGBUS later.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
from dataclasses import dataclass

import pyarrow as pa

SLOT_BYTES = 32 << 20  # a 50k-line batch of a v0.5.9 journal takes about 12 MB
FOLDERS = ("/dev/shm", tempfile.gettempdir())
PREFIX = "logmine-batches-"  # then the PID of the process that made the file


def remove_orphans(folder: str) -> None:
    """Delete the slot files whose maker is dead. The worker deletes the file once both processes have
    it mapped, but an ingest killed (SIGKILL) before its worker got that far leaves it, 96 MB of memory
    in /dev/shm until the next ingest on the machine sweeps it here."""
    if os.name != "posix":  # signal 0 tests a PID on POSIX only
        return
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            pid = entry.name.removeprefix(PREFIX).split("-", 1)[0]
            if entry.name.startswith(PREFIX) and pid.isdigit() and not _alive(int(pid)):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


@dataclass
class SlotLayout:
    """Where one batch's tables lie: (table, start, stop) byte ranges of the file, all in one slot."""

    slot: int
    tables: list[tuple[str, int, int]]


class SharedSlots:
    """A file of `slots` slots of `slot_bytes`, mapped by the process that made it and by the worker."""

    def __init__(self, path: str, slots: int, slot_bytes: int) -> None:
        self.path, self.slots, self.slot_bytes = path, slots, slot_bytes
        self._map: mmap.mmap | None = None

    @classmethod
    def create(cls, slots: int, slot_bytes: int = SLOT_BYTES) -> SharedSlots | None:
        """A new slot file in /dev/shm, else in the temp directory; None when neither has room."""
        for folder in FOLDERS:
            remove_orphans(folder)
            try:
                fd, path = tempfile.mkstemp(prefix=f"{PREFIX}{os.getpid()}-", dir=folder)
            except OSError:
                continue
            try:
                os.posix_fallocate(fd, 0, slots * slot_bytes)
            except (OSError, AttributeError):  # no room, or no posix_fallocate (macOS)
                os.unlink(path)
                continue
            finally:
                os.close(fd)
            shared = cls(path, slots, slot_bytes)
            shared.attach()  # mapped now, so the file can be removed once the worker has mapped it too
            return shared
        return None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_map": None}  # each process maps the file itself

    def attach(self) -> None:
        """Map the file in this process (the worker, before the file is removed)."""
        self._mapping()

    def _mapping(self) -> mmap.mmap:
        if self._map is None:
            with open(self.path, "r+b") as f:
                self._map = mmap.mmap(f.fileno(), self.slots * self.slot_bytes)
        return self._map

    def write(self, slot: int, tables: dict[str, pa.Table]) -> SlotLayout | None:
        """Write a batch into `slot`; None when it does not fit (the caller sends it another way)."""
        base = slot * self.slot_bytes
        sink = pa.FixedSizeBufferWriter(pa.py_buffer(memoryview(self._mapping())[base:base + self.slot_bytes]))
        placed = []
        try:
            for name, table in tables.items():
                start = sink.tell()
                with pa.ipc.new_stream(sink, table.schema) as writer:
                    writer.write_table(table)
                placed.append((name, base + start, base + sink.tell()))
        except OSError:  # out of room in the slot
            return None
        return SlotLayout(slot, placed)

    def read(self, layout: SlotLayout) -> dict[str, pa.Table]:
        """The batch's tables, in place: valid until its slot is written again."""
        whole = pa.py_buffer(self._mapping())
        return {name: pa.ipc.open_stream(whole.slice(start, stop - start)).read_all()
                for name, start, stop in layout.tables}

    def remove(self) -> None:
        """Delete the file; the mappings stay valid, and the memory goes with the last of them."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
