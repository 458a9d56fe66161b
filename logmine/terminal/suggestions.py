"""What a mistyped name probably meant: the nearest known names, as a hint for a one-line error."""

from __future__ import annotations

import difflib
from collections.abc import Sequence


def nearest(word: str, known: Sequence[str]) -> list[str]:
    """The known names closest to `word`, closest first (none when nothing is close)."""
    return difflib.get_close_matches(word, known, n=3, cutoff=0.6)


def did_you_mean(word: str, known: Sequence[str]) -> str:
    """`did you mean load-time?` (or `a or b?`), or "" when no known name is close."""
    found = nearest(word, known)
    return f"did you mean {' or '.join(found)}?" if found else ""
