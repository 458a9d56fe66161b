"""The summary: a few generated sentences with the key figures, each citing its evidence."""

from __future__ import annotations

from .changes import NOISE_KEYS, asked_by, effect
from .common import run_name, run_rows
from .data import ReportData, short_source
from .ends import end_story
from .model import Section, Text
from .words import clock, first_upper, missing, number, plural, quote, seconds, value


def summary_section(data: ReportData) -> Section | None:
    runs = run_rows(data)
    if not runs:
        return None
    first, last = runs[0], runs[-1]
    config = first["config"] if isinstance(first["config"], dict) else {}
    model = config.get("served_model_name") or config.get("model_path") or "the server"
    ready = sum(not missing(r["ready_at"]) for r in runs)
    sources = sorted({short_source(r["source"]) for r in runs})
    until = max(r[c] for r in runs for c in ("started_at", "ready_at", "ended_at") if not missing(r[c]))
    span = f"from {clock(min(r['started_at'] for r in runs))} to {clock(until)}"
    what = (f"of {model} ({plural(int(first['ranks']), 'rank')}) in {sources[0]}" if len(sources) == 1
            else f"in {plural(len(sources), 'source')}")
    sentences = [Text(f"{plural(len(runs), 'server start')} {what}, {span}; {ready} became ready.",
                      data.cite(first["source"], int(first["ordinal"]), "started"))]
    for run in runs:
        source, ordinal = run["source"], int(run["ordinal"])
        name = first_upper(run_name(data, source, ordinal))
        story = end_story(data, run)
        if missing(run["ready_at"]):
            sentences.append(Text(f"{name} never became ready: it {story.words}.", story.cites))
        else:
            sentences.append(Text(f"{name} was ready after {seconds(run['load_seconds'])} and {story.words}.",
                                  data.cite(source, ordinal, "ready") + story.cites))
    for (source, to_run), diffs in data.config_diffs.groupby(["source", "to_run"], sort=False):
        meaningful = diffs[~diffs["key"].isin(NOISE_KEYS)]
        if meaningful.empty:
            continue
        changes = ", ".join(f"{d['key']} {value(d['old'])} → {value(d['new'])}" for _, d in meaningful.iterrows())
        from_run = int(meaningful["from_run"].iloc[0])
        words = f"From run {from_run} to run {int(to_run)} the configuration changed: {changes}"
        cites = data.cite(source, int(to_run), "server_args")
        links = data["links"]
        link = links[(links["source"] == source) & (links["run"] == to_run)]
        if not link.empty:
            ask = asked_by(data, link["session"].iloc[0], int(link["message_index"].iloc[0]))
            if ask:
                words += f", after the user asked “{quote(ask[1], 160)}”"
                cites += data.cite_message(link["session"].iloc[0], ask[0])
        produced = data["runs"][(data["runs"]["source"] == source) & (data["runs"]["ordinal"] == to_run)]
        if produced.empty or missing(produced["ready_at"].iloc[0]):
            sentences.append(Text(f"{words}; run {int(to_run)} never became ready.", cites))
        else:
            result = effect(data, source, int(to_run))
            sentences.append(Text(f"{words}. Effect: {result.words}.", cites + result.cites))
    if len(sources) == 1 and not missing(last["kv_tokens"]):
        run, source, ordinal = last, last["source"], int(last["ordinal"])
        sentences.append(Text(
            f"The last configuration's KV pool holds {number(run['kv_tokens'])} tokens "
            f"({number(run['kv_gib_per_rank'])} GiB) on each of its {plural(int(run['ranks']), 'rank')}.",
            data.cite(source, ordinal, "kv_pool")))
    claims = data.claims
    if claims is not None and not claims.empty:
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
        sentences.append(Text(words + ".", cites))
    return Section("Summary", sentences, "summary")
