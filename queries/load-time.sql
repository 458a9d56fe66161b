-- load-time: how long each start took and where the time went, per run and rank.
--
-- Phases (seconds): until torch distributed init begins; init; target weights (SGLang's `elapsed`
-- where logged, else begin to end); KV pool allocation; HiCache host pool (allocating and pinning
-- host memory can take minutes); CUDA graph capture; draft model weights and graphs (speculative
-- decoding), each rank's own; the HiCache host pool is timed from the rank's `Allocating` line to the
-- HTTP server starting (SGLang pins the host memory in between); then warmup until the server is ready. `slowest` marks the rank that finished its
-- startup last: the one the whole server waited for (empty for a run that never became ready). `phase_order` lists the rank's phases (by column name)
-- in the order the log shows them begin, for charts. `failed_phase` is the phase a run that never became
-- ready died in (`weights`, `KV pool`, `CUDA graphs at bs 8`, ...; see `runs.failed_phase`).
-- Columns: source, run, rank, to_init_s as to init, init_s as init, weights_s as weights, kv_pool_s as KV pool,
--     host_cache_s as host cache, cuda_graph_s as graphs, draft_weights_s as draft weights,
--     draft_graph_s as draft graphs, warmup_s as warmup, total_s as total, slowest, failed_phase as failed in
-- Once: source, run
-- Ranks: rank
-- Parameters: $source (display name or path, NULL for all), $run (ordinal, NULL for all).
WITH selected AS (
    SELECT r.*, s.display AS source FROM runs AS r JOIN sources AS s USING (source_id)
    WHERE chosen_source(s.display, s.path, $source)
      AND chosen(r.ordinal, $run)
),
server_up AS (
    SELECT source_id, run, min(ts) AS server_up_at
    FROM server_events_by_run WHERE kind IN ('uvicorn_started', 'uvicorn_running', 'uvicorn_startup')
    GROUP BY ALL
),
milestones AS (
    SELECT source_id, run, rank, dp, pp, tp, kind, model_role, ts, elapsed_s, NULL::VARCHAR AS phase FROM init_distributed_by_run
    UNION ALL SELECT source_id, run, rank, dp, pp, tp, kind, model_role, ts, elapsed_s, phase FROM weight_loads_by_run
    UNION ALL SELECT source_id, run, rank, dp, pp, tp, kind, model_role, ts, NULL, NULL FROM memory_pool_by_run
    UNION ALL SELECT source_id, run, rank, dp, pp, tp, kind, model_role, ts, NULL, NULL FROM host_cache_by_run
              WHERE kind = 'hicache_host_alloc'
    UNION ALL SELECT source_id, run, rank, dp, pp, tp, kind, coalesce(role, model_role), ts, elapsed_s, phase
              FROM cuda_graphs_by_run
),
per_rank AS (
    SELECT source_id, run, rank, dp, pp, tp,
        min(ts) FILTER (kind = 'init_distributed_begin') AS init_begin,
        max(elapsed_s) FILTER (kind = 'init_distributed_end') AS init_s,
        min(ts) FILTER (kind = 'init_distributed_end') AS init_end,
        min(ts) FILTER (kind = 'load_weight_begin' AND model_role = 'target') AS weights_begin,
        min(ts) FILTER (kind = 'load_weight_end' AND model_role = 'target') AS weights_end,
        max(elapsed_s) FILTER (kind = 'load_weight_end' AND model_role = 'target') AS weights_elapsed,
        min(ts) FILTER (kind = 'memory_pool_end' AND model_role = 'target') AS kv_end,
        min(ts) FILTER (kind = 'hicache_host_alloc') AS host_alloc_at,
        min(ts) FILTER (kind = 'cuda_graph_begin' AND model_role = 'target') AS graph_begin,
        sum(elapsed_s) FILTER (kind = 'cuda_graph_end' AND model_role = 'target') AS graph_s,
        max(ts) FILTER (kind = 'cuda_graph_end' AND model_role = 'target') AS graph_end,
        min(ts) FILTER (kind = 'load_weight_begin' AND model_role = 'draft') AS draft_begin,
        min(ts) FILTER (kind = 'cuda_graph_begin' AND model_role = 'draft') AS draft_graph_begin,
        max(elapsed_s) FILTER (kind = 'load_weight_end' AND model_role = 'draft') AS draft_weights_s,
        sum(elapsed_s) FILTER (kind = 'cuda_graph_end' AND model_role = 'draft') AS draft_graph_s,
        max(ts) FILTER (kind <> 'hicache_host_alloc') AS last_startup_event
    FROM milestones
    GROUP BY ALL
    HAVING init_begin IS NOT NULL OR weights_begin IS NOT NULL
)
SELECT
    sel.source,
    sel.ordinal AS run,
    p.rank,
    round(epoch(p.init_begin) - epoch(sel.started_at), 2) AS to_init_s,
    round(coalesce(p.init_s, epoch(p.init_end) - epoch(p.init_begin)), 2) AS init_s,
    round(coalesce(p.weights_elapsed, epoch(p.weights_end) - epoch(p.weights_begin)), 2) AS weights_s,
    round(epoch(p.kv_end) - epoch(p.weights_end), 2) AS kv_pool_s,
    round(epoch(u.server_up_at) - epoch(p.host_alloc_at), 2) AS host_cache_s,
    -- A capture that crashed counts until the run ended.
    round(coalesce(p.graph_s, CASE WHEN sel.failed_phase LIKE 'CUDA graphs%'
                                   THEN epoch(sel.ended_at) - epoch(p.graph_begin) END), 2) AS cuda_graph_s,
    round(p.draft_weights_s, 2) AS draft_weights_s,
    round(p.draft_graph_s, 2) AS draft_graph_s,
    round(epoch(sel.ready_at) - epoch(u.server_up_at), 2) AS warmup_s,
    round(epoch(sel.ready_at) - epoch(sel.started_at), 2) AS total_s,
    sel.failed_phase,
    -- Only a server that became ready waited for a rank; ranks that finished together are all slowest.
    CASE WHEN sel.ready_at IS NOT NULL THEN
        p.last_startup_event = max(p.last_startup_event) OVER (PARTITION BY sel.source_id, sel.ordinal) END AS slowest,
    -- The phases this rank went through, named by their columns, in the order the log shows them begin.
    list_transform(list_sort(list_filter([
        {'at': sel.started_at, 'phase': 'to_init_s'}, {'at': p.init_begin, 'phase': 'init_s'},
        {'at': p.weights_begin, 'phase': 'weights_s'}, {'at': p.weights_end, 'phase': 'kv_pool_s'},
        {'at': p.host_alloc_at, 'phase': 'host_cache_s'}, {'at': p.graph_begin, 'phase': 'cuda_graph_s'},
        {'at': p.draft_begin, 'phase': 'draft_weights_s'}, {'at': p.draft_graph_begin, 'phase': 'draft_graph_s'},
        {'at': u.server_up_at, 'phase': 'warmup_s'}], lambda x: x.at IS NOT NULL)), lambda x: x.phase) AS phase_order
FROM selected AS sel
JOIN per_rank AS p ON p.source_id = sel.source_id AND p.run = sel.ordinal
LEFT JOIN server_up AS u ON u.source_id = sel.source_id AND u.run = sel.ordinal
ORDER BY sel.source_id, sel.ordinal, p.dp NULLS FIRST, p.pp NULLS FIRST, p.tp NULLS FIRST;
