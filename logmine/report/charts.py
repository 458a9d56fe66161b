"""Static charts as inline SVG (matplotlib, no JavaScript): the start-up Gantt, the GPU memory budget
and serving over time. Text stays text in the SVG (selectable, found by search) and matplotlib escapes it."""

from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Sequence

import matplotlib
from matplotlib.figure import Figure  # a bare Figure, not pyplot: no GUI backend, no global state
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .model import Bar

STYLE = {"svg.fonttype": "none", "svg.hashsalt": "logmine", "font.size": 9, "font.family": "sans-serif",
         "axes.spines.top": False, "axes.spines.right": False}
# Colour-blind-safe palette (Okabe-Ito), one colour per phase / memory share.
LINE_COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
PALETTE = ["#999999", "#56B4E9", "#0072B2", "#009E73", "#E69F00", "#CC79A7", "#D55E00", "#F0E442", "#882255",
           "#44AA99", "#332288"]
NOTE_CHARS = 36  # a Gantt note wraps at this width, to leave the bars room
LEGEND_COLUMNS = 3  # series names in a row of the time panels' legend


def to_svg(fig: Figure) -> str:
    buffer = io.StringIO()
    # A constrained layout rather than bbox_inches="tight", which draws the figure twice.
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    svg = buffer.getvalue()
    # Inline SVG needs neither the XML prolog, the DTD reference nor the RDF metadata block.
    svg = svg[svg.index("<svg"):]
    return re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)


def gantt(bars: Sequence[Bar], phases: Sequence[str], x_limit: float) -> str:
    colours = dict(zip(phases, PALETTE, strict=False))
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(9, 0.45 * len(bars) + 1.6), layout="constrained")
        ax = fig.add_subplot()
        # Bars longer than the longest start (hours of serving) are cut a little past it; the note says how long.
        cut = x_limit * 1.1
        for y, bar in enumerate(bars):
            for name, start, length in bar.segments:
                ax.barh(y, max(min(length, cut - start), 0), left=start, color=colours.get(name, "#dddddd"),
                        edgecolor="white", linewidth=0.5, height=0.6)
            # Notes in a column right of the plot: its width is a margin the layout makes room for, whatever
            # the bars' lengths (a note at a bar's end moved as the layout shrank the plot, and was cut).
            ax.text(1.01, y, textwrap.fill(bar.note, NOTE_CHARS), transform=ax.get_yaxis_transform(),
                    va="center", fontsize=8)
        ax.set_yticks(range(len(bars)), [b.label for b in bars])
        ax.invert_yaxis()
        ax.set_xlim(0, cut)
        ax.set_xlabel("seconds since the start")
        used = [p for p in phases if any(s[0] == p for b in bars for s in b.segments)]
        handles = [Patch(color=colours.get(p, "#dddddd"), label=p) for p in used]
        fig.legend(handles=handles, loc="outside lower center", ncol=6, frameon=False, fontsize=8)
        return to_svg(fig)


def stacked_bars(labels: Sequence[str], shares: dict[str, Sequence[float]], unit: str) -> str:
    """Horizontal stacked bars: one per label, one colour per share (missing shares as 0)."""
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(9, 0.5 * len(labels) + 1.4), layout="constrained")
        ax = fig.add_subplot()
        left = [0.0] * len(labels)
        for colour, (name, values) in zip(PALETTE[1:], shares.items(), strict=False):
            widths = [v or 0.0 for v in values]
            if not any(widths):
                continue  # a share no bar has (no draft model) stays out of the legend
            ax.barh(range(len(labels)), widths, left=left, color=colour, label=name, height=0.6,
                    edgecolor="white", linewidth=0.5)
            for y, (x, w) in enumerate(zip(left, widths, strict=True)):
                if w >= 4:
                    ax.text(x + w / 2, y, f"{w:.2f}", ha="center", va="center", fontsize=7)
            left = [x + w for x, w in zip(left, widths, strict=True)]
        ax.set_yticks(range(len(labels)), labels)
        ax.invert_yaxis()
        ax.set_xlabel(unit)
        fig.legend(loc="outside lower center", ncol=6, frameon=False, fontsize=8)
        return to_svg(fig)


def time_panels(series: dict[str, dict[str, tuple[list, list]]], x_label: str) -> str:
    """Small multiples sharing the x axis: panel title -> line label -> (x values, y values). A line keeps
    its colour in every panel, and one legend above the panels names them all."""
    labels = list(dict.fromkeys(label for lines in series.values() for label in lines))
    colours = dict(zip(labels, LINE_COLOURS * len(labels), strict=False))
    legend_rows = -(-len(labels) // LEGEND_COLUMNS)
    with matplotlib.rc_context(STYLE):
        # Fixed margins: a constrained layout measures every tick label of every panel (a second or so).
        top_in, bottom_in = 0.3 + 0.2 * legend_rows, 0.55
        height = 1.6 * len(series) + top_in + bottom_in - 0.3
        fig = Figure(figsize=(9, height))
        fig.subplots_adjust(left=0.07, right=0.98, top=1 - top_in / height, bottom=bottom_in / height, hspace=0.45)
        axes = fig.subplots(len(series), 1, sharex=True, squeeze=False)[:, 0]
        for ax, (title, lines) in zip(axes, series.items(), strict=True):
            for label, (xs, ys) in lines.items():
                # Dots mark a few points; on hundreds they only add weight to the SVG.
                ax.plot(xs, ys, color=colours[label], linewidth=1.2, marker="." if len(xs) <= 60 else None,
                        markersize=3)
            ax.set_title(title, loc="left", fontsize=9)
        handles = [Line2D([], [], color=colours[label], linewidth=1.2, label=label) for label in labels]
        fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.07, 1), ncol=LEGEND_COLUMNS, frameon=False,
                   fontsize=8)
        axes[-1].set_xlabel(x_label)
        axes[-1].set_xlim(left=0)
        return to_svg(fig)
