"""The transcript formats logmine reads, each a `TranscriptReader`: how it recognises its files, and its records.

Detection and reading (`detect.py`) ask the registered readers in turn, so a new agent's format is one new
module in this package that lists its readers in a module-level `READERS` (found when transcripts are
first detected), or a reader passed to `register` at run time. A reader yields the records of
`model.py`; whatever it cannot read it yields as an `UnknownRecord` with its reason or a
`ParseProblem` naming the file and line, and a file it cannot read at all raises `TranscriptUnreadable`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .model import Record, SeenIds

JSONL_SUFFIXES = (".jsonl", ".json", ".jsonl.zst")


class TranscriptReader:
    """One transcript format. Override `read` and at least one of the `recognises_*` methods.

    Readers are asked in the order of `priority` (lower first): for a file, every reader's
    `recognises_head` first, then each complete JSON line of the head against every reader's
    `recognises_line`, so the first line any format knows decides.
    """

    name: str = ""  # the format's name, stored with its source (e.g. "claude-code")
    priority: int = 50
    suffixes: tuple[str, ...] = JSONL_SUFFIXES  # the file names a directory walk offers it
    read_first: bool = False  # its files are read before a directory's other files, whose copies of the
    # same sessions are then skipped (a database beside the JSON files it was migrated from)

    def recognises_head(self, path: Path, head: bytes) -> bool:
        """Whether the file whose first (decompressed) bytes are `head` is in this format."""
        return False

    def recognises_line(self, line: dict[str, Any]) -> bool:
        """Whether one JSON object line of a JSONL file is a line of this format."""
        return False

    def recognises_directory(self, path: Path) -> bool:
        """Whether the directory holds a transcript tree of this format (read whole, not file by file)."""
        return False

    def is_tree_root(self, path: Path) -> bool:
        """Whether a directory met in a walk is the root of such a tree (taken whole, not walked into)."""
        return False

    def read_elsewhere(self, path: Path) -> bool:
        """Whether a file a walk meets is read with another one (a subagent's with its parent session)."""
        return False

    def read(self, path: Path, seen: SeenIds) -> Iterator[Record]:
        """The records of `path`; sessions in `seen` (read from a better copy) are skipped and added to it."""
        raise NotImplementedError


_registered: list[TranscriptReader] = []
_discovered = False


def register(reader: TranscriptReader) -> TranscriptReader:
    """Add a reader (one of the same name is replaced); returns it, so it can decorate an instance."""
    unregister(reader.name)
    _registered.append(reader)
    _registered.sort(key=lambda r: r.priority)
    return reader


def unregister(name: str) -> None:
    _registered[:] = [r for r in _registered if r.name != name]


def readers() -> list[TranscriptReader]:
    """Every registered reader, by priority; the modules of this package are looked at the first time."""
    global _discovered
    if not _discovered:
        _discovered = True
        for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
            found = importlib.import_module(f"{__package__}.{module.name}")
            for reader in getattr(found, "READERS", ()):
                if all(r.name != reader.name for r in _registered):
                    register(reader)
    return list(_registered)


def reader(name: str) -> TranscriptReader:
    """The registered reader of a format name; KeyError when none is."""
    for candidate in readers():
        if candidate.name == name:
            return candidate
    raise KeyError(name)
