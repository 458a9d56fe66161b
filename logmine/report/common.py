"""What every section needs: run names, a run's rows, charts drawn on demand."""

from __future__ import annotations

import pandas as pd

from .data import ReportData, short_source


def draw(chart: str, *args: object) -> str:
    """An SVG from `charts`, imported only when a chart is drawn: Markdown never loads matplotlib."""
    from . import charts

    return getattr(charts, chart)(*args)


def run_name(data: ReportData, source: str, run: int) -> str:
    several = data["runs"]["source"].nunique() > 1
    return f"run {run} of {short_source(source)}" if several else f"run {run}"


def run_rows(data: ReportData) -> list[pd.Series]:
    return [row for _, row in data["runs"].iterrows()]


def of_run(df: pd.DataFrame, source: str, run: int, column: str = "run") -> pd.DataFrame:
    return df[(df["source"] == source) & (df[column] == run)]
