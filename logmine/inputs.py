"""Sort what the user named into server logs and agent transcripts (files, directories, stdin)."""

from __future__ import annotations

from pathlib import Path

from .parsers.transcripts.detect import detect
from .sources import LOG_SUFFIXES


def classify_inputs(paths: list[str]) -> tuple[list[str], list[tuple[Path, str]], list[str]]:
    """(log paths, [(transcript path, format)], [one line per input skipped, saying why]);
    a directory may hold both kinds."""
    logs: list[str] = []
    transcripts: list[tuple[Path, str]] = []
    skipped: list[str] = []
    for given in paths:
        if given == "-":
            logs.append(given)
            continue
        path = Path(given)
        if not path.exists():
            skipped.append(f"{given}: no such file or directory")
            continue
        found = detect(path)
        if found:
            transcripts.append((path, found))
        elif path.is_dir():
            found_before = len(logs) + len(transcripts)
            walk_directory(path, logs, transcripts)
            if len(logs) + len(transcripts) == found_before:
                skipped.append(f"{given}: no log files ({', '.join(LOG_SUFFIXES)}) or agent transcripts in it")
        else:
            logs.append(given)
    return logs, transcripts, skipped


def walk_directory(root: Path, logs: list[str], transcripts: list[tuple[Path, str]]) -> None:
    """Transcript trees (an opencode `storage/`) are taken whole; other files one by one."""
    for child in sorted(root.iterdir()):
        found = detect(child)
        if found:
            transcripts.append((child, found))
        elif child.is_dir():
            walk_directory(child, logs, transcripts)
        elif child.name.endswith(LOG_SUFFIXES):
            logs.append(str(child))
