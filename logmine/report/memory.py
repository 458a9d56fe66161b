"""The memory budget per configuration: GPU shares per rank, SGLang's KV formula, the HiCache host pool."""

from __future__ import annotations

import pandas as pd

from .common import chart_run_name, draw, rank_groups, run_name
from .data import ReportData
from .model import Chart, Heading, Section, Table, Text
from .words import first_upper, missing, number, quote, rank_span, ranks_caption

MEMORY_SHARES = [("weights", "weights_gib"), ("KV pool", "kv_gib"),
                 ("draft model", ("draft_weights_gib", "draft_kv_gib")), ("CUDA graphs", "cuda_graph_gib"),
                 ("headroom", "final_available_gib")]


def share(row: pd.Series, columns: str | tuple[str, ...]) -> float:
    names = (columns,) if isinstance(columns, str) else columns
    return sum(0.0 if missing(row[c]) else float(row[c]) for c in names)


UNUSED = "not yet used (the start stopped)"


def kv_cell(row: pd.Series, cites: list) -> Text:
    """`306,048 tokens, 37.36 GiB`, either part alone where only it was logged, `none` for no pool."""
    parts = [f"{number(row['kv_tokens'])} tokens" if not missing(row["kv_tokens"]) else "",
             f"{number(row['kv_gib'])} GiB" if not missing(row["kv_gib"]) else ""]
    words = ", ".join(p for p in parts if p)
    return Text(words, cites) if words else Text("none allocated")


def alike_run(data: ReportData, source: str, alike_source: str, alike: int) -> str:
    """The earlier run a bar's figures repeat: `run 1` of the same source, else named with its file."""
    return f"run {alike}" if alike_source == source else chart_run_name(data, alike_source, alike)


def memory_section(data: ReportData) -> Section | None:
    budget = data["memory-budget"]
    per_rank = budget[(budget["rank"] != "all ranks") & budget["weights_gib"].notna()]
    if per_rank.empty:
        return None
    labels, captions = [], []
    shares: dict[str, list[float]] = {name: [] for name, _ in MEMORY_SHARES + [("other", ""), (UNUSED, "")]}
    formula_rows, host_rows = [], []
    signature_seen: dict[tuple, tuple[str, int]] = {}
    explained: dict[str, list[str]] = {}
    for (source, ordinal), rows in per_rank.groupby(["source", "run"], sort=False):
        name = run_name(data, source, int(ordinal))
        figures = [c for _, c in MEMORY_SHARES if isinstance(c, str)] + ["kv_tokens"]
        groups = rank_groups(rows, figures)
        identical = len(groups) == 1
        for row, label in groups:
            signature = tuple(share(row, c) for _, c in MEMORY_SHARES)
            caption = ranks_caption(list(rows["rank"])) if identical else label
            if identical and signature in signature_seen:
                caption += f", as {alike_run(data, source, *signature_seen[signature])}"
            signature_seen.setdefault(signature, (source, int(ordinal)))
            # The chart's label on two lines: the run, then the ranks, each whole however long the file name.
            labels.append(f"{chart_run_name(data, source, int(ordinal))}\n{caption}")
            captions.append(f"{name}, {caption}")
            total = float(row["gpu_before_load_gib"]) if not missing(row["gpu_before_load_gib"]) else 0.0
            for share_name, columns in MEMORY_SHARES:
                shares[share_name].append(share(row, columns))
            # What the figures leave over is "other" use only on a start that went to its end; on one that
            # stopped early it is memory nothing had taken yet.
            remainder = max(total - sum(signature), 0.0)
            completed = not missing(row["final_available_gib"])
            shares["other"].append(remainder if completed else 0.0)
            shares[UNUSED].append(0.0 if completed else remainder)
        first = rows.iloc[0]
        run_figures = {figure: data.cite(source, int(ordinal), figure, first["rank"])
                       for figure in ("weights_begin", "weights", "kv_pool", "hicache")}
        formula_rows.append([
            Text(name), Text(rank_span(list(rows["rank"])) + ("" if len(rows) == 1 else " (identical)" if identical
                                                              else " (rank 0 shown)")),
            Text(number(first["gpu_before_load_gib"]), run_figures["weights_begin"]),
            Text(number(first["mem_fraction_static"])),
            Text(number(first["after_weights_gib"]), run_figures["weights"]),
            Text(number(first["kv_formula_gib"])),
            kv_cell(first, run_figures["kv_pool"]),
            Text(number(first["kv_gap_gib"]))])
        explained.setdefault("" if missing(first["kv_gap_cause"]) else first["kv_gap_cause"], []).append(name)
        host = rows[rows["host_cache_gb"].notna()]
        if not host.empty:
            total = budget[(budget["source"] == source) & (budget["run"] == ordinal)
                           & (budget["rank"] == "all ranks")].iloc[0]
            free = host["host_free_gb"].dropna()
            host_rows.append([
                Text(name), Text(str(len(host))),
                Text(f"{number(host['host_cache_gb'].iloc[0])} GB ({number(host['host_cache_gib'].iloc[0])} GiB)"
                     if host["host_cache_gb"].nunique() == 1 else "varies by rank", run_figures["hicache"]),
                # The query's own total (summed before rounding), as the summary and `memory-budget` give it.
                Text(f"{number(total['host_cache_gb'])} GB ({number(total['host_cache_gib'])} GiB)",
                     data.cite(source, int(ordinal), "hicache")),
                Text(f"{number(free.iloc[0])} GB" if not free.empty else "not logged")])
    alt = "; ".join(f"{caption}: " + ", ".join(f"{k} {number(v[i])} GiB" for k, v in shares.items() if v[i])
                    for i, caption in enumerate(captions))
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
