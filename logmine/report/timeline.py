"""The timeline of every run: a Gantt of its start-up phases and a table of them."""

from __future__ import annotations

from itertools import groupby

import pandas as pd

from ..derive.causes import phase_words
from .common import chart_run_name, draw, of_run, rank_groups, run_name, run_rows
from .data import ReportData
from .model import Bar, Block, Chart, Heading, Section, Table, Text
from .words import duration, missing, seconds

# load-time's phase columns in the order a start goes through them, with their names in the report
# and the evidence figure that cites each.
PHASES = [("to_init_s", "start → init", "started"), ("init_s", "init", "init"),
          ("weights_s", "weights", "weights"), ("kv_pool_s", "KV pool", "kv_pool"),
          ("cuda_graph_s", "CUDA graphs", "cuda_graphs"), ("draft_weights_s", "draft model", "draft_weights"),
          ("draft_graph_s", "draft CUDA graphs", "draft_cuda_graphs"), ("host_cache_s", "HiCache host pool", "hicache"),
          ("warmup_s", "warmup", "ready")]
SERVING, UNFINISHED = "serving", "loading, never ready"
# The phase table's row for each `failed_phase` (see logmine/derive/causes.py).
FAILED_PHASE_COLUMNS = {"distributed init": "init_s", "weights": "weights_s", "KV pool": "kv_pool_s",
                        "CUDA graphs": "cuda_graph_s", "HiCache host pool": "host_cache_s", "warmup": "warmup_s"}
# Ranks whose phases differ by less than this (seconds) are drawn as one bar.
RANK_SPREAD_S = 2.0
# Runs side by side in one phase table: more would not fit a narrow window, so the next ones get their own.
RUNS_PER_TABLE = 4


def phase_rows(data: ReportData, source: str, run: int) -> pd.DataFrame:
    """Rank 0's phases, or where ranks differ by more than RANK_SPREAD_S, a row per group of ranks within it
    of each other (labelled `TP0-14 (15 ranks)`); for a run that logged no phase (a log that begins with its
    crash), one row without any, so that the run is still shown."""
    load = data["load-time"]
    rows = of_run(load, source, run)
    if rows.empty:
        return pd.DataFrame([{"source": source, "run": run}], columns=load.columns)
    groups = rank_groups(rows, [p[0] for p in PHASES], within=RANK_SPREAD_S)
    if len(groups) == 1:
        return rows.iloc[:1]
    # `rank` stays the group's first rank, whose lines the cells cite; `ranks` names the group.
    return pd.DataFrame([first.to_dict() | {"ranks": label} for first, label in groups])


def run_bar(run: pd.Series, phases: pd.Series, label: str) -> Bar:
    """A start's phases end to end, then its serving (or its loading until it ended), and a note on how it
    went: when it was ready and how long it served, or how long it loaded before it ended."""
    start, segments = 0.0, []
    for column, name, _ in PHASES:
        if not missing(phases[column]):
            segments.append((name, start, float(phases[column])))
            start += float(phases[column])
    lifetime = (run["ended_at"] - run["started_at"]).total_seconds() if not missing(run["ended_at"]) else None
    if not missing(run["ready_at"]):
        ready = float(phases["total_s"])
        served = lifetime - ready if lifetime is not None else None
        end = {"running": "still running"}.get(run["end_reason"], run["end_reason"])
        segments.append((SERVING, ready, served if served is not None else ready * 0.2))
        served_for = f"served {duration(served)}" if served is not None else "served until the log ends"
        return Bar(label, segments, f"ready at {seconds(ready, minutes_too=False)}; {served_for}, {end}")
    if lifetime is None:
        return Bar(label, segments)
    segments.append((UNFINISHED, start, max(lifetime - start, 0)))
    if not segments[:-1]:
        return Bar(label, segments, f"{run['end_reason']} before its log shows any start-up phase")
    where = phase_words(phases.get("failed_phase")) if not missing(phases.get("failed_phase")) else None
    return Bar(label, segments, f"{run['end_reason']} {where + ' ' if where else ''}after {duration(lifetime)}")


