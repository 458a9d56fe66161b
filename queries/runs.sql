-- runs: one row per server run (one launch and its worker processes): when it started, became
-- ready and ended, why it ended, what it loaded, what memory it used and how much it served.
--
-- Per-rank figures are those of the lowest rank the log shows (TP0, the untagged rank of a TP=1 server,
-- or TP8 on a second node's log, where rank 0 is on another machine); `host_cache_gb_total` sums every
-- rank. `ranks` counts the ranks seen in the log (else the launch's arguments, else its per-rank event
-- files); `tp_size`, `dp_size`, `pp_size`, `ep_size`, `nnodes` and `node_rank` are the launch's arguments,
-- so a log of one node of several says so.
-- `ready_from` says what `ready_at` was read from: SGLang's ready line, or (a second node, a decode
-- worker) the first served batch or request. `cause` is what failed first in a run that died (the
-- exception's last line or a library's fatal line), at `cause_line`, in `cause_family`
-- (parsers/failure_families.py); `consequences` counts the signs that followed it (a controller's
-- EOFError, a SIGQUIT from a child, other ranks' tracebacks). `failed_phase` is the start-up phase a run
-- that never became ready died in (`weights`, `KV pool`, `CUDA graphs at bs 8`, `HiCache host pool`,
-- ...). `weights_*` and `kv_*` are the target model's; the draft model (speculative decoding) is the
-- rank's second weight load. Memory in GiB (SGLang prints "GB" for GiB on the
-- device); HiCache host memory in decimal GB as SGLang prints it. `untimed_markers` counts the
-- run's start, stop and exit lines with no time of their own (`journalctl -o cat` drops systemd's):
-- where it is not 0, a start or end that only such a line shows is missing.
-- Columns: source, ordinal as run, started_at as started, load_seconds as ready after s, kv_tokens as KV tokens,
--     kv_gib_per_rank as KV GiB, host_cache_gb_per_rank as host GB, end_reason as end, end_detail as why
-- Once: source
-- Parameters: $source (display name or path, NULL for all), $run (ordinal, NULL for all).
WITH selected_runs AS (
    SELECT r.*, s.display AS source
    FROM runs AS r
    JOIN sources AS s USING (source_id)
    WHERE chosen_source(s.display, s.path, $source)
      AND chosen(r.ordinal, $run)
),
rank0_weights AS (
    SELECT source_id, run,
           max(elapsed_s) FILTER (model_role = 'target' AND kind = 'load_weight_end') AS weights_elapsed_s,
           max(ts) FILTER (model_role = 'target' AND kind = 'load_weight_begin') AS weights_begin,
           max(ts) FILTER (model_role = 'target' AND kind = 'load_weight_end') AS weights_end,
           max(mem_usage_gib) FILTER (model_role = 'target' AND kind = 'load_weight_end') AS weights_gib,
           max(avail_mem_gib) FILTER (model_role = 'target' AND kind = 'load_weight_end') AS avail_after_gib,
           max(mem_usage_gib) FILTER (model_role = 'draft' AND kind = 'load_weight_end') AS draft_weights_gib
    FROM weight_loads_by_run
    WHERE is_rank0
    GROUP BY ALL
),
rank0_kv AS (
    SELECT source_id, run, max(tokens) AS kv_tokens, sum(kv_gib) AS kv_gib
    FROM kv_pools
    WHERE is_rank0
    GROUP BY ALL
),
ranks AS (
    SELECT source_id, run, count(DISTINCT rank) AS ranks FROM start_ranks GROUP BY ALL
),
rank_files AS (  -- a launch whose JSON events are in per-rank files: one file per rank
    SELECT run_source_id AS source_id, run, count(DISTINCT rank) AS ranks
    FROM rank_file_runs
    GROUP BY ALL
),
capacity AS (
    SELECT source_id, run, arg_max(available_gpu_mem_gib, line_no) AS available_gpu_mem_gib,
           arg_max(max_total_num_tokens, line_no) AS max_total_num_tokens
    FROM capacity_by_run
    GROUP BY ALL
),
host_cache AS (
    SELECT source_id, run,
           max(host_gb) FILTER (is_rank0) AS host_cache_gb_per_rank,
           sum(host_gb) AS host_cache_gb_total
    FROM host_cache_by_run
    WHERE kind = 'hicache_host_alloc'
    GROUP BY ALL
),
retractions AS (
    -- One retraction is printed by every rank at once: count distinct (second, figures).
    SELECT source_id, run, count(DISTINCT (date_trunc('second', ts), retracted_reqs, new_token_ratio_before,
                                           new_token_ratio_after)) AS retractions
    FROM retractions_by_run
    GROUP BY ALL
),
run_errors AS (
    SELECT source_id, run,
           list({'kind': CASE WHEN error_kind IN ('oom', 'host_memory') THEN error_kind ELSE 'exception' END,
                 'origin': origin, 'rank': rank, 'last_line': last_line, 'line': first_line_no}
                ORDER BY first_line_no) AS errors
    FROM errors_by_run
    GROUP BY ALL
)
SELECT
    r.source,
    r.ordinal,
    r.pid,
    r.started_at,
    r.ready_at,
    r.ended_at,
    r.end_reason,
    r.end_detail,
    r.ready_from,
    r.cause,
    r.cause_family,
    r.source || ':' || r.cause_line_no AS cause_line,
    r.consequences,
    r.failed_phase,
    round(epoch(r.ready_at) - epoch(r.started_at), 2) AS load_seconds,
    round(coalesce(w.weights_elapsed_s, epoch(w.weights_end) - epoch(w.weights_begin)), 2) AS weights_seconds,
    coalesce(k.ranks, TRY_CAST(json_extract(cfg.args, '$.tp_size') AS INTEGER)
                      * TRY_CAST(json_extract(cfg.args, '$.pp_size') AS INTEGER), f.ranks, 0) AS ranks,
    TRY_CAST(json_extract(cfg.args, '$.tp_size') AS INTEGER) AS tp_size,
    TRY_CAST(json_extract(cfg.args, '$.dp_size') AS INTEGER) AS dp_size,
    TRY_CAST(json_extract(cfg.args, '$.pp_size') AS INTEGER) AS pp_size,
    TRY_CAST(json_extract(cfg.args, '$.ep_size') AS INTEGER) AS ep_size,
    TRY_CAST(json_extract(cfg.args, '$.nnodes') AS INTEGER) AS nnodes,
    TRY_CAST(json_extract(cfg.args, '$.node_rank') AS INTEGER) AS node_rank,
    round(w.weights_gib, 2) AS weights_gib_per_rank,
    round(w.avail_after_gib, 2) AS avail_after_weights_gib,
    kv.kv_tokens,
    round(kv.kv_gib, 2) AS kv_gib_per_rank,
    round(w.draft_weights_gib, 2) AS draft_weights_gib_per_rank,
    round(c.available_gpu_mem_gib, 2) AS available_gpu_mem_gib,
    round(h.host_cache_gb_per_rank, 2) AS host_cache_gb_per_rank,
    round(h.host_cache_gb_total, 2) AS host_cache_gb_total,
    r.prefill_batches,
    r.decode_batches,
    r.http_requests,
    coalesce(x.retractions, 0) AS retractions,
    coalesce(e.errors, []) AS errors,
    r.untimed_markers,
    r.source || ':' || r.start_line_no AS start_evidence,
    cfg.args AS config
FROM selected_runs AS r
LEFT JOIN rank0_weights AS w ON w.source_id = r.source_id AND w.run = r.ordinal
LEFT JOIN rank0_kv AS kv ON kv.source_id = r.source_id AND kv.run = r.ordinal
LEFT JOIN ranks AS k ON k.source_id = r.source_id AND k.run = r.ordinal
LEFT JOIN rank_files AS f ON f.source_id = r.source_id AND f.run = r.ordinal
LEFT JOIN capacity AS c ON c.source_id = r.source_id AND c.run = r.ordinal
LEFT JOIN host_cache AS h ON h.source_id = r.source_id AND h.run = r.ordinal
LEFT JOIN retractions AS x ON x.source_id = r.source_id AND x.run = r.ordinal
LEFT JOIN run_errors AS e ON e.source_id = r.source_id AND e.run = r.ordinal
LEFT JOIN configs AS cfg ON cfg.config_id = r.config_id
ORDER BY r.source_id, r.ordinal;
