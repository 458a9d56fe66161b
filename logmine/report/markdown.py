"""The report as Markdown for a ticket or a pull request: the same sections, charts as their words,
citations as `file:line` and, at the end, every cited line (a long one cut, as on hover in HTML)."""

from __future__ import annotations

import html
import re

from .data import CITED_CHARS
from .model import Citation, Document, Table, Text

# Characters that would turn log text into Markdown markup (emphasis, links, code, table cells).
MARKUP = re.compile(r"([\\`*_\[\]|#~])")


def escape(text: str) -> str:
    """Log or transcript text as literal Markdown: angle brackets as entities (no tag can open; an `&`
    stays readable, since an entity only ever decodes to text), markup characters backslashed, one line."""
    flat = " ".join(text.split()).replace("<", "&lt;").replace(">", "&gt;")
    return MARKUP.sub(r"\\\1", flat)


def fence(body: str) -> str:
    """A code fence longer than any run of backticks in the body."""
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    return "`" * max(3, longest + 1)


def refs(cites: list[Citation], table: Table | None = None) -> str:
    return "".join(f" [`{table.shown_ref(c) if table else c.ref}`]" for c in cites)


def text(t: Text, table: Table | None = None) -> str:
    return escape(t.words) + refs(t.cites, table)


def render_markdown(doc: Document) -> str:
    out = [f"# {escape(doc.title)}", "", f"_{escape(doc.subtitle)}_", ""]
    for section in doc.sections:
        out += [f"## {escape(section.title)}", ""]
        for block in section.blocks:
            if block.kind == "text":
                out += [text(block), ""]
            elif block.kind == "heading":
                out += [f"### {escape(block.words)}", ""]
            elif block.kind == "chart":
                out += [f"_Chart (in the HTML report): {escape(block.alt)}_", ""]
            elif block.kind == "folded":
                marks = fence(block.body)
                out += ["<details><summary>" + html.escape(block.summary.words) + "</summary>", "",
                        marks, block.body, marks, "", "</details>", "", refs(block.summary.cites).strip(), ""]
            elif block.kind == "table":
                out.append("| " + " | ".join(escape(c) for c in block.columns) + " |")
                out.append("|" + "|".join("---:" if block.numeric and block.numeric[i] else "---"
                                           for i in range(len(block.columns))) + "|")
                out += ["| " + " | ".join(text(cell, block) for cell in row) + " |" for row in block.rows]
                out.append("")
                if block.cited_file:
                    out += [f"_Cited lines: {escape(block.cited_file)}_", ""]
    cited = doc.citations()
    if cited:
        body = "\n".join(f"{c.ref}  {' '.join(c.text.split())}" for c in cited)
        marks = fence(body)
        out += ["## Evidence", "", f"Every cited line (long ones cut at {CITED_CHARS} characters):", "",
                marks, body, marks, ""]
    return "\n".join(out)
