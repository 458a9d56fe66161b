"""Why each run ended: crashes, stops while loading, systemd's verdicts and the agent's commands."""

from __future__ import annotations

from collections import Counter

import pandas as pd

from ..derive.causes import family_of, family_words, phase_words
from .common import of_run, run_name, run_rows
from .data import ReportData
from .model import Folded, Heading, Section, Text
from .words import first_upper, missing, plural, quote

# What a server was doing after the last start-up milestone it logged, in SGLang's order: the target model's
# weights, KV pool and CUDA graphs, then the draft model's (speculative decoding), the host pool, warm-up.
# After the target's graphs only the configuration says whether a draft model comes next (`AFTER_GRAPHS`).
DOING_AFTER = {"started": "initialising", "weights_begin": "loading weights", "weights": "allocating the KV pool",
               "kv_pool": "capturing CUDA graphs", "draft_weights": "capturing the draft model's CUDA graphs",
               "draft_cuda_graphs": "warming up", "hicache": "pinning the HiCache host pool",
               "capacity": "warming up"}
AFTER_GRAPHS = {True: "loading the draft model", False: "warming up", None: "loading the draft model or warming up"}
CRASH_KINDS = ("oom", "host_memory", "abort", "traceback", "fatal_line")


def cause_story(data: ReportData, run: pd.Series, ends: pd.DataFrame) -> Text | None:
    """The sentence on a run that died, from its root cause (`runs.cause`): what failed first, where, in
    which start-up phase, and how many signs followed from it; None for a run with no cause."""
    if missing(run.get("cause")) or run["end_reason"] not in ("failed", "crashed", "ended"):
        return None
    source = run["source"]
    cause = ends[ends["role"] == "cause"]
    line_no = int(cause["line_no"].iloc[0]) if not cause.empty else None
    family = family_words(run.get("cause_family"))
    if run["end_reason"] == "ended":
        words = "ended with no shutdown line: killed from outside, as its exit-time warnings show"
    else:
        when = "after it was ready" if not missing(run["ready_at"]) else (
            phase_words(run["failed_phase"]) if not missing(run.get("failed_phase")) else "while starting")
        rank = f" on {cause['rank'].iloc[0]}" if not cause.empty and cause["rank"].iloc[0] else ""
        what = f"{family} failure" if family else "error"
        cause_text = quote(run["cause"], 200)
        if cause_text.endswith(".") and not cause_text.endswith("..."):  # the sentence's own stop follows
            cause_text = cause_text[:-1]
        words = f"{run['end_reason']} {when}: {what}{rank}, “{cause_text}”"
    if line_no is not None:
        words += f" (line {line_no})"
    followed = ends[ends["role"] == "consequence"]
    if not followed.empty:
        counted = Counter(consequence_name(r) for _, r in followed.iterrows())
        kinds = ", ".join(name if n == 1 else f"{name} ×{n}" for name, n in counted.items())
        words += f"; what followed from it ({plural(len(followed), 'sign')}: {quote(kinds, 160)}) is folded below"
    cites = [data.cite_line(source, line_no, cause["text"].iloc[0])] if line_no is not None else []
    return Text(words, cites)


def consequence_name(row: pd.Series) -> str:
    """A few words for a sign that followed the cause: `EOFError`, `sigquit`, `rank dead`."""
    if row["kind"] == "fatal_line":  # named by its family where it has one: a CUDA kernel's assertion is no library's
        family = family_words(family_of(str(row["text"] or "")))
        return f"{family} line" if family else "fatal library line"
    if row["kind"] in CRASH_KINDS:
        return str(row["detail"] or row["kind"]).split(": ")[0].strip() or row["kind"]
    return row["kind"].replace("_", " ")


