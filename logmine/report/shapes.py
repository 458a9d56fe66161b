"""New shapes: the logs of the report whose lines logmine mostly could not type, and what they look like, and
the logs several hosts wrote at once."""

from __future__ import annotations

from .data import ReportData
from .model import Section, Text
from .words import number


def shapes_section(data: ReportData) -> Section | None:
    shapes = data["new-shapes"]
    if shapes.empty:
        return None
    blocks = [Text(f"{data.source_name(row.source)}: {row.shape}"
                   + (f"; {number(row.untyped)} of its {number(row.lines)} lines are kept untyped (logmine unparsed "
                      "groups them)." if row.untyped else "."),
                   [data.cite_line(row.source, int(row.line), row.example)])
              for row in shapes.itertuples(index=False)]
    return Section("New shapes", blocks, "new-shapes")
