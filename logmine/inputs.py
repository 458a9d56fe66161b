"""Sort what the user named into server logs and agent transcripts (files, directories, stdin)."""

from __future__ import annotations

from pathlib import Path

from .parsers.transcripts.detect import detect, sqlite_problem
from .sources import LOG_SUFFIXES, not_a_file


def classify_inputs(paths: list[str]) -> tuple[list[str], list[tuple[Path, str]], list[str]]:
    """(log paths, [(transcript path, format)], [one line per input skipped, saying why]);
    a directory may hold both kinds."""
    logs: list[str] = []
    transcripts: list[tuple[Path, str]] = []
    skipped: list[str] = []
    walked: set[tuple[int, int]] = set()
    for given in paths:
        if given == "-":
            logs.append(given)
            continue
        path = Path(given)
        if not path.is_dir():
            add_file(path, given, logs, transcripts, skipped, named=True)
            continue
        found_before = len(logs) + len(transcripts) + len(skipped)
        walk_directory(path, logs, transcripts, skipped, walked)
        if len(logs) + len(transcripts) + len(skipped) == found_before:
            skipped.append(f"{given}: no log files ({', '.join(LOG_SUFFIXES)}) or agent transcripts in it")
    return logs, transcripts, skipped


def add_file(path: Path, name: str, logs: list[str], transcripts: list[tuple[Path, str]], skipped: list[str],
             named: bool) -> None:
    """Sort one file: a file the user `named` is read as a log whatever its name; in a directory, only
    files with a log suffix are. A FIFO or device is never opened: reading it could wait forever."""
    problem = not_a_file(path)
    if problem:
        skipped.append(f"{name}: {problem}")
        return
    found = detect(path)
    if found:
        transcripts.append((path, found))
        return
    problem = sqlite_problem(path) if named or path.suffix == ".db" else None
    if problem:
        skipped.append(f"{name}: {problem}")
    elif named or path.name.endswith(LOG_SUFFIXES):
        logs.append(name)


def walk_directory(root: Path, logs: list[str], transcripts: list[tuple[Path, str]], skipped: list[str],
                   walked: set[tuple[int, int]]) -> None:
    """Transcript trees (an opencode `storage/`) are taken whole; other files one by one. Each real
    directory is walked once, however many symlinks lead to it (a link to `.` would loop forever)."""
    info = root.stat()
    if (info.st_dev, info.st_ino) in walked:
        return
    walked.add((info.st_dev, info.st_ino))
    found = detect(root)
    if found:
        transcripts.append((root, found))
        return
    for child in sorted(root.iterdir()):
        if child.is_dir():
            walk_directory(child, logs, transcripts, skipped, walked)
        else:
            add_file(child, str(child), logs, transcripts, skipped, named=False)
