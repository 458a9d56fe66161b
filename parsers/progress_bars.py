"""Progress bars: the text to classify of a `\\r`-joined bar line, and a bar's description."""

from __future__ import annotations

import re

from .traceback_formats import CXX_ABORT_OPENING

# Where a `\r`-joined progress bar hides an SGLang line, the line starts at a dated bracket.
EMBEDDED_PREFIX = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{3})?(?: [A-Z_]+\d+)*\] ")
# A progress bar's percentage: tqdm's `45%|`, or `45% Completed |` of SGLang's weight-loading bar. Its
# description is the text before it, back to a `|` or `\r`.
PERCENT_BAR = re.compile(r"\d{1,3}%(?:\|| Completed \|)")


def split_carriage_returns(message: str) -> tuple[str, str | None]:
    """For a `\\r`-joined progress-bar entry, return (the text to classify, the progress description).

    SGLang lines can begin in the middle of a physical line after a bar; so can C++ aborts.
    """
    segments = [s for s in message.split("\r") if s.strip()]
    if not segments:
        return "", None
    last = segments[-1]
    embedded = EMBEDDED_PREFIX.search(last)
    if embedded:
        return last[embedded.start():], None
    abort = last.find(CXX_ABORT_OPENING)
    if abort >= 0:
        return last[abort:], None
    return last, progress_description(last)


def progress_description(text: str) -> str:
    """The description of the progress bar in `text`; its first 60 characters when it shows no bar."""
    described = bar_description(text)
    return text[:60] if described is None else described


def bar_description(text: str) -> str | None:
    """`Loading safetensors: 45%|███` -> `Loading safetensors`; None when `text` shows no progress bar.

    Found without a backtracking regex: one that looked back from the percentage took time quadratic in
    the length of a line without a bar.
    """
    bar = PERCENT_BAR.search(text)
    if not bar:
        return None
    head = text[:bar.start()].rstrip().removesuffix(":")
    return head[max(head.rfind("|"), head.rfind("\r")) + 1:].strip()

