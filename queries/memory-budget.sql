-- memory-budget: what each configuration cost in GPU and host memory, per run and rank, and a
-- total over ranks (rank = 'all ranks').
--
-- GiB throughout for the device (SGLang prints "GB" but divides by 2^30). SGLang sizes the KV pool
-- as rest = avail after weights - memory before load x (1 - mem_fraction_static); `kv_formula_gib`
-- is that figure computed from the log, beside the KV size SGLang logged, so a reader sees whether
-- the numbers add up (`kv_gap_gib` near 0) or something else (draft model, page alignment,
-- --max-total-tokens) took a share; `kv_gap_cause` says in words what explains a gap where the log
-- shows it (the pool was capped by --max-total-tokens, Mamba state or a draft model shares the budget,
-- the run never allocated a pool, or, for an out-of-memory at start, the reserve that mem_fraction_static
-- holds back against what was left after the weights). HiCache host pools are in decimal GB as logged, and in GiB.
--
-- The 'all ranks' row sums what adds up across ranks (GiB and GB on each rank's device or host), where
-- every rank logged it (some releases log the weights and the CUDA graphs on TP0 only: their sum over the
-- ranks that did would pass for the launch's); per-rank invariants are not summed: `kv_tokens` is left empty (every rank's pool holds its own
-- share of the same tokens) and `mem_fraction_static` and `host_free_gb` are the ranks' common value.
-- Columns: source, run, rank, weights_gib as weights GiB, kv_tokens as KV tokens, kv_gib as KV GiB,
--     host_cache_gb as host GB, kv_formula_gib as KV formula GiB, kv_gap_gib as gap GiB, kv_gap_cause as gap cause
-- Once: source, run
-- Ranks: rank
-- Parameters: $source (display name or path, NULL for all), $run (ordinal, NULL for all).
WITH selected AS (
    SELECT r.*, s.display AS source,
           TRY_CAST(json_extract(c.args, '$.mem_fraction_static') AS DOUBLE) AS mem_fraction_static,
           TRY_CAST(json_extract(c.args, '$.max_total_tokens') AS BIGINT) AS max_total_tokens
    FROM runs AS r JOIN sources AS s USING (source_id) LEFT JOIN configs AS c USING (config_id)
    WHERE chosen_source(s.display, s.path, $source)
      AND chosen(r.ordinal, $run)
),
rank_keys AS (  -- every rank that logged its weights or its KV pool (`start_ranks`)
    SELECT source_id, run, rank, any_value(dp) AS dp, any_value(pp) AS pp, any_value(tp) AS tp
    FROM start_ranks WHERE what <> 'init'
    GROUP BY ALL
),
weights AS (
    SELECT source_id, run, rank,
        max(avail_mem_gib) FILTER (kind = 'load_weight_begin' AND model_role = 'target') AS before_load_gib,
        max(mem_usage_gib) FILTER (kind = 'load_weight_end' AND model_role = 'target') AS weights_gib,
        max(avail_mem_gib) FILTER (kind = 'load_weight_end' AND model_role = 'target') AS after_weights_gib,
        max(mem_usage_gib) FILTER (kind = 'load_weight_end' AND model_role = 'draft') AS draft_weights_gib
    FROM weight_loads_by_run GROUP BY ALL
),
kv AS (
    SELECT source_id, run, rank,
        sum(coalesce(kv_size_gib, k_size_gib + v_size_gib)) FILTER (model_role = 'target') AS kv_gib,
        sum(coalesce(kv_size_gib, k_size_gib + v_size_gib)) FILTER (model_role = 'draft') AS draft_kv_gib,
        sum(coalesce(conv_state_gib, 0) + coalesce(ssm_state_gib, 0) + coalesce(intermediate_ssm_gib, 0)
            + coalesce(intermediate_conv_gib, 0)) FILTER (pool = 'mamba') AS mamba_state_gib
    FROM kv_cache_by_run WHERE kind IN ('kv_cache_allocated', 'mamba_cache_allocated') GROUP BY ALL
),
graphs AS (
    SELECT source_id, run, rank, sum(mem_usage_gib) FILTER (kind = 'cuda_graph_end') AS cuda_graph_gib,
           arg_max(avail_mem_gib, line_no) FILTER (kind = 'cuda_graph_end') AS after_graphs_gib
    FROM cuda_graphs_by_run GROUP BY ALL
),
host AS (
    SELECT source_id, run, rank, sum(host_gb) FILTER (kind = 'hicache_host_alloc') AS host_cache_gb,
           max(requested_gb) FILTER (kind = 'host_memory_short') AS host_requested_gb,
           max(free_gb) FILTER (kind = 'host_memory_short') AS host_free_gb
    FROM host_cache_by_run GROUP BY ALL
),
capacity AS (
    SELECT source_id, run, arg_max(available_gpu_mem_gib, line_no) AS available_gpu_mem_gib
    FROM capacity_by_run GROUP BY ALL
),
per_rank AS (
    SELECT sel.source, sel.source_id, sel.ordinal AS run, r.rank, r.dp, r.pp, r.tp, sel.max_total_tokens,
        w.before_load_gib, w.weights_gib, w.after_weights_gib, sel.mem_fraction_static,
        w.before_load_gib * (1 - sel.mem_fraction_static) AS reserve_gib,
        w.after_weights_gib - w.before_load_gib * (1 - sel.mem_fraction_static) AS kv_formula_gib,
        p.tokens AS kv_tokens, kv.kv_gib, kv.mamba_state_gib, w.draft_weights_gib, kv.draft_kv_gib, g.cuda_graph_gib,
        coalesce(CASE WHEN r.rank = '' OR r.tp = 0 THEN c.available_gpu_mem_gib END, g.after_graphs_gib)
            AS final_available_gib,
        h.host_cache_gb, h.host_cache_gb * 1e9 / 2^30 AS host_cache_gib, h.host_requested_gb, h.host_free_gb
    FROM selected AS sel
    JOIN rank_keys AS r ON r.source_id = sel.source_id AND r.run = sel.ordinal
    LEFT JOIN weights AS w ON w.source_id = r.source_id AND w.run = r.run AND w.rank = r.rank
    LEFT JOIN kv ON kv.source_id = r.source_id AND kv.run = r.run AND kv.rank = r.rank
    LEFT JOIN kv_pools AS p ON p.source_id = r.source_id AND p.run = r.run AND p.rank = r.rank
    LEFT JOIN graphs AS g ON g.source_id = r.source_id AND g.run = r.run AND g.rank = r.rank
    LEFT JOIN host AS h ON h.source_id = r.source_id AND h.run = r.run AND h.rank = r.rank
    LEFT JOIN capacity AS c ON c.source_id = r.source_id AND c.run = r.run
),
with_totals AS (
    SELECT *, 0 AS is_total FROM per_rank
    UNION ALL
    SELECT any_value(source), source_id, run, 'all ranks', NULL, NULL, NULL, any_value(max_total_tokens),
        sum_of_every_rank(before_load_gib),
        sum_of_every_rank(weights_gib),
        sum_of_every_rank(after_weights_gib),
        any_value(mem_fraction_static),
        sum_of_every_rank(reserve_gib),
        sum_of_every_rank(kv_formula_gib),
        NULL,
        sum_of_every_rank(kv_gib),
        sum_of_every_rank(mamba_state_gib),
        sum_of_every_rank(draft_weights_gib),
        sum_of_every_rank(draft_kv_gib),
        sum_of_every_rank(cuda_graph_gib),
        sum_of_every_rank(final_available_gib),
        sum_of_every_rank(host_cache_gb),
        sum_of_every_rank(host_cache_gib),
        sum_of_every_rank(host_requested_gb),
        any_value(host_free_gb), 1
    FROM per_rank GROUP BY source_id, run
)
SELECT source, run, rank,
    round(before_load_gib, 2) AS gpu_before_load_gib,
    round(weights_gib, 2) AS weights_gib,
    round(after_weights_gib, 2) AS after_weights_gib,
    mem_fraction_static,
    round(reserve_gib, 2) AS reserve_gib,
    kv_tokens,
    round(kv_gib, 2) AS kv_gib,
    round(kv_formula_gib, 2) AS kv_formula_gib,
    round(kv_formula_gib - kv_gib, 2) AS kv_gap_gib,
    CASE
        WHEN kv_gib IS NULL AND kv_formula_gib <= 0
            THEN 'no KV pool: mem_fraction_static ' || mem_fraction_static || ' holds back '
                 || round(reserve_gib, 2) || ' GiB of the ' || round(before_load_gib, 2)
                 || ' GiB free before the weights, more than the ' || round(after_weights_gib, 2)
                 || ' GiB left after them, so the formula gives the pool ' || round(kv_formula_gib, 2)
                 || ' GiB and SGLang refused to start (raise mem_fraction_static or free memory)'
        WHEN kv_gib IS NULL THEN 'no KV pool: the run ended before allocating it'
        WHEN kv_formula_gib IS NULL AND weights_gib IS NULL AND kv_gib IS NOT NULL
            THEN CASE WHEN is_total = 1 THEN 'no formula: not every rank logged its weight-load figures'
                      ELSE 'no formula: this rank logged no weight-load figures' END
        WHEN kv_formula_gib IS NULL THEN 'no formula: mem_fraction_static or the weight-load figures are missing'
        WHEN abs(kv_formula_gib - kv_gib) <= greatest(0.05, 0.01 * kv_gib) THEN 'matches the formula'
        WHEN max_total_tokens IS NOT NULL AND kv_gib < kv_formula_gib
            THEN '--max-total-tokens ' || max_total_tokens || ' caps the pool below the formula'
        WHEN mamba_state_gib > 0 AND kv_gib < kv_formula_gib
            THEN 'Mamba state (' || round(mamba_state_gib, 2) || ' GiB) comes out of the same budget'
        WHEN draft_kv_gib > 0 AND kv_gib < kv_formula_gib
            THEN 'the draft model''s KV pool (' || round(draft_kv_gib, 2) || ' GiB) shares the budget'
        WHEN draft_kv_gib > 0
            THEN 'speculative decoding: SGLang adds room for draft and verify tokens'
    END AS kv_gap_cause,
    round(mamba_state_gib, 2) AS mamba_state_gib,
    round(draft_weights_gib, 2) AS draft_weights_gib,
    round(draft_kv_gib, 2) AS draft_kv_gib,
    round(cuda_graph_gib, 2) AS cuda_graph_gib,
    round(final_available_gib, 2) AS final_available_gib,
    round(host_cache_gb, 2) AS host_cache_gb,
    round(host_cache_gib, 2) AS host_cache_gib,
    host_requested_gb,
    host_free_gb
FROM with_totals
ORDER BY source_id, run, is_total, dp NULLS FIRST, pp NULLS FIRST, tp NULLS FIRST;
