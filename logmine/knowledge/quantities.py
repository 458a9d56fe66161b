"""Numbers and units as an agent writes them ("~41.7 GB", "25k tokens"), and the data files of
`parsers/knowledge/` they are read with. No spaCy here: judging a stored claim needs these, not a pipeline.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources


def data_file(name: str) -> str:
    """The text of a file in `parsers/knowledge/`."""
    return (resources.files("logmine.parsers.knowledge") / name).read_text(encoding="utf-8")


@functools.cache
def units() -> dict[str, tuple[str, str, float]]:
    """Unit surface -> (canonical unit, dimension, factor to the dimension's base)."""
    table = json.loads(data_file("units.json"))
    return {surface: tuple(spec) for surface, spec in table.items() if not surface.startswith("_")}


APPROXIMATE_MARKS = ("~", "≈")
MAGNITUDES = {"k": 1e3, "K": 1e3, "M": 1e6}


@dataclass(frozen=True)
class Quantity:
    """A number with a unit as written, and normalised to its dimension's base unit."""

    written: float
    written_unit: str       # canonical: GB, GiB, tokens, s, min ...
    dimension: str          # bytes, seconds, tokens, ...
    value: float            # in the dimension's base unit
    factor: float           # base units per written unit
    step: float             # a unit of the last digit as written ("41.7" -> 0.1, "25k" -> 1000)
    approximate: bool       # "~41.7", "about 40"
    high: float | None = None  # the upper end of a range ("15-25k tokens"), in the written unit


def number(text: str) -> tuple[float, float] | None:
    """The value and a unit of its last digit: '~58,417' -> (58417.0, 1.0); '25k' -> (25000.0, 1000.0)."""
    text = text.lstrip("~≈+±").replace(",", "")
    scale = MAGNITUDES.get(text[-1:], 1.0)
    if scale != 1.0:
        text = text[:-1]
    try:
        value = float(text)
    except ValueError:
        return None
    decimals = len(text.split(".")[1]) if "." in text and "e" not in text.lower() else 0
    return value * scale, 10.0 ** -decimals * scale
