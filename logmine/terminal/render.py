"""Render query results as a terminal table, CSV, TSV, JSON or Markdown.

A result is a pandas DataFrame (the library API) or `Rows` (what the CLI fetches, so that a command
need not import pandas). On a terminal the table fits its width: the query's key columns first, more
when they fit, an expanded record per row (psql's `\\x`) when even the key columns do not fit, and a
line saying which columns were left out. CSV, TSV, JSON and Markdown give every column and row.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import sys
import textwrap
import unicodedata
from collections.abc import Iterator, Sequence
from datetime import date, datetime, time
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ..query.rows import RowChunks, Rows
from ..query.selection import shortest_unique_suffixes
from .table_view import TableView, shape

if TYPE_CHECKING:
    import pandas as pd

FORMATS = ("table", "csv", "tsv", "json", "markdown")
TABLE_CELL_CHARS = 300
# Past this many rows the terminal table shows the first ones and says how many more the other formats give.
TABLE_MAX_ROWS = 1000
# Only a column wider than this (a command, a message, a traceback) is cut to fit, to no fewer characters
# than MIN_TEXT_WIDTH; narrower ones (times, kinds, figures) are shown whole or not at all.
CUTTABLE_WIDTH = 24
MIN_TEXT_WIDTH = 16
SEPARATOR = " │ "
# Between the columns of a table whose key columns do not fit with SEPARATOR (before records are tried).
NARROW_SEPARATOR = " "
# Columns holding a source path, shown as the shortest suffix that still tells the sources apart.
PATH_COLUMNS = ("source",)


def as_rows(data: pd.DataFrame | Rows) -> Rows:
    if isinstance(data, Rows):
        return data
    return Rows([str(c) for c in data.columns], list(data.itertuples(index=False, name=None)))


def plain_value(value: object) -> object:
    """A JSON-ready value: timestamps as ISO text without zone, missing values as None, numpy as Python."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # most values: first, for 2M-row outputs
        return value
    if isinstance(value, dict):
        return {k: plain_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    if value is None or (isinstance(value, float) and math.isnan(value)) or _is_missing(value):
        return None
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    np = sys.modules.get("numpy")  # numpy values exist only when numpy was imported by whoever made them
    if np is not None:
        if isinstance(value, np.ndarray):
            return [plain_value(v) for v in value]
        if isinstance(value, np.generic):
            return plain_value(value.item())
    return value


def records(data: pd.DataFrame | Rows) -> list[dict]:
    result = as_rows(data)
    return [_record(result.columns, row) for row in result.rows]


def _record(columns: Sequence[str], row: tuple) -> dict:
    return {col: plain_value(val) for col, val in zip(columns, row, strict=True)}


# Characters that act on a terminal rather than show (C0 controls, DEL, C1 controls: OSC 52 writes the
# clipboard, OSC 8 makes links, OSC 0 sets the title) or reorder what it shows (bidirectional overrides).
_ACTING = [*range(0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_SHOWN = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in _ACTING}
_SHOWN_IN_TEXT = {c: shown for c, shown in _SHOWN.items() if chr(c) not in "\n\t"}


def visible(text: str, one_line: bool = False) -> str:
    """`text` with every character that would act on a terminal shown as its escape (`\\x1b`); newlines and
    tabs stay unless `one_line` (a file name in a message)."""
    return text.translate(_SHOWN if one_line else _SHOWN_IN_TEXT)


def cell(value: object) -> str:
    """A value as a person reads it: timestamps to the second (or millisecond), floats to 2 decimals, and
    characters that would act on a terminal shown as escapes."""
    if isinstance(value, datetime) and not _is_missing(value):
        return value.isoformat(sep=" ", timespec="seconds" if value.microsecond == 0 else "milliseconds")
    value = plain_value(value)
    if value is None:
        return ""
    if isinstance(value, float):
        value = value + 0.0  # -0.0, a rounded tiny negative, reads as 0.0
        # Figures keep the precision SGLang logged (2 decimals); longer floats are rounded for the eye.
        return str(value) if value == round(value, 2) else f"{value:.2f}"
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=str)
    return visible(str(value))


def exact_cell(value: object) -> str:
    """A value for CSV and TSV: complete, nested values as JSON."""
    kind = type(value)
    if kind is str:
        return value
    if kind is int:
        return str(value)
    if isinstance(value, datetime) and not _is_missing(value):
        return value.isoformat(sep=" ")  # as SQL spells a timestamp
    value = plain_value(value)
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=str)
    return str(value)


