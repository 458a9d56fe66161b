-- kv_pools: each run's target KV pool, per rank, said here once for every query that speaks of it (runs,
-- memory-budget, measurements, decisions). `tokens` is the pool's size from its allocation line or, where
-- the log shows only the scheduler's capacity line (`max_total_num_tokens`, as older releases and some
-- launches print), from that line; `tokens_line_no` is the line it was read from. `kv_gib` is the pool's
-- size (K and V, every pool of a hybrid model) from the allocation lines.
CREATE OR REPLACE VIEW kv_pools AS
WITH allocated AS (
    SELECT source_id, run, rank, bool_or(is_rank0) AS is_rank0, max(tokens) AS tokens,
           arg_max(line_no, tokens) AS line_no, sum(coalesce(kv_size_gib, k_size_gib + v_size_gib)) AS kv_gib
    FROM kv_cache_by_run WHERE kind = 'kv_cache_allocated' AND model_role = 'target'
    GROUP BY ALL
),
capacity AS (
    SELECT source_id, run, rank, bool_or(is_rank0) AS is_rank0,
           arg_max(max_total_num_tokens, line_no) AS tokens, max(line_no) AS line_no
    FROM capacity_by_run WHERE max_total_num_tokens IS NOT NULL
    GROUP BY ALL
)
SELECT source_id, run, rank, coalesce(a.is_rank0, c.is_rank0) AS is_rank0,
       coalesce(a.tokens, c.tokens) AS tokens,
       CASE WHEN a.tokens IS NOT NULL THEN a.line_no ELSE c.line_no END AS tokens_line_no,
       a.kv_gib
FROM allocated AS a
FULL JOIN capacity AS c USING (source_id, run, rank);