def phase_cells(data: ReportData, run: pd.Series, phases: pd.Series) -> list[Text]:
    """A start's column of the phase table: each phase's seconds (cited), the one it never finished, the total."""
    source, ordinal = run["source"], int(run["ordinal"])
    cells = [Text(seconds(phases[column], minutes_too=False),
                  [] if missing(phases[column]) else data.cite(source, ordinal, figure, phases["rank"]))
             for column, _, figure in PHASES]
    ready = not missing(run["ready_at"])
    failed_in = FAILED_PHASE_COLUMNS.get(str(phases.get("failed_phase") or "").partition(" at ")[0])
    if not ready and failed_in:  # the phase it died in, as the run's own lines show
        index = next(i for i, (column, _, _) in enumerate(PHASES) if column == failed_in)
        spent = "" if missing(phases[failed_in]) else seconds(phases[failed_in], minutes_too=False) + ", "
        cells[index] = Text(f"{spent}{run['end_reason']} here ({phases['failed_phase']})", cells[index].cites)
    elif not ready:  # the phase it never finished: the next one the source's other runs went through
        logged = [i for i, (column, _, _) in enumerate(PHASES) if not missing(phases[column])]
        siblings = data["load-time"][data["load-time"]["source"] == source]
        later = [i for i in range(logged[-1] + 1 if logged else 0, len(PHASES))
                 if siblings[PHASES[i][0]].notna().any()]
        if later:
            cells[later[0]] = Text(f"unfinished ({run['end_reason']})")
    cells.append(Text(seconds(phases["total_s"], minutes_too=False) if ready else "never ready",
                      data.cite(source, ordinal, "ready") + data.cite(source, ordinal, "started")))
    return cells


def phase_tables(data: ReportData, columns: list[tuple[str, str, list[Text]]]) -> list[Block]:
    """Phases down, runs across: a few runs read side by side. A table per source (headed by its name when
    there are several) and per RUNS_PER_TABLE runs, so that no table outgrows a narrow window."""
    names = [name for _, name, _ in PHASES] + ["until ready"]
    several = len({source for source, _, _ in columns}) > 1
    blocks: list[Block] = []
    for source, group in groupby(columns, key=lambda column: column[0]):
        runs = list(group)
        blocks += [Heading(f"Phases of {data.source_name(source)}")] if several else []
        for first in range(0, len(runs), RUNS_PER_TABLE):
            part = runs[first:first + RUNS_PER_TABLE]
            rows = [[Text(name)] + [cells[i] for _, _, cells in part] for i, name in enumerate(names)]
            blocks.append(Table(["phase"] + [label for _, label, _ in part], rows, [False] + [True] * len(part)))
    return blocks


def timeline_section(data: ReportData) -> Section | None:
    bars, columns, described = [], [], []
    for run in run_rows(data):
        source, ordinal = run["source"], int(run["ordinal"])
        rows = phase_rows(data, source, ordinal)
        for _, phases in rows.iterrows():
            rank = f" {phases['ranks']}" if len(rows) > 1 else ""
            bars.append(run_bar(run, phases, chart_run_name(data, source, ordinal) + rank))
            columns.append((source, f"run {ordinal}{rank}", phase_cells(data, run, phases)))
            described.append(f"{run_name(data, source, ordinal)}{rank}: {bars[-1].note}")
    if not bars:
        return None
    # How far the starts go: the Gantt's scale (serving, hours long, is cut a little past it).
    longest = max((start if name == SERVING else start + length
                   for bar in bars for name, start, length in bar.segments), default=0.0)
    phases = [name for _, name, _ in PHASES] + [SERVING, UNFINISHED]
    alt = "; ".join(described)
    blocks = [Text("Each start's phases as rank 0 logged them, or where ranks differ by more than "
                   f"{RANK_SPREAD_S:.0f} s, each group of ranks within it of each other. Bars of long serving are "
                   "cut short; the note beside each bar says how long it served."),
              Chart(lambda: draw("gantt", bars, phases, longest or 1.0), alt)]
    return Section("Timeline of every run", blocks + phase_tables(data, columns), "timeline")
