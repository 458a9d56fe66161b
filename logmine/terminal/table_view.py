"""A query's terminal view: its key columns in reading order under short labels, ranks whose figures are
equal as one row (`TP0-7 (8 ranks)`), and what every row shares (the source, the run, the day) said once
above the table instead of in every row.

The view is declared beside each query, in its header (`-- Columns:`, `-- Once:`, `-- Ranks:`, read by
`named_queries.view`); it shapes only the terminal table: CSV, TSV, JSON and Markdown keep every row and
column as the query gives them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

RANK_NUMBER = re.compile(r"^(.*?)(\d+)$")


@dataclass(frozen=True)
class TableView:
    """`labels`: the key columns, in reading order, each with its header; `once`: columns said once above
    the table when every row holds the same value; `ranks`: the columns naming a rank."""

    labels: dict[str, str] = field(default_factory=dict)
    once: Sequence[str] = ()
    ranks: Sequence[str] = ()


@dataclass
class Shaped:
    """A result shaped by its view: the columns and rows to lay out, and the lines said above them."""

    columns: list[str]
    rows: list[tuple]
    heading: list[str]


def shape(columns: Sequence[str], rows: Sequence[tuple], view: TableView) -> Shaped:
    """`rows` with equal ranks merged, the columns every row shares taken out into the heading, and the
    day said once when every timestamp falls on it."""
    columns, rows = list(columns), [tuple(r) for r in rows]
    rows = _merge_ranks(columns, rows, [c for c in view.ranks if c in columns])
    heading = []
    for name in [c for c in view.once if c in columns]:
        values = {_identity(r[columns.index(name)]) for r in rows}
        if rows and len(values) == 1:
            heading.append(f"{view.labels.get(name, name)} {_said(rows[0][columns.index(name)])}")
            i = columns.index(name)
            columns.pop(i)
            rows = [r[:i] + r[i + 1:] for r in rows]
    day, rows = _one_day(columns, rows)
    if day:
        heading.append(f"on {day}")
    return Shaped(columns, rows, [", ".join(heading)] if heading else [])


def _merge_ranks(columns: list[str], rows: list[tuple], rank_columns: list[str]) -> list[tuple]:
    """Rows equal in every column but the rank's as one row whose rank says which ranks it stands for."""
    if not rank_columns or len(rows) < 2:
        return rows
    rank_at = [columns.index(c) for c in rank_columns]
    groups: dict[tuple, list[tuple]] = {}
    for row in rows:
        key = tuple(_identity(v) for i, v in enumerate(row) if i not in rank_at)
        groups.setdefault(key, []).append(row)
    merged = []
    for members in groups.values():
        first = list(members[0])
        if len(members) > 1:
            for i in rank_at:
                first[i] = rank_span([str(m[i]) for m in members])
        merged.append(tuple(first))
    return merged


def rank_span(ranks: Sequence[str]) -> str:
    """['TP0', ..., 'TP7'] -> 'TP0-7 (8 ranks)', with gaps 'TP0-8,10-15 (15 ranks)'; ranks not numbered
    alike (`DP0 TP1`) are listed."""
    parts = [RANK_NUMBER.match(r) for r in ranks]
    if not (all(parts) and len({p.group(1) for p in parts}) == 1):
        return f"{','.join(ranks)} ({len(ranks)} ranks)"
    numbers = number_spans(sorted({int(p.group(2)) for p in parts}), separator=",")
    return f"{parts[0].group(1)}{numbers} ({len(ranks)} ranks)"


def number_spans(numbers: Sequence[int], separator: str = ", ") -> str:
    """[1, 2, 3, 5] -> '1-3, 5' (sorted numbers)."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return separator.join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _one_day(columns: list[str], rows: list[tuple]) -> tuple[str | None, list[tuple]]:
    """When every timestamp of the result falls on one day: that day, and the rows with times of day."""
    at = [i for i in range(len(columns)) if any(isinstance(r[i], datetime) for r in rows)]
    days = {r[i].date() for r in rows for i in at if isinstance(r[i], datetime)}
    if len(days) != 1:
        return None, rows
    return days.pop().isoformat(), [tuple(_time_of_day(v) if i in at else v for i, v in enumerate(r)) for r in rows]


def _time_of_day(value: object) -> object:
    if not isinstance(value, datetime):
        return value
    return value.time().isoformat(timespec="seconds" if value.microsecond == 0 else "milliseconds")


def _said(value: object) -> str:
    """A shared value as the heading says it: a source by its file name."""
    return str(value).rsplit("/", 1)[-1] if isinstance(value, str) else str(value)


def _identity(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)
