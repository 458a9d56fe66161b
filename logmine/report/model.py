"""The report as a document: sections of sentences, tables, charts and folded blocks, each carrying the
evidence it rests on. The HTML and Markdown writers render the same document."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar


@dataclass(frozen=True)
class Citation:
    """Where a figure comes from: `ref` as shown (`journal.txt:1197`, `session …/message 18`), `where` in
    full (the source's path) and `text`, the cited line or message itself."""

    ref: str
    where: str
    text: str


@dataclass
class Text:
    """A sentence, or a table cell: words and the evidence they rest on."""

    kind: ClassVar[str] = "text"
    words: str
    cites: list[Citation] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Cells come straight from query rows: a NULL (NaN, NA) is an empty cell, a number its text.
        if not isinstance(self.words, str):
            self.words = "" if self.words is None or self.words != self.words or str(self.words) == "<NA>" \
                else str(self.words)


@dataclass
class Heading:
    kind: ClassVar[str] = "heading"
    words: str


@dataclass
class Table:
    kind: ClassVar[str] = "table"
    columns: list[str]
    rows: list[list[Text]]
    # Columns that hold figures are right-aligned.
    numeric: list[bool] = field(default_factory=list)

    @cached_property
    def cited_file(self) -> str | None:
        """The one log file every citation of the table cites, when there is one: the writers then name it
        once, under the table, and show each citation as its line (`:1517`), not a long file name per cell."""
        refs = {c.ref for row in self.rows for cell in row for c in cell.cites}
        files = {ref.rpartition(":")[0] for ref in refs if ref.rpartition(":")[2].isdigit()}
        return files.pop() if len(files) == 1 and all(ref.rpartition(":")[2].isdigit() for ref in refs) else None

    def shown_ref(self, cite: Citation) -> str:
        """A citation as a cell shows it: its line alone when the table names its file once."""
        return cite.ref.removeprefix(self.cited_file) if self.cited_file else cite.ref


@dataclass
class Bar:
    """One row of a Gantt chart: labelled segments (name, start s, length s) and a note at its end."""

    label: str
    segments: list[tuple[str, float, float]]
    note: str = ""


@dataclass
class Chart:
    """An inline SVG, drawn only when a writer asks for it (Markdown shows `alt`, what it shows in words)."""

    kind: ClassVar[str] = "chart"
    draw: Callable[[], str]
    alt: str

    @cached_property
    def svg(self) -> str:
        return self.draw()


@dataclass
class Folded:
    """A long text (a whole traceback, a unit file) folded under a one-line summary."""

    kind: ClassVar[str] = "folded"
    summary: Text
    body: str


Block = Text | Heading | Table | Chart | Folded


@dataclass
class Section:
    title: str
    blocks: list[Block]
    anchor: str = ""


@dataclass
class Document:
    title: str
    subtitle: str
    sections: list[Section]

    def citations(self) -> list[Citation]:
        """Every citation, once, in the order it first appears."""
        seen: dict[tuple[str, str], Citation] = {}
        for section in self.sections:
            for block in section.blocks:
                texts = [block] if isinstance(block, Text) else []
                if isinstance(block, Table):
                    texts = [cell for row in block.rows for cell in row]
                elif isinstance(block, Folded):
                    texts = [block.summary]
                for text in texts:
                    for cite in text.cites:
                        seen.setdefault((cite.where, cite.ref), cite)
        return list(seen.values())
