"""The summary: a few generated sentences with the key figures, each citing its evidence."""

from __future__ import annotations

import pandas as pd

from .changes import NOISE_KEYS, asked_by, effect
from .common import of_source, run_name
from .data import ReportData
from .ends import end_story
from .model import Section, Text
from .words import clock, first_upper, missing, number, plural, quote, seconds, value


def summary_section(data: ReportData) -> Section | None:
    runs = data["runs"]
    if runs.empty:
        return None
    sentences = []
    for source, rows in runs.groupby("source", sort=False):  # each journal its own server: model, ranks, runs
        sentences += source_summary(data, source, [row for _, row in rows.iterrows()])
    sentences += claims_summary(data)
    return Section("Summary", sentences, "summary")


def node_words(run: pd.Series) -> str:
    """`, node 1 of 2 of a tp_size 16 launch` for a log of one node of several; empty otherwise."""
    nodes, node = run.get("nnodes"), run.get("node_rank")
    if missing(nodes) or int(nodes) <= 1:
        return ""
    where = f"node {int(node)} of {int(nodes)}" if not missing(node) else f"one node of {int(nodes)}"
    size = f" of a tp_size {int(run['tp_size'])} launch" if not missing(run.get("tp_size")) else ""
    return f" here, {where}{size}"


def source_summary(data: ReportData, source: str, runs: list[pd.Series]) -> list[Text]:
    """One source's starts, how each ended, what each configuration change did, and its last KV pool."""
    first, last = runs[0], runs[-1]
    config = first["config"] if isinstance(first["config"], dict) else {}
    model = config.get("served_model_name") or config.get("model_path")
    ready = sum(not missing(r["ready_at"]) for r in runs)
    times = [r[c] for r in runs for c in ("started_at", "ready_at", "ended_at", "last_seen_at") if not missing(r[c])]
    # A launch that died before printing anything stamped has no start time of its own; a log with no time in
    # it at all (SGLang's JSON events without their stamps, a shape logmine cannot read) has no span.
    starts = [r["started_at"] for r in runs if not missing(r["started_at"])]
    span = f"from {clock(min(starts or times))} to {clock(max(times))}" if times else "at no time the log gives"
    ranks = int(first["ranks"]) if not missing(first["ranks"]) else 0  # 0: no rank logged its start
    what = (f" of {model}" if model else "") + (f" ({plural(ranks, 'rank')}{node_words(first)})" if ranks else "")
    sentences = [Text(f"{plural(len(runs), 'server start')}{what} in {data.source_name(source)}, {span}; "
                      f"{ready} became ready.", data.cite(source, int(first["ordinal"]), "started"))]
    # What logmine could not read right in this log comes before what it read (`derive/drift.py`).
    shapes = data["new-shapes"]
    for shape in shapes[shapes["source"] == source].itertuples(index=False):
        sentences.append(Text(f"Read with care: {shape.shape}.", [data.cite_line(source, shape.line, shape.example)]))
    for run in runs:
        ordinal = int(run["ordinal"])
        name = first_upper(run_name(data, source, ordinal))
        story = end_story(data, run)
        if missing(run["ready_at"]):
            sentences.append(Text(f"{name} never became ready: it {story.words}.", story.cites))
        else:
            # A node or decode worker that never prints SGLang's ready line is ready at what it first served.
            by = {"first_batch": " (at its first batch: it logs no ready line)",
                  "first_request": " (at its first request: it logs no ready line)"}.get(run.get("ready_from"), "")
            sentences.append(Text(f"{name} was ready after {seconds(run['load_seconds'])}{by} and {story.words}.",
                                  data.cite(source, ordinal, "ready") + story.cites))
    diffs = data.config_diffs[data.config_diffs["source"] == source]
    for to_run, changed in diffs.groupby("to_run", sort=False):
        sentences += change_summary(data, source, int(to_run), changed)
    if not missing(last["kv_tokens"]):
        sentences.append(Text(
            f"The last configuration's KV pool holds {number(last['kv_tokens'])} tokens "
            f"({number(last['kv_gib_per_rank'])} GiB) {on_each_rank(last['ranks'])}.",
            data.cite(source, int(last["ordinal"]), "kv_pool")))
    return sentences


def on_each_rank(ranks: object) -> str:
    count = 0 if missing(ranks) else int(ranks)
    return f"on each of its {count} ranks" if count > 1 else "on its rank"


def change_summary(data: ReportData, source: str, to_run: int, diffs: pd.DataFrame) -> list[Text]:
    """What changed in the configuration a run started with, who asked for it and what it did (nothing
    when only noise, an unpinned seed, changed)."""
    meaningful = diffs[~diffs["key"].isin(NOISE_KEYS)]
    if meaningful.empty:
        return []
    changes = ", ".join(f"{d['key']} {value(d['old'])} → {value(d['new'])}" for _, d in meaningful.iterrows())
    from_run = int(meaningful["from_run"].iloc[0])
    words = f"From run {from_run} to run {to_run}{of_source(data, source)} the configuration changed: {changes}"
    cites = data.cite(source, to_run, "server_args")
    links = data["links"]
    link = links[(links["source"] == source) & (links["run"] == to_run)]
    if not link.empty:
        ask = asked_by(data, link["session"].iloc[0], int(link["message_index"].iloc[0]))
        if ask:
            words += f", after the user asked “{quote(ask[1], 160)}”"
            cites += data.cite_message(link["session"].iloc[0], ask[0])
    produced = data["runs"][(data["runs"]["source"] == source) & (data["runs"]["ordinal"] == to_run)]
    if produced.empty or missing(produced["ready_at"].iloc[0]):
        return [Text(f"{words}; run {to_run} never became ready.", cites)]
    result = effect(data, source, to_run)
    return [Text(f"{words}. Effect: {result.words}.", cites + result.cites)]


def claims_summary(data: ReportData) -> list[Text]:
    """How many of the agent's figures the logs contradict, and the first of them."""
    claims = data.claims
    if claims is None or claims.empty:
        return []
    wrong = claims[claims["verdict"] == "inconsistent"]
    checked = claims[claims["verdict"] != "unverifiable"]
    words = f"Of the agent's {plural(len(checked), 'figure')} the logs can check, {len(wrong)} disagree"
    if not wrong.empty:
        first = wrong.iloc[0]
        measured = f"{number(first['measured'])} {'' if missing(first['unit']) else first['unit']}".rstrip()
        words += f", first “{quote(str(first['text']), 80)}” where the log measured {measured}"
        if not missing(first.get("cause")):
            words += f" ({first['cause']})"
    cites = ([] if wrong.empty or "message_index" not in wrong
             else data.cite_message(wrong.iloc[0]["session"], int(wrong.iloc[0]["message_index"])))
    return [Text(words + ".", cites)]
