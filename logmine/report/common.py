"""What every section needs: run names, a run's rows, charts drawn on demand."""

from __future__ import annotations

import pandas as pd

from ..terminal.table_view import rank_span
from .data import ReportData
from .words import elide_middle, missing

CHART_NAME_CHARS = 26  # a file name in a chart's label: 'mattbucci__2x…a2-tail.log'


def draw(chart: str, *args: object) -> str:
    """An SVG from `charts`, imported only when a chart is drawn: Markdown never loads matplotlib."""
    from . import charts

    return getattr(charts, chart)(*args)


def of_source(data: ReportData, source: str) -> str:
    """` of demo/journal.txt` when the report holds runs of several sources (ordinals restart in each),
    else nothing."""
    several = data["runs"]["source"].nunique() > 1
    return f" of {data.source_name(source)}" if several else ""


def run_name(data: ReportData, source: str, run: int) -> str:
    return f"run {run}{of_source(data, source)}"


def chart_run_name(data: ReportData, source: str, run: int) -> str:
    """A run's name on a chart's axis or legend: a long file name shortened in its middle, so that the
    plot keeps its width and the label still reads as a run."""
    name = data.source_name(source)
    return f"run {run} of {elide_middle(name, CHART_NAME_CHARS)}" if of_source(data, source) else f"run {run}"


def run_rows(data: ReportData) -> list[pd.Series]:
    return [row for _, row in data["runs"].iterrows()]


def of_run(df: pd.DataFrame, source: str, run: int, column: str = "run") -> pd.DataFrame:
    return df[(df["source"] == source) & (df[column] == run)]


def rank_groups(rows: pd.DataFrame, columns: list[str], within: float = 0.0) -> list[tuple[pd.Series, str]]:
    """A run's ranks in groups whose figures in `columns` are all within `within` of the group's first rank
    (0: equal), in rank order: each group's first row and its label (`TP0-15 (16 ranks)`, or the rank
    alone). Sixteen ranks that logged the same figures are one row of a table, not sixteen."""
    groups: list[tuple[pd.Series, list[str]]] = []
    for _, row in rows.iterrows():
        for first, ranks in groups:
            if all(_close(row[c], first[c], within) for c in columns):
                ranks.append(str(row["rank"]))
                break
        else:
            groups.append((row, [str(row["rank"])]))
    return [(first, ranks[0] if len(ranks) == 1 else rank_span(ranks)) for first, ranks in groups]


def _close(a: object, b: object, within: float) -> bool:
    if missing(a) or missing(b):
        return missing(a) and missing(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) <= within
    return a == b
