"""What the next configuration would cost: SGLang's memory formulas applied to one run's logged figures.

SGLang sizes the KV pool per rank in `ModelRunner.profile_max_num_token` as

    rest = avail after weights - memory before load x (1 - mem_fraction_static)     (GiB, as SGLang's "GB")
    max_total_num_tokens = rest x 2^30 // cell_size

with `cell_size` the bytes one token takes on one rank: (kv_lora_rank + qk_rope_head_dim) x layers x
itemsize for MLA models, kv_heads / tp x head_dim x layers x 2 x itemsize for the others. A pool below
1 token raises "Not enough memory. Please try to increase --mem-fraction-static."; `--max-total-tokens`
caps the pool below the formula; the result is aligned down to `page_size`. The HiCache host pool
(`HostKVCache`) holds `hicache_size` GB // cell_size tokens when `hicache_size` is set, else the device
pool's tokens x `hicache_ratio`, and is printed in decimal GB (bytes / 1e9).

A prediction is anchored on what the run logged: the predicted pool is the logged one plus what the
formula says the change adds, so whatever SGLang added beside the formula (draft tokens, alignment) stays
in it; the cell size comes from the logged pool (its GiB over its tokens). Every figure says which logged
figures and which formula it came from. `predict` and `options` are pure functions of a `Baseline`;
`baseline` reads one from a database.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

GIB = 2**30
GB = 1e9

# Bytes per element of each `--kv-cache-dtype` (and of the model dtypes `auto` resolves to).
DTYPE_BYTES = {"bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2, "half": 2, "fp32": 4, "float32": 4,
               "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "float8_e4m3fn": 1, "float8_e5m2": 1}

# The settings `predict` understands, with how a `--set KEY=VALUE` string is read.
SETTINGS = {
    "mem_fraction_static": float, "kv_cache_dtype": str, "enable_hierarchical_cache": bool,
    "hicache_ratio": float, "hicache_size": float, "max_total_tokens": int, "context_length": int,
    "cuda_graph_max_bs": int, "tp_size": int, "page_size": int,
}

# The bytes a token takes are a whole number of these in every attention layout SGLang has (head dims and
# MLA's 576 are multiples of 64): a cell size read from a rounded GiB figure snaps to one when only one fits.
CELL_GRAIN = 64


class PlanError(ValueError):
    """A setting that cannot be predicted (unknown key, bad value) or a run without the figures needed."""


@dataclass(frozen=True)
class Baseline:
    """One run's logged figures, per rank (the first rank: SGLang's ranks log the same budget)."""

    source: str
    run: int
    ranks: int
    before_load_gib: float
    weights_gib: float
    after_weights_gib: float
    kv_tokens: int
    kv_gib: float
    attention: str  # "MLA" (one latent per token) or "MHA" (K and V per head)
    model_dtype: str | None = None
    draft_weights_gib: float | None = None
    draft_kv_gib: float | None = None
    cuda_graph_gib: float | None = None
    final_available_gib: float | None = None
    graph_max_bs: int | None = None
    context_len: int | None = None
    host_cache_gb: float | None = None
    config: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, str] = field(default_factory=dict)  # figure -> "file:line"

    def setting(self, key: str, default: Any = None) -> Any:
        value = self.config.get(key)
        return default if value is None else value


@dataclass
class Figure:
    """A predicted (or logged) figure with where it came from."""

    value: float | int | None
    unit: str
    formula: str
    logged: dict[str, Any]
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None or k == "value"}


def parse_settings(pairs: list[str] | dict[str, Any]) -> dict[str, Any]:
    """`["mem_fraction_static=0.92", ...]` (or a dict) as typed settings; PlanError naming a bad one."""
    items = pairs.items() if isinstance(pairs, dict) else [_split(p) for p in pairs]
    typed: dict[str, Any] = {}
    for key, raw in items:
        key = key.strip().lstrip("-").replace("-", "_")
        if key not in SETTINGS:
            raise PlanError(f"--set {key}: not a setting plan predicts (known: {', '.join(SETTINGS)})")
        typed[key] = _typed(key, raw)
    return typed


def _split(pair: str) -> tuple[str, str]:
    key, sep, value = pair.partition("=")
    if not sep:
        raise PlanError(f"--set {pair!r}: expected KEY=VALUE, e.g. mem_fraction_static=0.92")
    return key, value


def _typed(key: str, raw: Any) -> Any:
    kind = SETTINGS[key]
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    if text.lower() in ("none", "null", "") and key in ("max_total_tokens", "context_length", "hicache_size"):
        return None
    try:
        if kind is bool:
            if text.lower() not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ValueError(text)
            return text.lower() in ("true", "1", "yes", "on")
        value = kind(text)
    except ValueError:
        raise PlanError(f"--set {key}={raw}: expected {'true or false' if kind is bool else kind.__name__}") from None
    if key == "kv_cache_dtype" and value != "auto" and value not in DTYPE_BYTES:
        raise PlanError(f"--set kv_cache_dtype={raw}: expected auto or one of {', '.join(DTYPE_BYTES)}")
    if key == "mem_fraction_static" and not 0 < value < 1:
        raise PlanError(f"--set mem_fraction_static={raw}: expected a fraction between 0 and 1")
    return value


def dtype_bytes(name: str | None, model_dtype: str | None) -> int | None:
    """Bytes per element of a `kv_cache_dtype`; `auto` is the model's dtype (`torch.bfloat16` as logged)."""
    if name in (None, "auto"):
        name = model_dtype
    if name is None:
        return None
    return DTYPE_BYTES.get(str(name).removeprefix("torch."))


