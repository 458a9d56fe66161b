"""Configuration changes: the diff between consecutive runs, who asked for it and what it did."""

from __future__ import annotations

import json

from .common import of_run, of_source, run_name
from .data import ReportData
from .ends import end_story
from .model import Heading, Section, Table, Text
from .words import missing, number, quote, seconds, value

NOISE_KEYS = {"random_seed"}  # an unpinned seed changes on every start


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
        # Rank 0's, as the timeline's phase table gives it: one figure, one value.
        phases = of_run(data["load-time"], source, run)
        pinning = phases["host_cache_s"].iloc[0] if not phases.empty else None
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
        rows.append([Text(f"{d['from_run']} → {d['to_run']}{of_source(data, source)}"), Text(d["key"]),
                     Text(value(d["old"])), Text(value(d["new"])), Text("", cites)])
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
