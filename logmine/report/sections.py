"""The report's sections, each built from the gathered rows; a section with nothing to show is None."""

from __future__ import annotations

import json

import pandas as pd

from .data import ReportData, cite_line, short_session, short_source
from .model import Bar, Chart, Folded, Heading, Section, Table, Text
from .words import first_upper, missing, number, plural, quote, rank_span, seconds, value

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
# What a server was doing after the last start-up milestone it logged.
DOING_AFTER = [("started", "initialising"), ("weights_begin", "loading weights"), ("weights", "allocating the KV pool"),
               ("kv_pool", "capturing CUDA graphs"), ("cuda_graphs", "loading the draft model or warming up"),
               ("hicache", "pinning the HiCache host pool")]
CRASH_KINDS = ("oom", "host_memory", "abort", "traceback")
NOISE_KEYS = {"random_seed"}  # an unpinned seed changes on every start


def draw(chart: str, *args: object) -> str:
    """An SVG from `charts`, imported only when a chart is drawn: Markdown never loads matplotlib."""
    from . import charts

    return getattr(charts, chart)(*args)


def run_name(data: ReportData, source: str, run: int) -> str:
    several = data["runs"]["source"].nunique() > 1
    return f"run {run} of {short_source(source)}" if several else f"run {run}"


def run_rows(data: ReportData) -> list[pd.Series]:
    return [row for _, row in data["runs"].iterrows()]


def of_run(df: pd.DataFrame, source: str, run: int, column: str = "run") -> pd.DataFrame:
    return df[(df["source"] == source) & (df[column] == run)]


# ---------------------------------------------------------------- why each run ended
def end_story(data: ReportData, run: pd.Series) -> Text:
    """One sentence on how a run ended, citing the line that says so."""
    source, ordinal = run["source"], int(run["ordinal"])
    ends = of_run(data["ends"], source, ordinal)
    crashes = ends[ends["kind"].isin(CRASH_KINDS)]
    stopped = ends[ends["kind"] == "stopped_while_loading"]
    verdicts = ends[ends["kind"].str.startswith("systemd_")]
    if not crashes.empty:
        first = crashes.iloc[0]
        when = "while starting" if missing(run["ready_at"]) else "after it was ready"
        words = f"crashed {when}: {first['kind'].replace('_', ' ')} error, {quote(first['detail'], 200).rstrip('.')}"
        return Text(words, [cite_line(source, first["line_no"], first["text"])])
    if not stopped.empty:
        row = stopped.iloc[0]
        doing = doing_when_stopped(data, source, ordinal)
        by = (f", by the agent (message {int(row['message_index'])}: “{quote(row['agent_command'], 120)}”)"
              if not missing(row["session"]) else "")
        words = (f"was stopped while still {doing}, {row['detail'].removeprefix('stopped ')}{by}: "
                 "an operator's restart, not a crash")
        cites = [cite_line(source, row["line_no"], row["text"])]
        cites += data.cite_message(row["session"], int(row["message_index"])) if by else []
        return Text(words, cites)
    reason = run["end_reason"]
    if reason == "running":
        return Text("was still running at the end of the log")
    detail = run["end_detail"] if not missing(run["end_detail"]) else ""
    words = {"restarted": "was restarted", "stopped": "was stopped", "crashed": "crashed after it was ready",
             "failed": "failed while starting"}.get(reason, reason)
    if not verdicts.empty:
        row = verdicts.iloc[0]
        agent = ends.dropna(subset=["session"])
        by = ""
        cites = [cite_line(source, row["line_no"], row["text"])]
        if not agent.empty:
            first = agent.iloc[0]
            by = f" by the agent (message {int(first['message_index'])}: “{quote(first['agent_command'], 120)}”)"
            cites += data.cite_message(first["session"], int(first["message_index"]))
        return Text(f"{words}{by}" + (f"; {detail}" if detail else ""), cites)
    return Text(words + (f" ({detail})" if detail else ""))


def headline(ends: pd.DataFrame, run: pd.Series) -> str:
    """A few words on how a run ended, for its heading."""
    crashes = ends[ends["kind"].isin(CRASH_KINDS)]
    if not crashes.empty:
        return f"{run['end_reason']}, {crashes['kind'].iloc[0].replace('_', ' ')} error"
    if (ends["kind"] == "stopped_while_loading").any():
        by = " by the agent" if ends["session"].notna().any() else ""
        return f"stopped{by} while still loading, not a crash"
    by = " by the agent" if ends["session"].notna().any() else ""
    return f"{run['end_reason']}{by}"