def cell_bytes(base: Baseline) -> tuple[int, str]:
    """The bytes one token takes on one rank, from the logged pool, and how it was found."""
    estimate = base.kv_gib * GIB / base.kv_tokens
    # Each logged GiB figure has two decimals (MHA logs K and V apart, each rounded): the cell lies within
    # half a hundredth of a GiB per figure, over the tokens.
    spread = (0.01 if base.attention == "MHA" else 0.005) * GIB / base.kv_tokens
    grains = range(math.ceil((estimate - spread) / CELL_GRAIN), math.floor((estimate + spread) / CELL_GRAIN) + 1)
    if len(grains) == 1:
        return grains[0] * CELL_GRAIN, (f"KV size {base.kv_gib} GiB / {base.kv_tokens} tokens = {estimate:,.0f} B, "
                                        f"the one multiple of {CELL_GRAIN} B within the GiB figure's rounding")
    return round(estimate), f"KV size {base.kv_gib} GiB / {base.kv_tokens} tokens"


def world_size(settings: dict[str, Any]) -> int:
    """The GPU ranks SGLang starts: tp x pp, times dp unless DP attention splits the tp group."""
    tp, pp, dp = (int(settings.get(k) or 1) for k in ("tp_size", "pp_size", "dp_size"))
    return tp * pp * (1 if settings.get("enable_dp_attention") else dp)


