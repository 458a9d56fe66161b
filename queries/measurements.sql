-- measurements: every figure a run's log measured that an agent's claim can speak of, one row per run,
-- quantity and scope, with the line it was read from.
--
-- `scope` is `rank` (rank 0's figure) or `total` (the sum over ranks, byte quantities only). `unit` is
-- the unit as the log prints it and `bytes_per_unit` what it means: SGLang prints device memory as
-- "GB" but divides by 2^30 (GiB), and HiCache host memory as "GB" in decimal. `reserve` is SGLang's
-- own rule, memory before weight loading x (1 - mem_fraction_static); `draft_model` is the draft
-- model's weights plus its KV pool; `host_cache_requested` and `host_free` come from HiCache's "not enough
-- host memory" error, `oom_*` from a CUDA out-of-memory error (PyTorch prints GiB), `start_to_failure` is
-- how long a start that never became ready lasted, `context_len` the run's context length. A `total` of a
-- per-rank figure is the sum over the ranks when the log holds every rank of the launch, else rank 0's
-- figure x the launch's ranks (tp_size x pp_size, every node); `node` the sum over the ranks this log holds
-- when the launch spans nodes. `spread` is how far the other ranks' figure lies from rank 0's (their
-- elapsed times differ), `derivation` how a figure not printed as such came about (its rule and
-- arithmetic). `claims` checks the agent's numbers against these rows.
-- Columns: source, run, quantity, scope, value, unit, spread, derivation, measured_source
-- Parameters: $source (display name or path, NULL for all), $run (ordinal, NULL for all).
WITH rank0 AS (
    SELECT 'weights' AS quantity, source_id, run, mem_usage_gib AS value, 'GB' AS unit, line_no
    FROM weight_loads_by_run WHERE is_rank0 AND kind = 'load_weight_end' AND model_role = 'target'
    UNION ALL SELECT 'gpu_before_load', source_id, run, avail_mem_gib, 'GB', line_no
    FROM weight_loads_by_run WHERE is_rank0 AND kind = 'load_weight_begin' AND model_role = 'target'
    UNION ALL SELECT 'after_weights', source_id, run, avail_mem_gib, 'GB', line_no
    FROM weight_loads_by_run WHERE is_rank0 AND kind = 'load_weight_end' AND model_role = 'target'
    UNION ALL SELECT 'draft_weights', source_id, run, mem_usage_gib, 'GB', line_no
    FROM weight_loads_by_run WHERE is_rank0 AND kind = 'load_weight_end' AND model_role = 'draft'
    UNION ALL SELECT 'weights_time', source_id, run, elapsed_s, 's', line_no
    FROM weight_loads_by_run WHERE is_rank0 AND kind = 'load_weight_end' AND model_role = 'target'
    UNION ALL SELECT 'kv_size', source_id, run, coalesce(kv_size_gib, k_size_gib + v_size_gib), 'GB', line_no
    FROM kv_cache_by_run WHERE is_rank0 AND kind = 'kv_cache_allocated' AND model_role = 'target'
    UNION ALL SELECT 'kv_tokens', source_id, run, tokens, 'tokens', tokens_line_no
    FROM kv_pools WHERE is_rank0
    UNION ALL SELECT 'draft_kv', source_id, run, coalesce(kv_size_gib, k_size_gib + v_size_gib), 'GB', line_no
    FROM kv_cache_by_run WHERE is_rank0 AND kind = 'kv_cache_allocated' AND model_role = 'draft'
    UNION ALL SELECT 'memory_pool_free', source_id, run, avail_mem_gib, 'GB', line_no
    FROM memory_pool_by_run WHERE is_rank0 AND kind = 'memory_pool_end' AND model_role = 'target'
    UNION ALL SELECT 'cuda_graph_memory', source_id, run, mem_usage_gib, 'GB', line_no
    FROM cuda_graphs_by_run WHERE is_rank0 AND kind = 'cuda_graph_end' AND model_role = 'target'
                             AND coalesce(role, '') <> 'draft'
    UNION ALL SELECT 'cuda_graph_time', source_id, run, elapsed_s, 's', line_no
    FROM cuda_graphs_by_run WHERE is_rank0 AND kind = 'cuda_graph_end' AND model_role = 'target'
                             AND coalesce(role, '') <> 'draft'
    UNION ALL SELECT 'draft_graph_memory', source_id, run, mem_usage_gib, 'GB', line_no
    FROM cuda_graphs_by_run WHERE is_rank0 AND kind = 'cuda_graph_end' AND (role = 'draft' OR model_role = 'draft')
    UNION ALL SELECT 'available_gpu_memory', source_id, run, available_gpu_mem_gib, 'GB', line_no
    FROM capacity_by_run WHERE is_rank0 AND available_gpu_mem_gib IS NOT NULL
    UNION ALL SELECT 'host_cache', source_id, run, host_gb, 'GB', line_no
    FROM host_cache_by_run WHERE is_rank0 AND kind = 'hicache_host_alloc'
    UNION ALL SELECT 'host_cache_requested', source_id, run, requested_gb, 'GB', line_no
    FROM host_cache_by_run WHERE is_rank0 AND kind = 'host_memory_short'
    UNION ALL SELECT 'host_free', source_id, run, free_gb, 'GB', line_no
    FROM host_cache_by_run WHERE is_rank0 AND kind = 'host_memory_short'
    UNION ALL SELECT 'kv_k_size', source_id, run, k_size_gib, 'GB', line_no
    FROM kv_cache_by_run WHERE is_rank0 AND kind = 'kv_cache_allocated' AND model_role = 'target'
    UNION ALL SELECT 'before_cuda_graphs', source_id, run, avail_mem_gib, 'GB', line_no
    FROM cuda_graphs_by_run WHERE is_rank0 AND kind = 'cuda_graph_begin' AND model_role = 'target'
                             AND coalesce(role, '') <> 'draft'
    UNION ALL SELECT 'after_cuda_graphs', source_id, run, avail_mem_gib, 'GB', line_no
    FROM cuda_graphs_by_run WHERE is_rank0 AND kind = 'cuda_graph_end' AND model_role = 'target'
                             AND coalesce(role, '') <> 'draft'
    UNION ALL SELECT 'oom_requested', source_id, run,
           TRY_CAST(regexp_extract(exception_message, 'Tried to allocate ([0-9.]+) GiB', 1) AS DOUBLE), 'GiB', line_no
    FROM errors_by_run WHERE is_rank0 AND error_kind = 'oom'
    UNION ALL SELECT 'oom_free', source_id, run,
           TRY_CAST(regexp_extract(exception_message, 'of which ([0-9.]+) GiB is free', 1) AS DOUBLE), 'GiB', line_no
    FROM errors_by_run WHERE is_rank0 AND error_kind = 'oom'
    UNION ALL SELECT 'oom_capacity', source_id, run,
           TRY_CAST(regexp_extract(exception_message, 'total capacity of ([0-9.]+) GiB', 1) AS DOUBLE), 'GiB', line_no
    FROM errors_by_run WHERE is_rank0 AND error_kind = 'oom'
),
spreads AS (  -- how far the other ranks' elapsed times lie from rank 0's
    SELECT 'weights_time' AS quantity, source_id, run,
           greatest(max(elapsed_s) - arg_min(elapsed_s, NOT is_rank0), arg_min(elapsed_s, NOT is_rank0) - min(elapsed_s)) AS spread
    FROM weight_loads_by_run WHERE kind = 'load_weight_end' AND model_role = 'target' GROUP BY ALL
    UNION ALL SELECT 'cuda_graph_time', source_id, run,
           greatest(max(elapsed_s) - arg_min(elapsed_s, NOT is_rank0), arg_min(elapsed_s, NOT is_rank0) - min(elapsed_s))
    FROM cuda_graphs_by_run WHERE kind = 'cuda_graph_end' AND model_role = 'target' AND coalesce(role, '') <> 'draft'
    GROUP BY ALL
),
first_per_run AS (  -- a rank logs a figure once per run; a repeat (a retried step) keeps the first
    SELECT quantity, source_id, run, arg_min(value, line_no) AS value, any_value(unit) AS unit,
           min(line_no) AS line_no
    FROM rank0 WHERE value IS NOT NULL GROUP BY ALL
),
mem_fraction AS (
    SELECT r.source_id, r.ordinal AS run,
           TRY_CAST(json_extract(c.args, '$.mem_fraction_static') AS DOUBLE) AS mem_fraction_static,
           (SELECT min(a.line_no) FROM server_args AS a WHERE a.source_id = r.source_id
               AND a.line_no BETWEEN r.first_line_no AND r.last_line_no) AS line_no
    FROM runs AS r JOIN configs AS c USING (config_id)
),
derived AS (  -- figures no line prints as such, each with its rule and arithmetic
    SELECT 'reserve' AS quantity, b.source_id, b.run, b.value * (1 - m.mem_fraction_static) AS value,
           'GB' AS unit, b.line_no,
           printf('memory before loading x (1 - mem_fraction_static): %g x (1 - %g) = %.2f', b.value,
                  m.mem_fraction_static, b.value * (1 - m.mem_fraction_static)) AS derivation
    FROM first_per_run AS b JOIN mem_fraction AS m USING (source_id, run) WHERE b.quantity = 'gpu_before_load'
    UNION ALL SELECT 'mem_fraction_static', source_id, run, mem_fraction_static, 'fraction', line_no, NULL
    FROM mem_fraction WHERE mem_fraction_static IS NOT NULL
    UNION ALL SELECT 'draft_model', w.source_id, w.run, w.value + k.value, 'GB', k.line_no,
           printf('draft weights + draft KV pool: %g + %g = %g', w.value, k.value, w.value + k.value)
    FROM first_per_run AS w JOIN first_per_run AS k USING (source_id, run)
    WHERE w.quantity = 'draft_weights' AND k.quantity = 'draft_kv'
    UNION ALL SELECT 'load_time', r.source_id, r.ordinal, epoch(r.ready_at) - epoch(r.started_at), 's',
           (SELECT min(l.line_no) FROM lines AS l WHERE l.source_id = r.source_id AND l.ts = r.ready_at
               AND l.line_no BETWEEN r.first_line_no AND r.last_line_no),
           printf('ready - started: %s - %s = %g s', strftime(r.ready_at, '%H:%M:%S'),
                  strftime(r.started_at, '%H:%M:%S'), epoch(r.ready_at) - epoch(r.started_at))
    FROM runs AS r WHERE r.ready_at IS NOT NULL
    UNION ALL SELECT 'start_to_failure', r.source_id, r.ordinal, epoch(r.ended_at) - epoch(r.started_at), 's',
           r.last_line_no,
           printf('failed - started: %s - %s = %g s', strftime(r.ended_at, '%H:%M:%S'),
                  strftime(r.started_at, '%H:%M:%S'), epoch(r.ended_at) - epoch(r.started_at))
    FROM runs AS r WHERE r.ready_at IS NULL AND r.ended_at IS NOT NULL AND r.end_reason = 'failed'
    UNION ALL SELECT 'context_len', r.source_id, r.ordinal,
           TRY_CAST(json_extract(c.args, '$.context_length') AS DOUBLE), 'tokens',
           (SELECT min(a.line_no) FROM server_args AS a WHERE a.source_id = r.source_id
               AND a.line_no BETWEEN r.first_line_no AND r.last_line_no), NULL
    FROM runs AS r JOIN configs AS c USING (config_id)
),
launch AS (  -- ranks of the whole launch (every node) and whether it spans nodes
    SELECT r.source_id, r.ordinal AS run,
           coalesce(TRY_CAST(json_extract(c.args, '$.tp_size') AS INTEGER), 1)
             * coalesce(TRY_CAST(json_extract(c.args, '$.pp_size') AS INTEGER), 1) AS ranks,
           coalesce(TRY_CAST(json_extract(c.args, '$.nnodes') AS INTEGER), 1) AS nnodes
    FROM runs AS r JOIN configs AS c USING (config_id)
),
logged_ranks AS (  -- byte figures summed over every rank that logged them (this node's ranks)
    SELECT 'host_cache' AS quantity, source_id, run, sum(host_gb) AS value, count(*) AS ranks, min(line_no) AS line_no
    FROM host_cache_by_run WHERE kind = 'hicache_host_alloc' GROUP BY ALL
    UNION ALL SELECT 'host_cache_requested', source_id, run, sum(requested_gb), count(*), min(line_no)
    FROM host_cache_by_run WHERE kind = 'host_memory_short' GROUP BY ALL
    UNION ALL SELECT 'kv_size', source_id, run, sum(coalesce(kv_size_gib, k_size_gib + v_size_gib)), count(*), min(line_no)
    FROM kv_cache_by_run WHERE kind = 'kv_cache_allocated' AND model_role = 'target' GROUP BY ALL
    UNION ALL SELECT 'weights', source_id, run, sum(mem_usage_gib), count(*), min(line_no)
    FROM weight_loads_by_run WHERE kind = 'load_weight_end' AND model_role = 'target' GROUP BY ALL
),
totals AS (  -- summed over the ranks when the log holds every rank of the launch, else rank 0's x the ranks;
             -- per node: the ranks this log holds, when the launch spans nodes
    SELECT g.quantity, g.source_id, g.run,
           CASE WHEN l.ranks IS NULL OR g.ranks = l.ranks THEN g.value ELSE f.value * l.ranks END AS value,
           f.unit, g.line_no, 'total' AS scope, coalesce(l.ranks, g.ranks) AS ranks,
           CASE WHEN l.ranks IS NULL OR g.ranks = l.ranks
                THEN printf('summed over %d ranks: %g x %d = %g', g.ranks, f.value, g.ranks, round(g.value, 4))
                ELSE printf('per rank x the %d ranks of the launch: %g x %d = %g', l.ranks, f.value, l.ranks,
                            round(f.value * l.ranks, 4))
           END AS derivation
    FROM logged_ranks AS g JOIN first_per_run AS f USING (quantity, source_id, run)
    LEFT JOIN launch AS l USING (source_id, run)
    UNION ALL SELECT g.quantity, g.source_id, g.run, g.value, f.unit, g.line_no, 'node', g.ranks,
           printf('summed over the %d ranks of this node: %g x %d = %g', g.ranks, f.value, g.ranks, round(g.value, 4))
    FROM logged_ranks AS g JOIN first_per_run AS f USING (quantity, source_id, run)
    JOIN launch AS l USING (source_id, run) WHERE l.nnodes > 1
),
everything AS (
    SELECT f.*, 'rank' AS scope, NULL::BIGINT AS ranks, NULL AS derivation FROM first_per_run AS f
    UNION ALL SELECT quantity, source_id, run, value, unit, line_no, 'rank', NULL, derivation FROM derived
    UNION ALL SELECT quantity, source_id, run, value, unit, line_no, scope, ranks, derivation FROM totals
)
SELECT s.display AS source, e.source_id, e.run, e.quantity, e.scope, round(e.value, 4) AS value, e.unit,
       CASE WHEN e.unit = 'GiB' THEN 2^30 WHEN e.unit <> 'GB' THEN NULL WHEN e.quantity LIKE 'host%' THEN 1e9
            ELSE 2^30 END AS bytes_per_unit,
       e.line_no, e.ranks, coalesce(p.spread, 0) AS spread, e.derivation,
       s.display || ':' || e.line_no AS measured_source
FROM everything AS e JOIN sources AS s USING (source_id)
LEFT JOIN spreads AS p ON p.quantity = e.quantity AND p.source_id = e.source_id AND p.run = e.run AND e.scope = 'rank'
WHERE chosen_source(s.display, s.path, $source)
  AND chosen(e.run, $run)
ORDER BY e.source_id, e.run, e.quantity, e.scope;
