"""Recognise a transcript file's format cheaply and read any file or directory of them, by asking the
registered readers (`registry.py`) in turn."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from . import claude_code, codex, opencode
from .common import first_json_lines, json_objects, read_head
from .model import Record, SeenIds
from .registry import TranscriptReader, reader, readers

OPENCODE_EXPORT = opencode.EXPORT
OPENCODE_STORAGE = opencode.STORAGE
OPENCODE_SQLITE = opencode.SQLITE
OPENCODE_CONCAT = opencode.CONCAT
CLAUDE_CODE = claude_code.FORMAT
CODEX = codex.FORMAT


def detect(path: Path) -> str | None:
    """The transcript format of `path`, or None. Reads the first 64 KB of a file, or its first lines
    when they are longer."""
    found = recognise(path)
    return found.name if found else None


def recognise(path: Path) -> TranscriptReader | None:
    """The reader of `path`'s format: the first whose `recognises_*` says so."""
    if path.is_dir():
        return next((r for r in readers() if r.recognises_directory(path)), None)
    try:
        head = read_head(path)
    except OSError:
        return None
    return _recognised(path, head, first_json_lines(path, head))


def stream_format(head: bytes) -> str | None:
    """The transcript format a stream's first bytes show, or None: standard input has no path to read
    on, so only the head's whole lines are looked at."""
    found = _recognised(Path("-"), head, json_objects(head.decode("utf-8", errors="replace").splitlines()))
    return found.name if found else None


def _recognised(path: Path, head: bytes, lines: Iterable[dict]) -> TranscriptReader | None:
    candidates = readers()
    for candidate in candidates:
        if candidate.recognises_head(path, head):
            return candidate
    for line in lines:
        for candidate in candidates:
            if candidate.recognises_line(line):
                return candidate
    return None


def sqlite_problem(path: Path) -> str | None:
    """Why a SQLite file is no opencode database logmine can read; None for other files."""
    try:
        return opencode.sqlite_problem(path, read_head(path, len(opencode.SQLITE_MAGIC)))
    except OSError as exc:
        return f"cannot read ({exc.strerror})"


# ----------------------------------------------------------------------------------- reading


def read_transcripts(path: Path, fmt: str | None = None) -> Iterator[Record]:
    """Every record in a transcript file (read as format `fmt` when given, as detected otherwise), or in
    every transcript found under a directory."""
    if path.is_dir():
        yield from _read_directory(path)
        return
    found = reader(fmt) if fmt else recognise(path)
    if found is not None:
        yield from found.read(path, SeenIds())


def _read_directory(root: Path) -> Iterator[Record]:
    """Walk `root`. Files of readers that are `read_first` (opencode databases) come before trees and other
    files, so a session found in both (JSON left behind by the v1.2 migration) comes from the database."""
    first, trees, files = _collect(root)
    seen = SeenIds()
    for found, file_path in [*first, *trees, *files]:  # copies of a session already read are skipped
        yield from found.read(file_path, seen)


def _collect(root: Path) -> tuple[list[tuple[TranscriptReader, Path]], ...]:
    first: list[tuple[TranscriptReader, Path]] = []
    trees: list[tuple[TranscriptReader, Path]] = []
    files: list[tuple[TranscriptReader, Path]] = []
    candidates = readers()
    suffixes = tuple(suffix for r in candidates for suffix in r.suffixes)
    for directory, subdirs, names in os.walk(root):
        here = Path(directory)
        tree = _tree_reader(here, candidates) if here == root else None
        if tree is not None:
            trees.append((tree, here))
            break
        # A tree is read as a whole, not file by file; checking subdirs here (rather than when
        # walked) also catches symlinked trees, which os.walk skips.
        found_trees = [(t, here / name) for name in sorted(subdirs)
                       if (t := _tree_reader(here / name, candidates)) is not None]
        trees.extend(found_trees)
        taken = {path for _, path in found_trees}
        subdirs[:] = sorted(name for name in subdirs if here / name not in taken)
        for name in sorted(names):
            file_path = here / name
            if not name.endswith(suffixes) or read_elsewhere(file_path, candidates):
                continue
            found = recognise(file_path)
            if found is not None:
                (first if found.read_first else files).append((found, file_path))
    return first, trees, files


def _tree_reader(path: Path, candidates: list[TranscriptReader]) -> TranscriptReader | None:
    return next((r for r in candidates if r.is_tree_root(path)), None)


def read_elsewhere(path: Path, candidates: list[TranscriptReader] | None = None) -> bool:
    """A file read with another (a subagent's with its session); a .zst loses to its plain twin."""
    if path.name.endswith(".jsonl.zst") and path.with_suffix("").exists():
        return True
    return any(r.read_elsewhere(path) for r in (readers() if candidates is None else candidates))


__all__ = ["CLAUDE_CODE", "CODEX", "OPENCODE_CONCAT", "OPENCODE_EXPORT", "OPENCODE_SQLITE", "OPENCODE_STORAGE",
           "detect", "read_elsewhere", "read_transcripts", "reader", "recognise", "sqlite_problem", "stream_format"]
