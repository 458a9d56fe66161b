-- The `<table>_by_run` views: each event of an SGLang log with the run (server launch) it belongs to,
-- its rank's label and the model it concerns.
--
-- A rank is named by its parallelism coordinates, in the order SGLang's prefix prints them:
-- dp, pp, attn_cp, moe_dp, tp, ep (an absent one is NULL). Rank 0 is the rank whose coordinates are all
-- 0 or absent. The model role is `draft` from a rank's second `Load weight begin` on (speculative
-- decoding loads the draft model after the target), else `target`.

-- run_lines: the lines of each run in each source, `run_source_id` and `run` naming the run as `runs` does: a
-- run's own range of its source, and the ranges of the per-rank event files of its launch (`rank_file_runs`,
-- logmine/derive/rank_files.py), whose lines are in no run of their own.
CREATE OR REPLACE VIEW run_lines AS
SELECT r.source_id, r.first_line_no, r.last_line_no, r.source_id AS run_source_id, r.ordinal AS run
FROM runs AS r WHERE NOT EXISTS (SELECT 1 FROM rank_file_runs AS f WHERE f.source_id = r.source_id)
UNION ALL
SELECT source_id, first_line_no, last_line_no, run_source_id, run FROM rank_file_runs;

-- draft_starts: the line where each rank of a run starts loading its draft model.
CREATE OR REPLACE VIEW draft_starts AS
SELECT source_id, run, dp, pp, attn_cp, moe_dp, tp, ep, line_no AS draft_from_line
FROM (
    SELECT r.run, e.* REPLACE (r.run_source_id AS source_id),
           row_number() OVER (PARTITION BY r.run_source_id, r.run, e.dp, e.pp, e.attn_cp, e.moe_dp, e.tp, e.ep
                              ORDER BY e.line_no) AS n
    FROM weight_loads AS e
    JOIN run_lines AS r ON e.source_id = r.source_id AND e.line_no BETWEEN r.first_line_no AND r.last_line_no
    WHERE e.kind = 'load_weight_begin'
)
WHERE n = 2;

-- lowest_ranks: the lowest rank (by its coordinates) that logs each run's start-up, which is rank 0 unless
-- the log is of a node other than the first (ranks 8-15 of a two-node TP=16 launch), whose figures then
-- stand for the run. Read from the start-up's small tables only.
CREATE OR REPLACE VIEW lowest_ranks AS
SELECT r.run_source_id AS source_id, r.run,
       min([coalesce(e.dp, 0), coalesce(e.pp, 0), coalesce(e.attn_cp, 0), coalesce(e.moe_dp, 0),
            coalesce(e.tp, 0), coalesce(e.ep, 0)]) AS coordinates
FROM (SELECT source_id, line_no, dp, pp, attn_cp, moe_dp, tp, ep FROM init_distributed
      UNION ALL SELECT source_id, line_no, dp, pp, attn_cp, moe_dp, tp, ep FROM weight_loads) AS e
JOIN run_lines AS r ON e.source_id = r.source_id AND e.line_no BETWEEN r.first_line_no AND r.last_line_no
GROUP BY ALL;

-- placed_by_run(event_table): the table's events with their run, rank label, whether the rank is the run's
-- first (`is_rank0`: rank 0, or the lowest rank of a log that holds no rank 0, see lowest_ranks), and the
-- line from which that rank loads its draft model (NULL without a draft). `source_id` is the run's source, as
-- in `runs`, so that every query groups a launch's events by (source_id, run) whichever file they are in;
-- `line_source_id` is the source of the event's own line (a per-rank event file's, see run_lines).
CREATE OR REPLACE MACRO placed_by_run(event_table) AS TABLE
SELECT r.run,
       concat_ws(' ', 'DP' || e.dp, 'PP' || e.pp, 'ATTN_CP' || e.attn_cp, 'MOE_DP' || e.moe_dp,
                 'TP' || e.tp, 'EP' || e.ep) AS rank,
       [coalesce(e.dp, 0), coalesce(e.pp, 0), coalesce(e.attn_cp, 0), coalesce(e.moe_dp, 0), coalesce(e.tp, 0),
        coalesce(e.ep, 0)] = coalesce(o.coordinates, [0, 0, 0, 0, 0, 0]) AS is_rank0,
       d.draft_from_line, e.* REPLACE (r.run_source_id AS source_id), e.source_id AS line_source_id
FROM query_table(event_table) AS e
JOIN run_lines AS r ON e.source_id = r.source_id AND e.line_no BETWEEN r.first_line_no AND r.last_line_no
LEFT JOIN lowest_ranks AS o ON o.source_id = r.run_source_id AND o.run = r.run
LEFT JOIN draft_starts AS d
    ON d.source_id = r.run_source_id AND d.run = r.run
   AND e.dp IS NOT DISTINCT FROM d.dp AND e.pp IS NOT DISTINCT FROM d.pp
   AND e.attn_cp IS NOT DISTINCT FROM d.attn_cp AND e.moe_dp IS NOT DISTINCT FROM d.moe_dp
   AND e.tp IS NOT DISTINCT FROM d.tp AND e.ep IS NOT DISTINCT FROM d.ep;

-- events_by_run(event_table): what every `<table>_by_run` view shows (one is made per event table,
-- `CREATE VIEW <table>_by_run AS SELECT * FROM events_by_run('<table>')`, except kv_cache's below).
CREATE OR REPLACE MACRO events_by_run(event_table) AS TABLE
SELECT run, rank, is_rank0,
       CASE WHEN draft_from_line IS NOT NULL AND line_no >= draft_from_line THEN 'draft' ELSE 'target' END
           AS model_role,
       * EXCLUDE (run, rank, is_rank0, draft_from_line)
FROM placed_by_run(event_table);

-- kv_cache_by_run: a KV pool is the draft's only once the target's pool is complete, since some drafts
-- (DFLASH) load their weights before the target's pools are sized. The target's pool is complete at its
-- first KV allocation outside a sliding-window group (which logs two allocations, then
-- `SWAKVPool mem usage`).
CREATE OR REPLACE VIEW kv_cache_by_run AS
WITH placed AS (
    SELECT *,
        max(line_no) FILTER (kind = 'swa_pool_split') OVER upto AS last_split,
        max(line_no) FILTER (kind = 'swa_pool_usage') OVER upto AS last_usage
    FROM placed_by_run('kv_cache')
    WINDOW upto AS (PARTITION BY source_id, run, dp, pp, attn_cp, moe_dp, tp, ep
                    ORDER BY line_no ROWS UNBOUNDED PRECEDING)
), pools AS (
    SELECT *, min(line_no) FILTER (kind = 'swa_pool_usage' OR (kind = 'kv_cache_allocated' AND
                                   (last_split IS NULL OR last_usage > last_split)))
                  OVER (PARTITION BY source_id, run, dp, pp, attn_cp, moe_dp, tp, ep) AS target_pool_end
    FROM placed
)
SELECT run, rank, is_rank0,
       CASE WHEN draft_from_line IS NOT NULL AND line_no >= draft_from_line AND line_no > target_pool_end
            THEN 'draft' ELSE 'target' END AS model_role,
       * EXCLUDE (run, rank, is_rank0, draft_from_line, last_split, last_usage, target_pool_end)
FROM pools;
