"""What every section needs: run names, a run's rows, charts drawn on demand."""

from __future__ import annotations

import pandas as pd

from .data import ReportData


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


def run_rows(data: ReportData) -> list[pd.Series]:
    return [row for _, row in data["runs"].iterrows()]


def of_run(df: pd.DataFrame, source: str, run: int, column: str = "run") -> pd.DataFrame:
    return df[(df["source"] == source) & (df[column] == run)]