def doing_when_stopped(data: ReportData, source: str, run: int) -> str:
    evidence = of_run(data["evidence"], source, run)
    reached = evidence.sort_values("line_no")["figure"].tolist()
    doing = "starting"
    for figure, what in DOING_AFTER:
        if figure in reached:
            doing = what
    return doing


def ends_section(data: ReportData) -> Section | None:
    ends = data["ends"]
    blocks = []
    for run in run_rows(data):
        source, ordinal = run["source"], int(run["ordinal"])
        rows = of_run(ends, source, ordinal)
        if rows.empty and run["end_reason"] == "running":
            continue
        story = end_story(data, run)
        blocks.append(Heading(f"{first_upper(run_name(data, source, ordinal))}: {headline(rows, run)}"))
        blocks.append(Text(f"{first_upper(run_name(data, source, ordinal))} {story.words}.", story.cites))
        for _, row in rows.iterrows():
            cite = [cite_line(source, row["line_no"], row["text"])]
            label = f"{row['ts']:%H:%M:%S} {row['kind'].replace('_', ' ')}" if not missing(row["ts"]) else row["kind"]
            rank = f" ({row['rank']})" if row["rank"] else ""
            if row["kind"] in CRASH_KINDS:
                lines = f"lines {row['line_no']}–{row['last_line_no']}"
                blocks.append(Folded(Text(f"{label}{rank}: {quote(row['detail'], 200)} — whole traceback, {lines}",
                                          cite), row["text"] or ""))
            else:
                blocks.append(Text(f"{label}{rank}: {quote(row['detail'], 200)}", cite))
    return Section("Why each run ended", blocks, "ends") if blocks else None


# ---------------------------------------------------------------- timeline
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
            if not ready:  # the phase it never finished: the next one other runs went through
                logged = [i for i, (column, _, _) in enumerate(PHASES) if not missing(p[column])]
                later = [i for i in range(logged[-1] + 1 if logged else 0, len(PHASES))
                         if data["load-time"][PHASES[i][0]].notna().any()]
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


# ---------------------------------------------------------------- memory budget
MEMORY_SHARES = [("weights", "weights_gib"), ("KV pool", "kv_gib"),
                 ("draft model", ("draft_weights_gib", "draft_kv_gib")), ("CUDA graphs", "cuda_graph_gib"),
                 ("headroom", "final_available_gib")]


def share(row: pd.Series, columns: str | tuple[str, ...]) -> float:
    names = (columns,) if isinstance(columns, str) else columns
    return sum(0.0 if missing(row[c]) else float(row[c]) for c in names)


def gap_explained(row: pd.Series) -> str:
    gap, mfs = row["kv_gap_gib"], row["mem_fraction_static"]
    if missing(gap):
        return ""
    if abs(gap) <= 0.02:
        return "adds up (within the rounding of the logged figures)"
    if gap > 0:
        draft = 0.0 if missing(row["draft_kv_gib"]) else float(row["draft_kv_gib"])
        if draft and abs(gap - draft) <= 0.05:
            return f"the draft model's KV pool ({number(draft)} GiB) takes the difference"
        return ("SGLang allocated less than the formula allows: the draft model, page alignment or "
                "--max-total-tokens took the difference")
    implied = (float(row["after_weights_gib"]) - float(row["kv_gib"])) / (1 - float(mfs))
    return (f"the pool is {number(-gap)} GiB larger than the formula gives: it implies a total of "
            f"{number(implied)} GiB where 'Load weight begin' shows {number(row['gpu_before_load_gib'])}; SGLang "
            "takes the smallest free memory over ranks at init, not this line")


