"""Render query results (pandas DataFrames) as a terminal table, CSV, JSON or Markdown."""

from __future__ import annotations

import io
import json
import math
import shutil
import sys
from datetime import datetime

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table
from rich.text import Text

FORMATS = ("table", "csv", "json", "markdown")
TABLE_CELL_CHARS = 300
# rich lays out a table at ~40 µs a cell: past this many rows the terminal table shows the first ones and
# says how many more the other formats give.
TABLE_MAX_ROWS = 1000


def plain_value(value: object) -> object:
    """A JSON-ready value: timestamps as ISO text without zone, missing values as None, numpy as Python."""
    if isinstance(value, dict):
        return {k: plain_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [plain_value(v) for v in value]
    if value is None or value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (pd.Timestamp, datetime)):
        return value.isoformat()
    if isinstance(value, np.generic):
        return plain_value(value.item())
    return value


def records(df: pd.DataFrame) -> list[dict]:
    columns = list(df.columns)
    return [{col: plain_value(val) for col, val in zip(columns, row, strict=True)}
            for row in df.itertuples(index=False)]


def cell(value: object) -> str:
    if isinstance(value, (pd.Timestamp, datetime)) and value is not pd.NaT:
        return value.isoformat(sep=" ", timespec="seconds" if value.microsecond == 0 else "milliseconds")
    value = plain_value(value)
    if value is None:
        return ""
    if isinstance(value, float):
        # Figures keep the precision SGLang logged (2 decimals); longer floats are rounded for the eye.
        return str(value) if value == round(value, 2) else f"{value:.2f}"
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=str)
    return str(value)


def table_cell(value: object) -> str:
    """A cell of the terminal table: one line, at most TABLE_CELL_CHARS (a whole traceback is for the
    other formats; laying out thousands of them took rich minutes)."""
    text = " ⏎ ".join(cell(value).splitlines())
    return text if len(text) <= TABLE_CELL_CHARS else text[:TABLE_CELL_CHARS - 1] + "…"


def render(df: pd.DataFrame, fmt: str = "table", width: int | None = None) -> str:
    if fmt == "json":
        return json.dumps(records(df), indent=2, default=str)
    if fmt == "csv":
        nested = df.map(lambda v: json.dumps(plain_value(v)) if isinstance(v, (dict, list, np.ndarray)) else v)
        return nested.to_csv(index=False)
    if fmt == "markdown":
        header = "| " + " | ".join(df.columns) + " |"
        rule = "|" + "|".join("---" for _ in df.columns) + "|"
        rows = ["| " + " | ".join(cell(v).replace("|", "\\|") for v in row) + " |"
                for row in df.itertuples(index=False)]
        return "\n".join([header, rule, *rows])
    table = Table(show_header=True, header_style="bold", show_lines=False)
    for col in df.columns:
        table.add_column(str(col), overflow="fold")
    for row in df.head(TABLE_MAX_ROWS).itertuples(index=False):
        table.add_row(*(Text(table_cell(v)) for v in row))  # Text: brackets in values are not markup
    buffer = io.StringIO()
    # On a terminal, fit its width; in a pipe or a file, keep every row on one line.
    if width is None:
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else 10_000
    Console(file=buffer, width=width, force_terminal=False).print(table)
    if len(df) > TABLE_MAX_ROWS:
        buffer.write(f"… {len(df) - TABLE_MAX_ROWS:,} more rows of {len(df):,}: --format csv, json or markdown "
                     "gives them all\n")
    return buffer.getvalue().rstrip("\n")
