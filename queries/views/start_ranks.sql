-- start_ranks: every rank that logged a start-up line of a run, and which (`init`, `weights` or `kv`), said
-- here once for the queries that count or list a launch's ranks (runs, memory-budget). Releases differ in
-- which lines every rank prints: v0.5.2 logs `Init torch distributed` and the weights on TP0 only, and the KV
-- pool on each rank.
CREATE OR REPLACE VIEW start_ranks AS
SELECT DISTINCT source_id, run, rank, dp, pp, tp, 'init' AS what
FROM init_distributed_by_run WHERE kind = 'init_distributed_begin'
UNION
SELECT DISTINCT source_id, run, rank, dp, pp, tp, 'weights' FROM weight_loads_by_run
UNION
SELECT DISTINCT source_id, run, rank, dp, pp, tp, 'kv'
FROM kv_cache_by_run WHERE kind IN ('kv_cache_allocated', 'mamba_cache_allocated');
