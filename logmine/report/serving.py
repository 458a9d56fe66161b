"""Serving: per-run figures and their course over time."""

from __future__ import annotations

import pandas as pd

from .common import chart_run_name, draw, run_name
from .data import ReportData
from .model import Chart, Section, Table, Text
from .words import missing, number

TREND_PANELS = [("decode throughput (token/s)", "decode_tok_s"), ("KV token usage", "token_usage"),
                ("queued requests", "queue_req"), ("prefix-cache hit share", "cache_hit_share")]


def serving_section(data: ReportData) -> Section | None:
    serving = data["serving"]
    served = serving[serving["decode_batches"].fillna(0) + serving["prefill_batches"].fillna(0) > 0]
    if served.empty:
        return None
    timeline = data["serving-trend"]
    rows = []
    for _, s in served.iterrows():
        source, ordinal = s["source"], int(s["run"])
        rows.append([Text(run_name(data, source, ordinal)), Text(number(s["http_requests"])),
                     Text(number(s["http_errors"])), Text(number(s["decode_tok_s_p50"])),
                     Text(number(s["decode_tok_s_p90"])), Text(number(s["token_usage_peak"])),
                     Text(number(s["running_req_peak"])), Text(number(s["queue_req_peak"])),
                     Text(f"{s['cache_hit_share']:.1%}" if not missing(s["cache_hit_share"]) else ""),
                     Text(number(s["accept_len_mean"], 3)), Text(number(s["retractions"]),
                                                                  data.cite(source, ordinal, "retraction"))])
    blocks = [Text("Decode throughput is SGLang's own per-interval figure (percentiles over log intervals); token "
                   "usage is the share of the KV pool in use; cache hits are cached / (cached + new) prefill tokens."),
              Table(["run", "HTTP requests", "HTTP errors", "decode tok/s p50", "p90", "KV usage peak",
                     "running peak", "queue peak", "cache hits", "accept length", "retractions"], rows,
                    [False] + [True] * 10)]
    if not timeline.empty:
        panels = trend_panels(data, timeline)
        if panels:
            minutes = int(timeline["bucket_s"].iloc[0]) // 60
            bucket = "minute" if minutes == 1 else f"{minutes} minutes"
            alt = f"per {bucket} since each run started: " + ", ".join(panels) + " for " + ", ".join(
                sorted({label for lines in panels.values() for label in lines}))
            blocks.append(Chart(lambda: draw("time_panels", panels, f"minutes since the run started, per {bucket}"),
                                alt))
    return Section("Serving", blocks, "serving")


def trend_panels(data: ReportData, timeline: pd.DataFrame) -> dict[str, dict[str, tuple[list, list]]]:
    """Each figure's course, run by run, against minutes since that run started: runs of servers weeks
    apart share one axis and each reads as a line, not as a stroke on a calendar."""
    starts = data["runs"].set_index(["source", "ordinal"])["started_at"]
    panels: dict[str, dict[str, tuple[list, list]]] = {}
    for title, column in TREND_PANELS:
        if not timeline[column].fillna(0).any():
            continue  # a flat zero (nothing ever queued) is said by the table above
        for (source, ordinal), part in timeline.groupby(["source", "run"], sort=False):
            part = part[part[column].notna()]
            if not part.empty:
                since = (part["bucket"] - starts[(source, ordinal)]).dt.total_seconds() / 60
                panels.setdefault(title, {})[chart_run_name(data, source, int(ordinal))] = (
                    list(since), list(part[column]))
    return panels