def memory_section(data: ReportData) -> Section | None:
    budget = data["memory-budget"]
    per_rank = budget[(budget["rank"] != "all ranks") & budget["weights_gib"].notna()]
    if per_rank.empty:
        return None
    labels, shares, formula_rows, host_rows = [], {name: [] for name, _ in MEMORY_SHARES + [("other", "")]}, [], []
    signature_seen: dict[tuple, str] = {}
    explained: dict[str, list[str]] = {}
    for (source, ordinal), rows in per_rank.groupby(["source", "run"], sort=False):
        name = run_name(data, source, int(ordinal))
        figures = [c for _, c in MEMORY_SHARES if isinstance(c, str)] + ["kv_tokens"]
        identical = len(rows[figures].drop_duplicates()) == 1
        shown = rows.iloc[:1] if identical else rows
        for _, row in shown.iterrows():
            signature = tuple(share(row, c) for _, c in MEMORY_SHARES)
            label = f"{name} · {'each of ' + rank_span(list(rows['rank'])) if identical else row['rank']}"
            if identical and signature in signature_seen:
                label += f" (as {signature_seen[signature]})"
            signature_seen.setdefault(signature, name)
            labels.append(label)
            total = float(row["gpu_before_load_gib"]) if not missing(row["gpu_before_load_gib"]) else 0.0
            for share_name, columns in MEMORY_SHARES:
                shares[share_name].append(share(row, columns))
            shares["other"].append(max(total - sum(signature), 0.0))
        first = rows.iloc[0]
        run_figures = {figure: data.cite(source, int(ordinal), figure, first["rank"])
                       for figure in ("weights_begin", "weights", "kv_pool", "hicache")}
        formula_rows.append([
            Text(name), Text(rank_span(list(rows["rank"])) + (" (identical)" if identical else " (rank 0 shown)")),
            Text(number(first["gpu_before_load_gib"]), run_figures["weights_begin"]),
            Text(number(first["mem_fraction_static"])),
            Text(number(first["after_weights_gib"]), run_figures["weights"]),
            Text(number(first["kv_formula_gib"])),
            Text(f"{number(first['kv_tokens'])} tokens, {number(first['kv_gib'])} GiB", run_figures["kv_pool"]),
            Text(number(first["kv_gap_gib"]))])
        explained.setdefault(gap_explained(first), []).append(name)
        host = rows[rows["host_cache_gb"].notna()]
        if not host.empty:
            free = host["host_free_gb"].dropna()
            host_rows.append([
                Text(name), Text(str(len(host))),
                Text(f"{number(host['host_cache_gb'].iloc[0])} GB ({number(host['host_cache_gib'].iloc[0])} GiB)"
                     if host["host_cache_gb"].nunique() == 1 else "varies by rank", run_figures["hicache"]),
                Text(f"{number(host['host_cache_gb'].sum())} GB ({number(host['host_cache_gib'].sum())} GiB)",
                     data.cite(source, int(ordinal), "hicache")),
                Text(f"{number(free.iloc[0])} GB" if not free.empty else "not logged")])
    alt = "; ".join(f"{label}: " + ", ".join(f"{k} {number(v[i])} GiB" for k, v in shares.items() if v[i])
                    for i, label in enumerate(labels))
    blocks = [Text("GPU memory per rank, in GiB (SGLang prints \"GB\" for the device but divides by 2^30): the "
                   "bar's length is the memory free before the weights loaded; \"other\" is what the logged "
                   "figures do not account for (activations, NCCL buffers, the allocator)."),
              Chart(lambda: draw("stacked_bars", labels, shares, "GiB per rank"), alt),
              Heading("SGLang's KV formula beside the logged KV pool"),
              Text("rest = avail after weights − memory before load × (1 − mem_fraction_static). KV tokens and sizes "
                   "are per rank: each tensor-parallel rank holds every token's share, so they are never summed."),
              Table(["run", "ranks", "before load GiB", "mem_fraction_static", "after weights GiB", "formula GiB",
                     "logged KV pool (per rank)", "gap GiB"], formula_rows,
                    [False, False, True, True, True, True, True, True])]
    blocks += [Text(f"{first_upper(', '.join(names))}: {why}.") for why, names in explained.items() if why]
    refused = [Text(f"{first_upper(run_name(data, r.source, int(r.run)))} asked for more host memory than was "
                    f"free: {quote(r.text, 200)}", data.cite(r.source, int(r.run), "host_memory_short"))
               for r in data["evidence"].itertuples() if r.figure == "host_memory_short"]
    if host_rows or refused:
        blocks += [Heading("Host memory: the HiCache pool"),
                   Text("As SGLang printed it (decimal GB) and in GiB; the host's free memory where the log shows it.")]
        blocks += [Table(["run", "ranks", "per rank", "total", "host free"], host_rows,
                         [False, True, True, True, True])] if host_rows else []
        blocks += refused
    return Section("Memory budget per configuration", blocks, "memory")