def ranks_per_node(settings: dict[str, Any]) -> int:
    nodes = int(settings.get("nnodes") or 1)
    return max(1, world_size(settings) // nodes)


def predict(base: Baseline, changes: dict[str, Any]) -> dict[str, Any]:
    """The run's configuration with `changes` applied: KV pool, headroom and HiCache host pool, per rank,
    per node and in all, each figure with its logged inputs and formula. `outside_formula` lists what
    SGLang would not start with (a pool below one token, no memory left for graphs and the draft model)."""
    changes = parse_settings(changes)
    old = {k: base.setting(k) for k in SETTINGS}
    new = {**old, **changes}
    settings = {**base.config, **changes}
    outside: list[str] = []
    notes: list[str] = []
    logged_cell, cell_how = cell_bytes(base)

    # The cell: dtype and, for MHA, the KV heads each rank holds.
    old_bytes = dtype_bytes(old["kv_cache_dtype"], base.model_dtype) or 2
    new_bytes = dtype_bytes(new["kv_cache_dtype"], base.model_dtype) or old_bytes
    old_tp, new_tp = int(old["tp_size"] or 1), int(new["tp_size"] or 1)
    tp_factor = 1.0 if base.attention == "MLA" else old_tp / new_tp
    cell = round(logged_cell * new_bytes / old_bytes * tp_factor)
    cell_formula = "logged cell"
    if new_bytes != old_bytes:
        cell_formula += f" x {new_bytes} B / {old_bytes} B per element ({new['kv_cache_dtype']})"
    if tp_factor != 1:
        cell_formula += f" x tp {old_tp} / {new_tp} (KV heads split over ranks)"
        notes.append(f"tp_size {new_tp}: assumes the model has at least {new_tp} KV heads and weights split evenly")
    cell_fig = Figure(cell, "bytes per token per rank", cell_formula, {"logged cell bytes": logged_cell}, cell_how)

    # SGLang's formula before and after.
    mfs_old, mfs_new = float(old["mem_fraction_static"]), float(new["mem_fraction_static"])
    weights_new = base.weights_gib * old_tp / new_tp
    after_weights_new = base.before_load_gib - weights_new
    rest_old = base.after_weights_gib - base.before_load_gib * (1 - mfs_old)
    rest_new = after_weights_new - base.before_load_gib * (1 - mfs_new)
    capped = old["max_total_tokens"] is not None and base.kv_gib < rest_old - 0.05
    # The run's pool in bytes: its tokens times the cell (exact, where the logged GiB is rounded), plus the bytes
    # the formula's rest gains or loses.
    anchor_bytes = round(rest_old * GIB) if capped else base.kv_tokens * logged_cell
    pool_bytes = anchor_bytes + round((rest_new - rest_old) * GIB)
    logged = {"memory before load GiB": base.before_load_gib, "avail after weights GiB": base.after_weights_gib,
              "mem_fraction_static": mfs_old, "logged KV GiB": base.kv_gib, "logged KV tokens": base.kv_tokens}
    rest_formula = (f"rest = avail after weights - memory before load x (1 - mem_fraction_static) = "
                    f"{after_weights_new:.2f} - {base.before_load_gib} x (1 - {mfs_new:g}) = {rest_new:.2f} GiB "
                    f"(the run: {rest_old:.2f})")
    page = int(new["page_size"] or 1)
    if weights_new >= base.before_load_gib:
        outside.append(f"the weights alone ({weights_new:.2f} GiB per rank at tp {new_tp}) exceed the "
                       f"{base.before_load_gib} GiB free before loading")
    if rest_new <= 0 or pool_bytes <= 0:
        outside.append(f"no KV pool: {rest_formula}; SGLang stops at start with \"Not enough memory. Please try to "
                       "increase --mem-fraction-static.\"")
        tokens: int | None = None
    else:
        tokens = pool_bytes // cell // page * page
        if new["max_total_tokens"] is not None and new["max_total_tokens"] < tokens:
            tokens = int(new["max_total_tokens"]) // page * page
            notes.append(f"--max-total-tokens {new['max_total_tokens']} caps the pool below the formula")
    anchor_words = ("the formula's rest (the run was capped by --max-total-tokens)" if capped
                    else "logged KV tokens x logged cell")
    tokens_fig = Figure(tokens, "tokens per rank",
                        f"({anchor_words} + change in rest x 2^30) // cell, aligned to page_size {page}; "
                        f"{rest_formula}",
                        {**logged, "cell bytes": cell}, None if not changes else f"{_delta(tokens, base.kv_tokens)} "
                        "tokens against the run")
    kv_gib = tokens * cell / GIB if tokens is not None else None
    kv_gib_fig = Figure(_round(kv_gib), "GiB per rank", "tokens x cell / 2^30", {"cell bytes": cell,
                        "logged KV GiB": base.kv_gib})

    # The request-to-token table (int32 per request and context position) comes out of the reserve too.
    context = new["context_length"] or base.context_len
    req_old = _req_to_token_bytes(base.setting("max_running_requests"), base.kv_tokens, base.context_len, base.config)
    req_new = _req_to_token_bytes(base.setting("max_running_requests"), tokens, context, base.config)
    req_delta_gib = 0.0 if req_old is None or req_new is None else (req_new - req_old) / GIB
    req_fig = Figure(None if req_new is None else round(req_new / GIB, 3), "GiB per rank",
                     "requests x (context_length + 4 + speculative_num_draft_tokens) x 4 B; requests = "
                     "max_running_requests, else min(max(KV tokens / context_length x 512, 2048), 4096)",
                     {"max_running_requests": base.setting("max_running_requests"), "context_length": context})

    # Headroom: what the reserve has left after the pool, CUDA graphs and the draft model.
    graph_fig = _graphs(base, changes)
    graph_new = graph_fig.value if graph_fig.value is not None else (base.cuda_graph_gib or 0.0)
    headroom = None
    if base.final_available_gib is not None and kv_gib is not None:
        headroom = (base.final_available_gib - (kv_gib - base.kv_gib) - (graph_new - (base.cuda_graph_gib or 0.0))
                    - (weights_new - base.weights_gib) - req_delta_gib)
        if headroom < 0:
            outside.append(f"out of memory at start: the pool, CUDA graphs and draft model need {-headroom:.2f} GiB "
                           "more than the GPU has after the weights (capture or the draft load fails)")
    headroom_fig = Figure(_round(headroom), "GiB per rank",
                          "logged available_gpu_mem - change in KV GiB - change in CUDA graph GiB - change in weights "
                          "- change in the request-to-token table",
                          {"logged available_gpu_mem GiB": base.final_available_gib, "logged KV GiB": base.kv_gib,
                           "logged CUDA graph GiB": base.cuda_graph_gib},
                          "what activations (prefill chunks, MoE buffers) run in; SGLang has no formula for them")

    # Requests at full context.
    full_context = tokens // context if tokens is not None and context else None
    if full_context == 0:
        notes.append(f"one request at the full context ({context} tokens) does not fit in the pool of {tokens} tokens")
    context_fig = Figure(full_context, "requests at full context", "KV tokens // context_length",
                         {"context_length": context})

    host = _host_pool(base, new, settings, tokens, cell, outside)
    world, per_node = world_size(settings), ranks_per_node(settings)
    return {
        "source": base.source, "run": base.run,
        "changes": {k: {"from": old.get(k), "to": v} for k, v in changes.items()},
        "kv_tokens_per_rank": tokens_fig.value,
        "kv_tokens_delta": None if tokens is None else tokens - base.kv_tokens,
        "kv_gib_per_rank": kv_gib_fig.value,
        "headroom_gib_per_rank": headroom_fig.value,
        "cuda_graph_gib_per_rank": graph_fig.value,
        "full_context_requests": context_fig.value,
        "host_cache_gb_per_rank": host["per_rank"].value,
        "host_cache_gib_per_rank": None if host["per_rank"].value is None
        else round(host["per_rank"].value * GB / GIB, 2),
        "host_cache_gb_per_node": host["per_node"].value,
        "host_cache_gb_total": host["total"].value,
        "host_cache_gib_total": None if host["total"].value is None else round(host["total"].value * GB / GIB, 2),
        "host_cache_tokens_per_rank": host["tokens"].value,
        "ranks": world, "ranks_per_node": per_node,
        "figures": {"cell_bytes": cell_fig.as_dict(), "kv_tokens_per_rank": tokens_fig.as_dict(),
                    "kv_gib_per_rank": kv_gib_fig.as_dict(), "headroom_gib_per_rank": headroom_fig.as_dict(),
                    "cuda_graph_gib_per_rank": graph_fig.as_dict(), "full_context_requests": context_fig.as_dict(),
                    "req_to_token_gib_per_rank": req_fig.as_dict(),
                    "host_cache_tokens_per_rank": host["tokens"].as_dict(),
                    "host_cache_gb_per_rank": host["per_rank"].as_dict(),
                    "host_cache_gb_per_node": host["per_node"].as_dict(),
                    "host_cache_gb_total": host["total"].as_dict()},
        "outside_formula": outside, "notes": notes, "evidence": base.evidence,
    }


def _req_to_token_bytes(max_running: int | None, tokens: int | None, context: int | None,
                        config: dict[str, Any]) -> int | None:
    """SGLang's request-to-token table: one int32 per request and context position (`init_memory_pool`)."""
    if not tokens or not context:
        return None
    requests = max_running or min(max(int(tokens / context * 512), 2048), 4096)
    return requests * (context + 4 + int(config.get("speculative_num_draft_tokens") or 0)) * 4


def _graphs(base: Baseline, changes: dict[str, Any]) -> Figure:
    logged = {"logged CUDA graph GiB": base.cuda_graph_gib, "largest captured batch": base.graph_max_bs}
    if base.cuda_graph_gib is None:
        return Figure(None, "GiB per rank", "not logged", logged)
    # SGLang captures batch sizes up to cuda_graph_max_bs, and none above max_running_requests.
    asked = changes.get("cuda_graph_max_bs")
    largest = min(asked, int(base.setting("max_running_requests", asked))) if asked else None
    if largest is None or not base.graph_max_bs or largest == base.graph_max_bs:
        return Figure(base.cuda_graph_gib, "GiB per rank", "as logged", logged)
    return Figure(_round(base.cuda_graph_gib * largest / base.graph_max_bs), "GiB per rank",
                  f"logged CUDA graph GiB x {largest} / {base.graph_max_bs} (largest captured batch)", logged,
                  "graph memory taken as growing with the largest captured batch; it does not change the KV pool "
                  "when mem_fraction_static is given")


def _host_pool(base: Baseline, new: dict[str, Any], settings: dict[str, Any], tokens: int | None, cell: int,
               outside: list[str]) -> dict[str, Figure]:
    off = Figure(None, "", "HiCache off (enable_hierarchical_cache false)", {})
    if not new["enable_hierarchical_cache"] or tokens is None:
        return {"tokens": off, "per_rank": off, "per_node": off, "total": off}
    page = int(new["page_size"] or 1)
    size, ratio = new["hicache_size"], float(new["hicache_ratio"] or 2.0)
    if size:
        host_tokens = int(size * GB // cell)
        how = f"hicache_size {size:g} GB x 1e9 // cell {cell} B"
    else:
        host_tokens = int(tokens * ratio)
        how = f"device pool {tokens} tokens x hicache_ratio {ratio:g}"
    host_tokens -= host_tokens % page
    if host_tokens <= tokens:
        outside.append(f"the host pool ({host_tokens} tokens) is not larger than the device pool ({tokens}): SGLang "
                       "releases before v0.5.17 refuse to start (the host memory must be larger than the device's)")
    per_rank = host_tokens * cell / GB
    per_node, world = ranks_per_node(settings), world_size(settings)
    logged = {"cell bytes": cell, "KV tokens per rank": tokens, "hicache_ratio": ratio, "hicache_size": size}
    return {
        "tokens": Figure(host_tokens, "tokens per rank",
                         how + f", aligned down to page_size {page} (v0.5.6 on add one page)", logged),
        "per_rank": Figure(round(per_rank, 2), "GB per rank", "host tokens x cell / 1e9 (as SGLang prints it)", logged,
                           None if base.host_cache_gb is None else f"the run logged {base.host_cache_gb} GB"),
        "per_node": Figure(round(per_rank * per_node, 2), "GB per node", f"per rank x {per_node} ranks per node",
                           {"ranks per node": per_node, "nnodes": settings.get("nnodes") or 1}),
        "total": Figure(round(per_rank * world, 2), "GB in all", f"per rank x {world} ranks",
                        {"ranks": world}),
    }


def options(base: Baseline, host_available_gb: float | None = None) -> list[dict[str, Any]]:
    """The standard ways to more KV capacity, each with its predicted effect: a higher mem_fraction_static,
    an FP8 KV cache, HiCache on the host's free memory, and FP8 with HiCache."""
    found: list[dict[str, Any]] = []
    mfs = float(base.setting("mem_fraction_static", 0.88))
    if mfs < 0.95:
        found.append(_option(base, "raise mem_fraction_static",
                             {"mem_fraction_static": round(min(mfs + 0.04, 0.95), 2)},
                             "eats into the headroom activations run in: watch for OOM on the largest prefill",
                             host_available_gb))
    kv_bytes = dtype_bytes(base.setting("kv_cache_dtype", "auto"), base.model_dtype)
    fp8 = {"kv_cache_dtype": "fp8_e4m3"} if kv_bytes and kv_bytes > 1 else {}
    if fp8:
        found.append(_option(base, "FP8 KV cache", fp8, "halves the cell; needs an FP8 attention path and costs "
                                                       "some accuracy", host_available_gb))
    hicache: dict[str, Any] = {}
    if not base.setting("enable_hierarchical_cache"):
        hicache = {"enable_hierarchical_cache": True, "hicache_ratio": _fitting_ratio(base, host_available_gb)}
        found.append(_option(base, "HiCache on host memory", hicache,
                             "keeps evicted prefixes in pinned host RAM (reloaded, not recomputed); does not raise "
                             "the tokens resident on the GPU", host_available_gb))
    if fp8 and hicache:
        found.append(_option(base, "FP8 KV cache and HiCache", {**fp8, **hicache},
                             "both: twice the tokens on the GPU and a host tier behind them", host_available_gb))
    return found


def _fitting_ratio(base: Baseline, available_gb: float | None) -> float:
    """SGLang's default ratio (2.0), or the largest half-step ratio whose pools fit the host's free memory
    after SGLang's 10 GiB reserve when that is known."""
    if available_gb is None:
        return 2.0
    cell, _ = cell_bytes(base)
    per_ratio = base.kv_tokens * cell / GB * ranks_per_node(base.config)
    fit = (available_gb - 10 * GIB / GB) / per_ratio
    return max(1.5, min(8.0, math.floor(fit * 2) / 2))


def _option(base: Baseline, name: str, changes: dict[str, Any], caveat: str,
            available_gb: float | None = None) -> dict[str, Any]:
    p = predict(base, changes)
    budget = None if available_gb is None else available_gb - 10 * GIB / GB  # SGLang's host reserve
    if budget is not None and (p["host_cache_gb_per_node"] or 0) > budget:
        p["outside_formula"].append(f"the host pools ({p['host_cache_gb_per_node']} GB per node) exceed the host's "
                                    f"{budget:.2f} GB available after SGLang's 10 GiB reserve")
    return {"option": name, "set": changes, "caveat": caveat, "kv_tokens_per_rank": p["kv_tokens_per_rank"],
            "kv_tokens_delta": p["kv_tokens_delta"], "kv_gib_per_rank": p["kv_gib_per_rank"],
            "headroom_gib_per_rank": p["headroom_gib_per_rank"], "host_cache_gb_per_rank": p["host_cache_gb_per_rank"],
            "host_cache_gb_per_node": p["host_cache_gb_per_node"], "host_cache_gb_total": p["host_cache_gb_total"],
            "outside_formula": p["outside_formula"]}


def _delta(new: int | None, old: int) -> str:
    return "n/a" if new is None else f"{new - old:+,}"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


# --- reading a run's figures -------------------------------------------------------------------------------

def baseline(con: duckdb.DuckDBPyConnection, source: str, run: int) -> Baseline:
    """The logged figures of run `run` of `source` (display name), from the memory-budget query and the
    tables beside it; PlanError when the run never allocated its KV pool."""
    from . import named_queries

    budget = named_queries.fetch(con, named_queries.text("memory-budget"), source=source, run=run)
    rows = [dict(zip(budget.columns, r, strict=True)) for r in budget.rows]
    ranks = [r for r in rows if r["rank"] != "all ranks"]
    first = next((r for r in ranks if r["kv_tokens"] is not None and r["after_weights_gib"] is not None), None)
    if first is None:
        raise PlanError(f"run {run} of {source} logged no KV pool (it ended before allocating one): plan from a run "
                        "that did")
    missing = [name for name, column in (("memory before load", "gpu_before_load_gib"),
                                         ("mem_fraction_static (the server_args dump)", "mem_fraction_static"))
               if first[column] is None]
    if missing:
        raise PlanError(f"run {run} of {source} logged no {' and no '.join(missing)}: SGLang's formula needs it")
    extra = named_queries.fetch(con, """
        WITH r AS (SELECT r.source_id, r.ordinal, c.args FROM runs AS r JOIN sources AS s USING (source_id)
                   LEFT JOIN configs AS c USING (config_id) WHERE s.display = $source AND r.ordinal = $run)
        SELECT any_value(r.args),
            (SELECT any_value(k.kv_size_gib IS NOT NULL AND k.k_size_gib IS NULL) FROM kv_cache_by_run AS k
             WHERE k.source_id = r.source_id AND k.run = r.ordinal AND k.kind = 'kv_cache_allocated'
               AND k.model_role = 'target'),
            (SELECT any_value(w.dtype) FROM weight_loads_by_run AS w WHERE w.source_id = r.source_id
               AND w.run = r.ordinal AND w.kind = 'load_weight_end' AND w.model_role = 'target'),
            (SELECT any_value(CAST(g.batch_sizes AS VARCHAR)) FROM cuda_graphs_by_run AS g
             WHERE g.source_id = r.source_id AND g.run = r.ordinal AND g.kind = 'cuda_graph_batch_sizes'
               AND g.model_role = 'target'),
            (SELECT max(c.context_len) FROM capacity_by_run AS c WHERE c.source_id = r.source_id
               AND c.run = r.ordinal)
        FROM r GROUP BY r.source_id, r.ordinal""", source=source, run=run).rows
    args, is_mla, dtype, sizes, context_len = extra[0] if extra else (None, None, None, None, None)
    config = config_dict(args)
    evidence = named_queries.fetch(con, named_queries.text("evidence"), source=source, run=run)
    cited = {}
    for row in evidence.rows:
        item = dict(zip(evidence.columns, row, strict=True))
        cited.setdefault(item["figure"], item["evidence"])
    return Baseline(
        source=source, run=run, ranks=len(ranks), before_load_gib=first["gpu_before_load_gib"],
        weights_gib=first["weights_gib"], after_weights_gib=first["after_weights_gib"],
        kv_tokens=int(first["kv_tokens"]), kv_gib=first["kv_gib"], attention="MLA" if is_mla else "MHA",
        model_dtype=dtype, draft_weights_gib=first["draft_weights_gib"], draft_kv_gib=first["draft_kv_gib"],
        cuda_graph_gib=first["cuda_graph_gib"], final_available_gib=first["final_available_gib"],
        graph_max_bs=_largest(sizes), context_len=context_len or config.get("context_length"),
        host_cache_gb=first["host_cache_gb"], config={"mem_fraction_static": first["mem_fraction_static"], **config},
        evidence=cited)


def config_dict(args: Any) -> dict[str, Any]:
    import json

    if args is None:
        return {}
    return json.loads(args) if isinstance(args, str) else dict(args)


def _largest(sizes: str | None) -> int | None:
    if not sizes:
        return None
    numbers = [int(n) for n in sizes.strip("[]").replace(" ", "").split(",") if n.isdigit()]
    return max(numbers) if numbers else None

