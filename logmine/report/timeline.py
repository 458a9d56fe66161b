"""The timeline of every run: a Gantt of its start-up phases and a table of them."""

from __future__ import annotations

import pandas as pd

from .common import draw, of_run, run_name, run_rows
from .data import ReportData
from .model import Bar, Chart, Section, Table, Text
from .words import missing, seconds

# load-time's phase columns in the order a start goes through them, with their names in the report
# and the evidence figure that cites each.
PHASES = [("to_init_s", "start → init", "started"), ("init_s", "init", "init"),
          ("weights_s", "weights", "weights"), ("kv_pool_s", "KV pool", "kv_pool"),
          ("cuda_graph_s", "CUDA graphs", "cuda_graphs"), ("draft_weights_s", "draft model", "draft_weights"),
          ("draft_graph_s", "draft CUDA graphs", "draft_cuda_graphs"), ("host_cache_s", "HiCache host pool", "hicache"),
          ("warmup_s", "warmup", "ready")]
SERVING, UNFINISHED = "serving", "loading, never ready"
# Ranks whose phases differ by less than this (seconds) are drawn as one bar.
RANK_SPREAD_S = 2.0


def phase_rows(data: ReportData, source: str, run: int) -> pd.DataFrame:
    """Rank 0's phases, or every rank's when they differ by more than RANK_SPREAD_S."""
    rows = of_run(data["load-time"], source, run)
    if rows.empty:
        return rows
    columns = [p[0] for p in PHASES]
    spread = (rows[columns].max() - rows[columns].min()).fillna(0)
    return rows if (spread > RANK_SPREAD_S).any() else rows.iloc[:1]


def timeline_section(data: ReportData) -> Section | None:
    bars, table_columns, longest = [], [], 0.0
    for run in run_rows(data):
        source, ordinal = run["source"], int(run["ordinal"])
        rows = phase_rows(data, source, ordinal)
        lifetime = (run["ended_at"] - run["started_at"]).total_seconds() if not missing(run["ended_at"]) else None
        for _, p in rows.iterrows():
            start, segments = 0.0, []
            for column, name, _ in PHASES:
                if not missing(p[column]):
                    segments.append((name, start, float(p[column])))
                    start += float(p[column])
            ready = not missing(run["ready_at"])
            note = ""
            if ready:
                start = float(p["total_s"])
                served = (lifetime - start) if lifetime is not None else None
                end = {"running": "still running", "restarted": "restarted", "stopped": "stopped"}.get(
                    run["end_reason"], run["end_reason"])
                note = f"ready at {seconds(start)}; served {seconds(served) or 'until the log ends'}, {end}"
                segments.append((SERVING, start, served if served is not None else start * 0.2))
            elif lifetime is not None:
                segments.append((UNFINISHED, start, max(lifetime - start, 0)))
                note = f"{run['end_reason']} after {seconds(lifetime)}"
                start = lifetime
            longest = max(longest, start)
            label = run_name(data, source, ordinal) + (f" {p['rank']}" if len(rows) > 1 else "")
            bars.append(Bar(label, segments, note))
            cells = [Text(seconds(p[column], minutes_too=False),
                          [] if missing(p[column]) else data.cite(source, ordinal, figure, p["rank"]))
                     for column, _, figure in PHASES]
            if not ready:  # the phase it never finished: the next one the source's other runs went through
                logged = [i for i, (column, _, _) in enumerate(PHASES) if not missing(p[column])]
                siblings = data["load-time"][data["load-time"]["source"] == source]
                later = [i for i in range(logged[-1] + 1 if logged else 0, len(PHASES))
                         if siblings[PHASES[i][0]].notna().any()]
                if later:
                    cells[later[0]] = Text(f"unfinished ({run['end_reason']})")
            cells.append(Text(seconds(p["total_s"], minutes_too=False) if ready else "never ready",
                              data.cite(source, ordinal, "ready") + data.cite(source, ordinal, "started")))
            table_columns.append((label, cells))
    if not bars:
        return None
    phases = [name for _, name, _ in PHASES] + [SERVING, UNFINISHED]
    alt = "; ".join(f"{b.label}: {b.note}" for b in bars)
    # Phases down, runs across: a few runs read side by side, and the table stays narrow.
    names = [name for _, name, _ in PHASES] + ["until ready"]
    table_rows = [[Text(name)] + [cells[i] for _, cells in table_columns] for i, name in enumerate(names)]
    columns = ["phase"] + [label for label, _ in table_columns]
    blocks = [Text("Each start's phases as rank 0 logged them, or every rank's where ranks differ by more than "
                   f"{RANK_SPREAD_S:.0f} s. Bars of long serving are cut short; the note at their end says how long."),
              Chart(lambda: draw("gantt", bars, phases, longest or 1.0), alt),
              Table(columns, table_rows, [False] + [True] * (len(columns) - 1))]
    return Section("Timeline of every run", blocks, "timeline")