# ---------------------------------------------------------------- configuration changes
def effect(data: ReportData, source: str, run: int) -> Text:
    """What a configuration measurably did: ready or not, how long, KV pool, host pool."""
    runs = data["runs"]
    row = runs[(runs["source"] == source) & (runs["ordinal"] == run)]
    if row.empty:
        return Text("")
    row = row.iloc[0]
    name = run_name(data, source, run)
    if missing(row["ready_at"]):
        return Text(f"{name} {end_story(data, row).words}", end_story(data, row).cites)
    parts = [f"{name} ready after {seconds(row['load_seconds'])}"]
    earlier = runs[(runs["source"] == source) & (runs["ordinal"] < run) & runs["load_seconds"].notna()]
    if not earlier.empty:
        before = earlier.iloc[-1]
        delta = float(row["load_seconds"]) - float(before["load_seconds"])
        parts[0] += f" ({delta:+,.0f} s against run {int(before['ordinal'])})"
    if not missing(row["kv_tokens"]):
        parts.append(f"KV pool {number(row['kv_tokens'])} tokens per rank")
    if not missing(row["host_cache_gb_total"]):
        pinning = of_run(data["load-time"], source, run)["host_cache_s"].max()
        parts.append(f"HiCache {number(row['host_cache_gb_per_rank'])} GB per rank, "
                     f"{number(row['host_cache_gb_total'])} GB in total"
                     + ("" if missing(pinning) else f", pinned in {seconds(pinning)}"))
    serving = data["serving"][(data["serving"]["source"] == source) & data["serving"]["cache_hit_share"].notna()]
    hits = serving.set_index("run")["cache_hit_share"]
    if run in hits.index and (hits.index < run).any():
        previous = hits[hits.index < run]
        parts.append(f"prefix-cache hits {previous.iloc[-1]:.1%} in run {previous.index[-1]} → {hits[run]:.1%}")
    cites = data.cite(source, run, "ready") + data.cite(source, run, "hicache")
    return Text("; ".join(parts), cites)


def asked_by(data: ReportData, session: str, message_index: int) -> tuple[int, str] | None:
    """The user's last request before an agent message: its index and words."""
    messages = data.messages
    asks = messages[(messages["session_id"] == session) & (messages["role"] == "user")
                    & (messages["idx"] < message_index)]
    if asks.empty:
        return None
    last = asks.iloc[-1]
    return int(last["idx"]), last["text"] or ""


def changes_section(data: ReportData) -> Section | None:
    diffs = data.config_diffs
    if diffs.empty:
        return None
    rows = []
    for _, d in diffs.iterrows():
        source = d["source"]
        cites = [c for run in (d["from_run"], d["to_run"]) for c in data.cite(source, int(run), "server_args")]
        rows.append([Text(f"{d['from_run']} → {d['to_run']}"), Text(d["key"]), Text(value(d["old"])),
                     Text(value(d["new"])), Text("", cites)])
    blocks = [Text("Every server argument that differs between consecutive runs, from their server_args dumps "
                   "(an unpinned random_seed changes on every start)."),
              Table(["runs", "setting", "old", "new", "evidence"], rows)]
    links = data["links"]
    if not links.empty:
        who = []
        for _, link in links.iterrows():
            changed = link["changed"] if isinstance(link["changed"], dict) else json.loads(link["changed"] or "{}")
            change = ", ".join(f"{k} {value(a)} → {value(b)}" for k, (a, b) in changed.items()) or "rewrote it"
            ask = asked_by(data, link["session"], int(link["message_index"]))
            request = (Text(f"“{quote(ask[1])}”", data.cite_message(link["session"], ask[0])) if ask else Text(""))
            agent = data.messages[(data.messages["session_id"] == link["session"])
                                  & (data.messages["idx"] == link["message_index"])]
            said = quote(agent.iloc[0]["text"], 160) if not agent.empty else ""
            who.append([request,
                        Text(f"message {int(link['message_index'])} wrote {link['path']} on {link['host']}: {said}",
                             data.cite_message(link["session"], int(link["message_index"]))),
                        Text(change), Text(run_name(data, link["source"], int(link["run"]))),
                        effect(data, link["source"], int(link["run"]))])
        blocks += [Heading("Who changed it"),
                   Table(["the user asked", "the agent", "changed", "run it produced", "measured effect"], who)]
    return Section("Configuration changes", blocks, "changes")