def table_cell(value: object) -> str:
    """A cell of the terminal table: one line, at most TABLE_CELL_CHARS (a whole traceback is for the
    other formats)."""
    text = " ⏎ ".join(cell(value).splitlines()).replace("\t", " ")
    return text if len(text) <= TABLE_CELL_CHARS else text[:TABLE_CELL_CHARS - 1] + "…"


def render(data: pd.DataFrame | Rows, fmt: str = "table", width: int | None = None, *,
           columns: Sequence[str] | None = None, key_columns: Sequence[str] = (),
           view: TableView | None = None) -> str:
    """`data` in format `fmt`.

    `columns` picks columns (in that order) for every format; `["all"]` is every column. For the
    table, `width` is the width to fit (default: the terminal's when stdout is one, else no limit);
    `key_columns` are the columns that matter most, shown first when not all fit; `view` (the query's
    declared view) gives them instead, under its labels, with equal ranks merged and what every row
    shares said once above the table.
    """
    result = as_rows(data)
    if columns:
        result = result if list(columns) == ["all"] else select(result, columns)
        key_columns, view = result.columns, None  # what was asked for is shown, as records if it does not fit
    if fmt != "table":
        return "".join(render_pieces(RowChunks(result.columns, iter([result.rows])), fmt))
    if width is None and sys.stdout.isatty():
        width = shutil.get_terminal_size().columns
    if view is None or not result.rows:
        return terminal_table(result, width, key_columns=key_columns)
    if result.total is not None:  # only the first rows: what they share may not be what every row shares
        return terminal_table(result, width, key_columns=list(view.labels), labels=view.labels)
    shaped = shape(result.columns, result.rows, view)
    table = terminal_table(Rows(shaped.columns, shaped.rows), width, key_columns=list(view.labels),
                           labels=view.labels)
    return "\n".join([*shaped.heading, table])


def select(result: Rows, columns: Sequence[str]) -> Rows:
    positions = _positions(result.columns, columns)
    return Rows(list(columns), [tuple(row[i] for i in positions) for row in result.rows], result.total)


def select_chunks(result: RowChunks, columns: Sequence[str]) -> RowChunks:
    """`select` for a result read chunk by chunk (`["all"]`: every column)."""
    if list(columns) == ["all"]:
        return result
    positions = _positions(result.columns, columns)
    return RowChunks(list(columns), ([tuple(row[i] for i in positions) for row in rows] for rows in result.chunks))


def _positions(have: Sequence[str], wanted: Sequence[str]) -> list[int]:
    unknown = [c for c in wanted if c not in have]
    if unknown:
        raise LookupError(f"no column {', '.join(unknown)}; the columns are: {', '.join(have)}")
    return [list(have).index(c) for c in wanted]


def render_pieces(result: RowChunks, fmt: str) -> Iterator[str]:
    """`result` in a format that gives every row (csv, tsv, json, markdown), a piece per chunk of rows as
    the chunks are read: joined, the pieces are `render`'s text."""
    if fmt == "json":
        yield from _json_pieces(result)
        return
    if fmt == "csv":
        yield _csv_text([result.columns])
        lines = (_csv_text([[exact_cell(v) for v in row] for row in rows]) for rows in result.chunks if rows)
    elif fmt == "tsv":  # as `cut` and `sort` read it: one line per row, tabs and newlines in values escaped
        yield "\t".join(result.columns)
        lines = ("\n".join("\t".join(map(_tsv_field, row)) for row in rows) for rows in result.chunks if rows)
    elif fmt == "markdown":
        yield "| " + " | ".join(result.columns) + " |\n|" + "|".join("---" for _ in result.columns) + "|"
        lines = ("\n".join("| " + " | ".join(cell(v).replace("|", "\\|").replace("\n", "<br>") for v in row) + " |"
                           for row in rows) for rows in result.chunks if rows)
    else:
        raise ValueError(f"{fmt}: not a format that gives every row")
    for text in lines:  # a row may be an empty line (one empty value in TSV): chunks, not texts, are skipped
        yield "\n" + text


