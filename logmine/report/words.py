"""How figures read in the report: numbers with the precision SGLang logged, durations, run names."""

from __future__ import annotations

import math
import numbers

import pandas as pd


def missing(value: object) -> bool:
    """None, NaN, NaT or pandas' NA: a figure the log did not give."""
    return value is None or value is pd.NaT or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def plural(count: int, noun: str) -> str:
    """1 -> '1 run', 3 -> '3 runs'."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def number(value: object, digits: int = 2) -> str:
    """159277 -> '159,277'; 10.4200001 -> '10.42'; missing -> ''."""
    if missing(value):
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral) or (isinstance(value, float) and value.is_integer() and abs(value) >= 1000):
        return f"{int(value):,}"
    if isinstance(value, numbers.Real):
        text = f"{float(value):,.{digits}f}"
        return text.removeprefix("-") if float(text.replace(",", "")) == 0 else text  # no "-0.00"
    return str(value)


def seconds(value: object, minutes_too: bool = True) -> str:
    """690.0 -> '690 s (11 min 30 s)' (or '690 s' for a table cell); short durations stay in seconds."""
    if missing(value):
        return ""
    value = float(value)
    text = f"{value:,.0f} s" if value >= 100 or value.is_integer() else f"{value:,.2f} s"
    return f"{text} ({duration(value)})" if value >= 120 and minutes_too else text


def duration(value: float) -> str:
    """2307.0 -> '38 min 27 s', 7500.0 -> '2 h 5 min'; under two minutes, seconds: 95.0 -> '95 s'."""
    if value < 120:
        return seconds(value)
    minutes, rest = divmod(round(value), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {rest} s" if rest else f"{minutes} min"


def clock(value: object) -> str:
    """A timestamp as the journal shows it, to the second."""
    return "" if missing(value) else pd.Timestamp(value).strftime("%Y-%m-%d %H:%M:%S")


def value(value: object) -> str:
    """A server arg as ServerArgs prints it (bools, None, numbers, lists)."""
    if missing(value):
        return "None"
    return str(value)


def rank_span(ranks: list[str]) -> str:
    """['TP0', ..., 'TP7'] -> 'TP0–TP7'."""
    named = [r for r in ranks if r]
    if not named:
        return "the only rank"
    return named[0] if len(named) == 1 else f"{named[0]}–{named[-1]}"


def ranks_caption(ranks: list[str]) -> str:
    """What one figure of identically logged ranks stands for: 'each of TP0–TP7', 'TP0', 'its only rank'."""
    named = [r for r in ranks if r]
    if not named:
        return "its only rank"
    return named[0] if len(named) == 1 else f"each of {rank_span(named)}"


def elide_middle(text: str, limit: int) -> str:
    """A long file name that keeps its start and end, where names of one corpus differ: 'shun86…50ms.py.log'."""
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "…" + text[-(limit - 1 - head):]


def first_upper(text: str) -> str:
    """'run 1' -> 'Run 1', leaving the rest as it is (str.capitalize lowercases file names)."""
    return text[:1].upper() + text[1:]


def quote(text: str, limit: int = 300) -> str:
    """A user's or agent's words, on one line, shortened with an ellipsis."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"
