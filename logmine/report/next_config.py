"""What the next configuration would cost: the standard ways to more KV capacity for the last run, predicted
from its own figures (`logmine.query.plan`), and whether its host pools fit the host (`logmine.query.host_memory`)."""

from __future__ import annotations

from .common import run_name
from .data import ReportData
from .model import Section, Table, Text
from .words import first_upper, number


def next_config_section(data: ReportData) -> Section | None:
    planned = data.next_configuration
    if not planned:
        return None
    source, run = planned["source"], planned["run"]
    name = run_name(data, source, run)
    rows = []
    for option in planned["options"]:
        delta = option["kv_tokens_delta"]
        host = ("" if option["host_cache_gb_per_rank"] is None else
                f"{number(option['host_cache_gb_per_rank'])} GB per rank, {number(option['host_cache_gb_total'])} "
                "GB in all")
        rows.append([Text(option["option"]), Text(" ".join(f"--{k.replace('_', '-')} {v}"
                                                         for k, v in option["set"].items())),
                     Text("would not start" if option["kv_tokens_per_rank"] is None else
                          f"{number(option['kv_tokens_per_rank'])} ({delta:+,})"),
                     Text(number(option["headroom_gib_per_rank"])), Text(host),
                     Text("; ".join(option["outside_formula"]) or option["caveat"])])
    blocks = [Text(f"From {name}'s own figures ({name} as logged, SGLang's formulas: rest = avail after weights − "
                   "memory before load × (1 − mem_fraction_static), over the bytes a token takes; the HiCache host "
                   "pool is the device pool × hicache_ratio). logmine plan --set KEY=VALUE predicts any other "
                   "change.", data.cite(source, run, "kv_pool")),
              Table(["option", "settings", "KV tokens per rank", "headroom GiB", "host pool", "risk"], rows,
                    [False, False, True, True, True, False])]
    audit = planned["audit"]
    if audit["pinned_gb_per_node"] is not None:
        fits = {True: "fits", False: "does not fit", None: "cannot be checked (no host memory reading)"}[audit["fits"]]
        blocks.append(Text(first_upper(
            f"{name}'s host pools: {number(audit['requested_gb_per_rank'])} GB per rank, "
            f"{number(audit['pinned_gb_per_node'])} GB pinned per node ({audit['ranks_per_node']} ranks"
            + (f", SGLang v{audit['sglang_version']}: {audit['allocator']}" if audit["sglang_version"] else "")
            + f"); against the host's {number(audit['host_available_gb'])} GB available "
            f"({audit['host_available_from']}) it {fits}.") if audit["host_available_gb"] is not None else
            f"{name}'s host pools: {number(audit['pinned_gb_per_node'])} GB pinned per node; no host memory "
            "reading to check them against."))
    blocks += [Text(first_upper(finding) + ".") for finding in audit["findings"]]
    return Section("What the next configuration would cost", blocks, "next")