def _csv_text(rows: list[Sequence[object]]) -> str:
    """CSV lines (a quoted value may hold newlines), without the last line's end."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue().removesuffix("\n")


def _tsv_field(value: object) -> str:
    return exact_cell(value).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _json_pieces(result: RowChunks) -> Iterator[str]:
    """`json.dumps(records, indent=2)`, a chunk of records at a time."""
    first = True
    for rows in result.chunks:
        texts = []
        for row in rows:
            text = json.dumps(_record(result.columns, row), indent=2, default=str).replace("\n", "\n  ")
            texts.append(("[\n  " if first else ",\n  ") + text)
            first = False
        yield "".join(texts)
    yield "[]" if first else "\n]"


def terminal_table(result: Rows, width: int | None, key_columns: Sequence[str] = (),
                   labels: dict[str, str] | None = None) -> str:
    """The table for a person: all columns when `width` is None, else what fits in `width` columns; each
    column under its label (`labels`, else its name), a label of several words on two lines when its
    values are narrower."""
    if not result.rows:
        return "(0 rows)"
    shown_rows = result.rows[:TABLE_MAX_ROWS]
    texts = {name: [table_cell(row[i]) for row in shown_rows] for i, name in enumerate(result.columns)}
    for name in PATH_COLUMNS:
        if name in texts:
            texts[name] = shortest_unique_suffixes(texts[name])
    headers = {name: header_lines((labels or {}).get(name, name), max(map(display_width, texts[name])))
               for name in result.columns}
    natural = {name: max(display_width(t) for t in [*headers[name], *texts[name]]) for name in result.columns}
    filled = [c for c in result.columns if any(texts[c])]  # an empty column is not worth the room
    # In a declared view an empty key column (a phase that did not happen) is left out too.
    keys = [c for c in key_columns if c in (filled if labels else result.columns)] or list(result.columns)
    separator = SEPARATOR
    if width is None:
        chosen, widths = list(result.columns), natural
    else:
        widths = fit_widths(keys, natural, width, headers)
        if widths is None and labels:  # a declared view: its key columns closer together before records
            separator = NARROW_SEPARATOR
            widths = fit_widths(keys, natural, width, headers, separator)
        if widths is None:
            lines = expanded(keys, texts, len(shown_rows), width, headers)
            return finish(lines, result, keys, width)
        add_columns_that_fit(filled, widths, natural, width, separator)
        chosen = [c for c in result.columns if c in widths]
        if labels:  # the key columns in the view's reading order, then the others
            chosen = [*(c for c in keys if c in widths), *(c for c in chosen if c not in keys)]
    lines = table_lines(chosen, texts, widths, len(shown_rows), headers, separator)
    return finish(lines, result, chosen, width)


def header_lines(label: str, values_width: int) -> list[str]:
    """A column's header: one line, or its words on two lines when the label is wider than its values
    (split where the longer line is shortest)."""
    words = label.split(" ")
    if display_width(label) <= values_width or len(words) < 2:
        return [label]
    splits = [(" ".join(words[:i]), " ".join(words[i:])) for i in range(1, len(words))]
    return list(min(splits, key=lambda pair: max(map(display_width, pair))))


def fit_widths(columns: Sequence[str], natural: dict[str, int], width: int,
               headers: dict[str, list[str]] | None = None, separator: str = SEPARATOR) -> dict[str, int] | None:
    """Column widths that fit `width`, cutting the widest text columns first; None when none do."""
    widths = {c: natural[c] for c in columns}
    heads = headers or {c: [c] for c in columns}
    floors = {c: natural[c] if natural[c] <= CUTTABLE_WIDTH else
              max(max(map(display_width, heads[c])), MIN_TEXT_WIDTH) for c in columns}
    excess = table_width(widths, separator) - width
    while excess > 0:
        shrinkable = sorted((c for c in columns if widths[c] > floors[c]), key=lambda c: -widths[c])
        if not shrinkable:
            return None
        # The widest down to the next widest first, so that two long columns (a template and a source)
        # share the room rather than one keeping all of it.
        widest = shrinkable[0]
        runner_up = max([widths[c] for c in shrinkable[1:]] + [floors[widest]])
        cut = min(excess, max(1, widths[widest] - runner_up), widths[widest] - floors[widest])
        widths[widest] -= cut
        excess -= cut
    return widths


def add_columns_that_fit(candidates: Sequence[str], widths: dict[str, int], natural: dict[str, int],
                         width: int, separator: str = SEPARATOR) -> None:
    """Add to `widths` (the key columns' layout) each other candidate, in order, that still fits whole."""
    room = width - table_width(widths, separator)
    for name in candidates:
        if name not in widths and natural[name] + len(separator) <= room:
            widths[name] = natural[name]
            room -= natural[name] + len(separator)


def table_width(widths: dict[str, int], separator: str = SEPARATOR) -> int:
    return 1 + sum(widths.values()) + len(separator) * (len(widths) - 1)


def table_lines(columns: Sequence[str], texts: dict[str, list[str]], widths: dict[str, int], n_rows: int,
                headers: dict[str, list[str]] | None = None, separator: str = SEPARATOR) -> list[str]:
    numeric = {c: all(_looks_numeric(t) for t in texts[c] if t) for c in columns}
    # A column of paths (a source's name always is one) loses its head when cut, not the file name at its end.
    paths = {c: c in PATH_COLUMNS or (all("/" in t and " " not in t for t in texts[c] if t) and any(texts[c]))
             for c in columns}

    def line(values: Sequence[str], header: bool = False) -> str:
        cells = [pad(clip(v, widths[c], keep_end=paths[c] and not header), widths[c], right=numeric[c])
                 for c, v in zip(columns, values, strict=True)]
        return (" " + separator.join(cells)).rstrip()

    heads = headers or {c: [c] for c in columns}
    depth = max(len(heads[c]) for c in columns)
    header = [line([(["", *heads[c]] if len(heads[c]) < depth else heads[c])[row] for c in columns], header=True)
              for row in range(depth)]
    joint = "─┼─" if separator == SEPARATOR else " "
    rule = "─" + joint.join("─" * widths[c] for c in columns)
    return [*header, rule, *(line([texts[c][i] for c in columns]) for i in range(n_rows))]


def expanded(columns: Sequence[str], texts: dict[str, list[str]], n_rows: int, width: int,
             headers: dict[str, list[str]] | None = None) -> list[str]:
    """One field per line, each record under a `-[ RECORD n ]` rule, long values wrapped to the width."""
    names = {c: " ".join((headers or {}).get(c, [c])) for c in columns}
    label_width = max(display_width(names[c]) for c in columns)
    value_width = max(width - label_width - 3, 8)
    lines = []
    for i in range(n_rows):
        title = f"-[ RECORD {i + 1} ]"
        lines.append(title + "-" * max(0, min(width, label_width + 3 + value_width) - len(title)))
        for name in columns:
            chunks = wrap_cells(texts[name][i], value_width) or [""]
            lines.append((f"{pad(names[name], label_width)} │ {chunks[0]}").rstrip())
            lines.extend(f"{' ' * label_width} │ {chunk}".rstrip() for chunk in chunks[1:])
    return lines


def finish(lines: list[str], result: Rows, shown: Sequence[str], width: int | None) -> str:
    """The table's lines, then what was left out: rows beyond TABLE_MAX_ROWS and columns not shown."""
    notes = []
    if result.count > TABLE_MAX_ROWS:
        notes.append(f"… {result.count - TABLE_MAX_ROWS:,} more rows of {result.count:,}: "
                     "--format csv, tsv, json or markdown gives them all")
    hidden = [c for c in result.columns if c not in shown]
    if hidden:
        notes.append(f"({len(hidden)} more column{'s' if len(hidden) > 1 else ''}: {', '.join(hidden)}; "
                     "show them with --columns NAME,... or --columns all)")
    for note in notes:
        lines.extend(textwrap.wrap(note, width) if width else [note])
    return "\n".join(lines)


def display_width(text: str) -> int:
    """Columns `text` takes on a terminal: East Asian wide characters take two, combining marks none."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def clip(text: str, width: int, keep_end: bool = False) -> str:
    """`text` cut to `width` terminal columns with an ellipsis, at its end (or, `keep_end`, at its start)."""
    if display_width(text) <= width:
        return text
    out, used = [], 0
    for ch in reversed(text) if keep_end else text:
        w = display_width(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "…" + "".join(reversed(out)) if keep_end else "".join(out) + "…"


def pad(text: str, width: int, right: bool = False) -> str:
    gap = " " * max(0, width - display_width(text))
    return gap + text if right else text + gap


def wrap_cells(text: str, width: int) -> list[str]:
    """`text` in pieces of at most `width` terminal columns, broken after a space where there is one."""
    pieces = []
    while display_width(text) > width:
        head = clip(text, width + 1)[:-1]  # the longest start that fits
        space = head.rfind(" ")
        cut = space + 1 if space > 0 else len(head)
        pieces.append(text[:cut].rstrip())
        text = text[cut:]
    return [*pieces, text] if text else pieces


def _looks_numeric(text: str) -> bool:
    return text.lstrip("-").replace(".", "", 1).isdigit()


def _is_missing(value: Any) -> bool:
    """pandas' NaT and NA (which exist only when pandas was imported by whoever made the value)."""
    pd = sys.modules.get("pandas")
    return pd is not None and (value is pd.NaT or value is pd.NA)