def end_story(data: ReportData, run: pd.Series) -> Text:
    """One sentence on how a run ended, citing the line that says so."""
    source, ordinal = run["source"], int(run["ordinal"])
    ends = of_run(data["ends"], source, ordinal)
    crashes = ends[ends["kind"].isin(CRASH_KINDS)]
    stopped = ends[ends["kind"] == "stopped_while_loading"]
    verdicts = ends[ends["kind"].str.startswith("systemd_")]
    if (story := cause_story(data, run, ends)) is not None:
        return story
    # A traceback the server outlived (a request's, while it served on) is no crash: `runs` says how it ended.
    if not crashes.empty and run["end_reason"] in ("failed", "crashed"):
        first = crashes.iloc[0]
        when = "while starting" if missing(run["ready_at"]) else "after it was ready"
        words = f"crashed {when}: {first['kind'].replace('_', ' ')} error, {quote(first['detail'], 200).rstrip('.')}"
        return Text(words, [data.cite_line(source, first["line_no"], first["text"])])
    if not stopped.empty:
        row = stopped.iloc[0]
        doing = doing_when_stopped(data, run)
        by = (f", by the agent (message {int(row['message_index'])}: “{quote(row['agent_command'], 120)}”)"
              if not missing(row["session"]) else "")
        words = (f"was stopped while still {doing}, {row['detail']}{by}: "
                 "an operator's restart, not a crash")
        cites = [data.cite_line(source, row["line_no"], row["text"])]
        cites += data.cite_message(row["session"], int(row["message_index"])) if by else []
        return Text(words, cites)
    reason = run["end_reason"]
    if reason == "running":
        if missing(run["ready_at"]):  # the log ends before it was ready: say how far it got
            if not logged_a_start(data, run):  # a router's log, another program's: no SGLang server in it
                return Text("logged none of an SGLang server's start-up lines (no server arguments, no weights, "
                            "no KV pool) before the log ends")
            return Text(f"was still {doing_when_stopped(data, run)} when the log ends")
        return Text("was still running at the end of the log")
    detail = run["end_detail"] if not missing(run["end_detail"]) else ""
    words = {"restarted": "was restarted", "stopped": "was stopped", "crashed": "crashed after it was ready",
             "failed": "failed while starting"}.get(reason, reason)
    if not verdicts.empty:
        row = verdicts.iloc[0]
        agent = ends.dropna(subset=["session"])
        by = ""
        cites = [data.cite_line(source, row["line_no"], row["text"])]
        if not agent.empty:
            first = agent.iloc[0]
            by = f" by the agent (message {int(first['message_index'])}: “{quote(first['agent_command'], 120)}”)"
            cites += data.cite_message(first["session"], int(first["message_index"]))
        return Text(f"{words}{by}" + (f"; {detail}" if detail else ""), cites)
    return Text(words + (f" ({detail})" if detail else ""))


def headline(ends: pd.DataFrame, run: pd.Series) -> str:
    """A few words on how a run ended, for its heading."""
    family = family_words(run.get("cause_family"))
    if family and run["end_reason"] in ("failed", "crashed"):
        return f"{run['end_reason']}, {family} failure"
    if run["end_reason"] == "ended":
        return "ended, no shutdown line"
    crashes = ends[ends["kind"].isin(CRASH_KINDS)]
    if not crashes.empty and run["end_reason"] in ("failed", "crashed"):
        return f"{run['end_reason']}, {crashes['kind'].iloc[0].replace('_', ' ')} error"
    if (ends["kind"] == "stopped_while_loading").any():
        by = " by the agent" if ends["session"].notna().any() else ""
        return f"stopped{by} while still loading, not a crash"
    by = " by the agent" if ends["session"].notna().any() else ""
    return f"{run['end_reason']}{by}"


def doing_when_stopped(data: ReportData, run: pd.Series) -> str:
    """What a run that never became ready was doing after the last start-up milestone it logged."""
    evidence = of_run(data["evidence"], run["source"], int(run["ordinal"]))
    doing = "starting"
    for figure in evidence.sort_values("line_no")["figure"]:
        doing = AFTER_GRAPHS[speculative(run)] if figure == "cuda_graphs" else DOING_AFTER.get(figure, doing)
    return doing


def logged_a_start(data: ReportData, run: pd.Series) -> bool:
    """Whether the run logged any of SGLang's start-up milestones beyond its first line, or its arguments."""
    evidence = of_run(data["evidence"], run["source"], int(run["ordinal"]))
    return not missing(run.get("config")) or bool(set(evidence["figure"]) - {"started"})


def speculative(run: pd.Series) -> bool | None:
    """Whether the run's configuration loads a draft model; None where the log gave no configuration."""
    config = run.get("config")
    if not isinstance(config, dict):
        return None
    return config.get("speculative_algorithm") not in (None, "", "None")


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
            cite = [data.cite_line(source, row["line_no"], row["text"])]
            label = f"{row['ts']:%H:%M:%S} {row['kind'].replace('_', ' ')}" if not missing(row["ts"]) else row["kind"]
            rank = f" ({row['rank']})" if row["rank"] else ""
            role = f" [{row['role']}]" if not missing(row.get("role")) else ""
            label += role
            if row["kind"] in CRASH_KINDS and row["kind"] != "fatal_line":  # a fatal line is a line, not a traceback
                lines = f"lines {row['line_no']}–{row['last_line_no']}"
                blocks.append(Folded(Text(f"{label}{rank}: {quote(row['detail'], 200)} — whole traceback, {lines}",
                                          cite), row["text"] or ""))
            else:
                blocks.append(Text(f"{label}{rank}: {quote(row['detail'], 200)}", cite))
    return Section("Why each run ended", blocks, "ends") if blocks else None
