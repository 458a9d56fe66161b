"""The agent: its sessions, tool calls (those a timeout ended too) and, once they exist, its checked claims."""

from __future__ import annotations

import json

import pandas as pd

from .data import ReportData, short_session
from .model import Folded, Heading, Section, Table, Text
from .words import missing, number, plural, quote, seconds

VERDICT_ORDER = {"inconsistent": 0, "consistent": 1, "unverifiable": 2}


def claim_row(data: ReportData, claim: pd.Series) -> list[Text]:
    """A claim: its verdict, the message it is in (cited), the figure written and the one measured."""
    index = claim.get("message_index")
    message = (Text(f"message {int(index)}", data.cite_message(claim["session"], int(index)))
                if not missing(index) else Text(claim["message"]))
    unit = "" if missing(claim["unit"]) else f" {claim['unit']}"
    measured = "" if missing(claim["measured"]) else f"{number(claim['measured'])}{unit}"
    where = "" if missing(claim["measured_source"]) else measured_at(data, str(claim["measured_source"]))
    return [Text(claim["verdict"]), message, Text(quote(str(claim["text"]), 200)),
            Text(f"{number(claim['value'])}{unit}"), Text(measured), Text(where), Text(claim.get("cause"))]


def measured_at(data: ReportData, measured_source: str) -> str:
    """A claim's `display:line` as the report's citations name that line (`journal.txt:925`)."""
    display, _, line = measured_source.rpartition(":")
    return f"{data.source_name(display)}:{line}" if display else measured_source


def call_outcome(call: pd.Series) -> str:
    """How a tool call ended: its exit code, what ended it (timeout, interrupt, denied), else its status."""
    if not missing(call["exit_code"]):
        return f"exit {number(call['exit_code'])}"
    return next((str(call[c]) for c in ("ended_by", "status") if not missing(call[c])), "")


def agent_section(data: ReportData) -> Section | None:
    sessions = data["sessions"]
    if sessions.empty:
        return None
    rows = []
    for _, s in sessions.iterrows():
        tools = s["tool_calls"] if isinstance(s["tool_calls"], dict) else json.loads(s["tool_calls"] or "{}")
        rows.append([Text(short_session(s["id"])), Text(s["title"] or ""), Text(s["format"]),
                     Text(number(s["messages"])), Text(number(s["user_messages"])),
                     Text(", ".join(f"{k} {n}" for k, n in sorted(tools.items(), key=lambda kv: (-kv[1], kv[0])))),
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
            f"{call_outcome(c):<10} "
            f"{quote(c['input_summary'], 160)}" for _, c in calls.iterrows())
        blocks.append(Folded(Text(f"All {plural(len(calls), 'tool call')}, in order"
                                  + (f"; {plural(len(failed), 'failed')}" if len(failed) else "; none failed")),
                             listing))
        # A call its tool ended (timeout, interrupt, denied): what it started may still have happened.
        cut = calls[calls["ended_by"].notna()]
        if not cut.empty:
            blocks += [Heading("Tool calls the tool ended (timeouts, interrupts, denials)"),
                       Table(["message", "tool", "ended by", "after", "command"],
                             [[Text(str(t["message_index"]),
                                    data.cite_message(t["session_id"], int(t["message_index"]))),
                               Text(t["tool"]), Text(t["ended_by"]), Text(seconds(t["duration_s"])),
                               Text(quote(t["input_summary"], 160))] for _, t in cut.iterrows()])]
    claims = data.claims
    if claims is not None and not claims.empty:
        ordered = claims.assign(_order=claims["verdict"].map(VERDICT_ORDER).fillna(3)).sort_values(
            "_order", kind="stable")
        counts = ordered["verdict"].value_counts()
        blocks += [Heading("The agent's claims, checked against the logs"),
                   Text(", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICT_ORDER) + "."),
                   Table(["verdict", "message", "claim", "value", "measured", "measured at", "why"],
                         [claim_row(data, c) for _, c in ordered.iterrows()])]
    return Section("The agent", blocks, "agent")
