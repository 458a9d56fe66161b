"""What every section needs: run names, a run's rows, charts drawn on demand."""

from __future__ import annotations

import pandas as pd

from .data import ReportData
from .words import elide_middle

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