# ---------------------------------------------------------------- serving
def serving_section(data: ReportData) -> Section | None:
    serving = data["serving"]
    served = serving[serving["decode_batches"].fillna(0) + serving["prefill_batches"].fillna(0) > 0]
    if served.empty:
        return None
    timeline = data["serving-timeline"]
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
        panels: dict[str, dict[str, tuple[list, list]]] = {}
        for title, column in [("decode throughput (token/s)", "decode_tok_s"), ("KV token usage", "token_usage"),
                              ("queued requests", "queue_req"), ("prefix-cache hit share", "cache_hit_share")]:
            if not timeline[column].fillna(0).any():
                continue  # a flat zero (nothing ever queued) is said by the table above
            for (source, ordinal), part in timeline.groupby(["source", "run"], sort=False):
                part = part[part[column].notna()]
                if not part.empty:
                    panels.setdefault(title, {})[run_name(data, source, int(ordinal))] = (
                        list(part["bucket"]), list(part[column]))
        if panels:
            minutes = int(timeline["bucket_s"].iloc[0]) // 60
            bucket = "minute" if minutes == 1 else f"{minutes} minutes"
            alt = f"per {bucket}: " + ", ".join(panels) + " for " + ", ".join(
                sorted({label for lines in panels.values() for label in lines}))
            blocks.append(Chart(lambda: draw("time_panels", panels, f"journal time, per {bucket}"), alt))
    return Section("Serving", blocks, "serving")


# ---------------------------------------------------------------- the agent
VERDICT_ORDER = {"inconsistent": 0, "unverifiable": 1, "consistent": 2}


def agent_section(data: ReportData) -> Section | None:
    sessions = data["sessions"]
    if sessions.empty:
        return None
    rows = []
    for _, s in sessions.iterrows():
        tools = s["tool_calls"] if isinstance(s["tool_calls"], dict) else json.loads(s["tool_calls"] or "{}")
        rows.append([Text(short_session(s["id"])), Text(s["title"] or ""), Text(s["format"]),
                     Text(number(s["messages"])), Text(number(s["user_messages"])),
                     Text(", ".join(f"{k} {n}" for k, n in tools.items())),
                     Text(number(s["input_tokens"])), Text(number(s["output_tokens"])),
                     Text(f"${s['cost_usd']:.2f}" if not missing(s["cost_usd"]) else "")])
    blocks = [Table(["session", "title", "format", "messages", "from the user", "tool calls", "input tokens",
                     "output tokens", "cost"], rows, [False] * 3 + [True] * 2 + [False] + [True] * 3)]
    calls = data["tool-calls"]
    if not calls.empty:
        failed = calls[calls["is_error"].fillna(False).astype(bool) | (calls["exit_code"].fillna(0) != 0)]
        listing = "\n".join(
            f"{short_session(c['session_id'])}  message {c['message_index']:>4}  {c['tool']:<8} "
            f"{seconds(c['duration_s'], minutes_too=False):>9}  "
            f"{'exit ' + number(c['exit_code']) if not missing(c['exit_code']) else c['status'] or '':<10} "
            f"{quote(c['input_summary'], 160)}" for _, c in calls.iterrows())
        blocks.append(Folded(Text(f"All {plural(len(calls), 'tool call')}, in order"
                                  + (f"; {plural(len(failed), 'failed')}" if len(failed) else "; none failed")),
                             listing))
    timeouts = data["tool-timeouts"]
    if not timeouts.empty:
        blocks += [Heading("Tool calls that timed out"),
                   Table(["message", "tool", "after", "what the tool said", "command"],
                         [[Text(str(t["message_index"]), data.cite_message(t["session_id"], int(t["message_index"]))),
                           Text(t["tool"]), Text(seconds(t["duration_s"])), Text(t["timeout_line"] or ""),
                           Text(quote(t["command"], 160))] for _, t in timeouts.iterrows()])]
    claims = data.claims
    if claims is not None and not claims.empty:
        ordered = claims.assign(_order=claims["verdict"].map(VERDICT_ORDER).fillna(3)).sort_values(
            ["_order", "session", "message"], kind="stable")
        blocks += [Heading("The agent's claims, checked against the logs"),
                   Table(["verdict", "message", "claim", "value", "measured", "measured from"],
                         [[Text(str(c["verdict"])), Text(str(c["message"])), Text(quote(str(c["text"]), 200)),
                           Text(f"{number(c['value'])} {c['unit'] or ''}".strip()), Text(number(c["measured"])),
                           Text(str(c["measured_source"] or ""))] for _, c in ordered.iterrows()])]
    return Section("The agent", blocks, "agent")
