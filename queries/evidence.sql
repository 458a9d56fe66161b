-- evidence: the log line behind each key figure of each run, so a report can cite `source:line`.
--
-- `figure` is one of started (systemd's Started line, else the line the start time was read from), server_args, init
-- (torch distributed ready), weights_begin (memory before load), weights (target weights loaded),
-- draft_weights, kv_pool (the target KV cache allocation), cuda_graphs and draft_cuda_graphs (the last
-- capture of each model), hicache (the host pool allocation), host_memory_short (HiCache asked for
-- more host memory than was free), capacity (max_total_num_tokens and the GPU memory left), retraction
-- (the first KV-pressure retraction) and ready (the server is ready to roll). Per-rank figures cite
-- each rank's own line; `rank` is '' for lines without a rank tag.
-- Columns: source, run, figure, rank, evidence, text
-- Parameters: $source (display name or path, NULL for all), $run (ordinal, NULL for all).
WITH selected AS (
    SELECT r.*, s.display AS source FROM runs AS r JOIN sources AS s USING (source_id)
    WHERE chosen_source(s.display, s.path, $source)
      AND chosen(r.ordinal, $run)
),
cited AS (
    SELECT source_id, run, rank, 'started' AS figure, min(line_no) AS line_no
    FROM systemd_by_run WHERE kind = 'systemd_started' GROUP BY ALL
    UNION ALL SELECT source_id, run, rank, 'server_args', min(line_no) FROM server_args_by_run GROUP BY ALL
    UNION ALL SELECT source_id, run, rank, 'init', min(line_no) FROM init_distributed_by_run
              WHERE kind = 'init_distributed_end' GROUP BY ALL
    UNION ALL SELECT source_id, run, rank, CASE WHEN kind = 'load_weight_begin' THEN 'weights_begin'
                                                WHEN model_role = 'draft' THEN 'draft_weights' ELSE 'weights' END,
                     min(line_no)
              FROM weight_loads_by_run WHERE kind IN ('load_weight_begin', 'load_weight_end')
                AND NOT (kind = 'load_weight_begin' AND model_role = 'draft') GROUP BY ALL
    UNION ALL SELECT source_id, run, rank, 'kv_pool', min(line_no) FROM kv_cache_by_run
              WHERE kind = 'kv_cache_allocated' AND model_role = 'target' GROUP BY ALL
    UNION ALL SELECT source_id, run, rank,
                     CASE WHEN coalesce(role, model_role) = 'draft' THEN 'draft_cuda_graphs' ELSE 'cuda_graphs' END,
                     max(line_no)
              FROM cuda_graphs_by_run WHERE kind = 'cuda_graph_end' GROUP BY ALL
    UNION ALL SELECT source_id, run, rank, CASE WHEN kind = 'hicache_host_alloc' THEN 'hicache' ELSE kind END,
                     min(line_no)
              FROM host_cache_by_run WHERE kind IN ('hicache_host_alloc', 'host_memory_short') GROUP BY ALL
    UNION ALL SELECT source_id, run, rank, 'capacity', max(line_no) FROM capacity_by_run GROUP BY ALL
    UNION ALL SELECT source_id, run, rank, 'retraction', min(line_no) FROM retractions_by_run
              WHERE is_rank0 GROUP BY ALL
    UNION ALL SELECT source_id, run, rank, 'ready', min(line_no) FROM server_events_by_run
              WHERE kind = 'server_ready' GROUP BY ALL
)
SELECT
    sel.source,
    sel.ordinal AS run,
    c.figure,
    c.rank,
    sel.source || ':' || c.line_no AS evidence,
    c.line_no,
    l.message AS text
FROM selected AS sel
JOIN cited AS c ON c.source_id = sel.source_id AND c.run = sel.ordinal
JOIN lines AS l ON l.source_id = c.source_id AND l.line_no = c.line_no
UNION ALL
-- A run without systemd's Started line is cited by the line its start time was read from (its first line
-- with a time of its own), else its first line.
SELECT sel.source, sel.ordinal, 'started', '', sel.source || ':' || coalesce(sel.start_line_no, sel.first_line_no),
       coalesce(sel.start_line_no, sel.first_line_no), l.message
FROM selected AS sel
JOIN lines AS l ON l.source_id = sel.source_id AND l.line_no = coalesce(sel.start_line_no, sel.first_line_no)
WHERE NOT EXISTS (SELECT 1 FROM cited AS c WHERE c.source_id = sel.source_id AND c.run = sel.ordinal
                  AND c.figure = 'started')
ORDER BY source, run, figure, rank, line_no;
