"""The report as one self-contained HTML page: no script, no external resource, every text escaped."""

from __future__ import annotations

import jinja2

from .model import Document

ENVIRONMENT = jinja2.Environment(
    loader=jinja2.PackageLoader("logmine.report", "templates"),
    autoescape=True,  # every log and transcript text is escaped; only the SVG charts are marked safe
    trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)


def render_html(doc: Document) -> str:
    return ENVIRONMENT.get_template("report.html.j2").render(doc=doc)
