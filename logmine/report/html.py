"""The report as one self-contained HTML page: no script, no external resource, every text escaped."""

from __future__ import annotations

import re

import jinja2
import markupsafe

from .model import Document

ENVIRONMENT = jinja2.Environment(
    loader=jinja2.PackageLoader("logmine.report", "templates"),
    autoescape=True,  # every log and transcript text is escaped; only the SVG charts are marked safe
    trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)

# Where a cited file's name may wrap: after a directory, a word of a snake_case name, and before the line.
NAME_BREAKS = re.compile(r"(?<=[/_:])")


def breakable(name: str) -> markupsafe.Markup:
    """A citation's `file:line`, escaped, that may wrap only at NAME_BREAKS: a narrow column then shows
    `journal.txt:` above `1327` rather than `journal.` above `txt:54`."""
    return markupsafe.Markup("<wbr>").join(markupsafe.escape(part) for part in NAME_BREAKS.split(name))


ENVIRONMENT.filters["breakable"] = breakable


def render_html(doc: Document) -> str:
    return ENVIRONMENT.get_template("report.html.j2").render(doc=doc)
