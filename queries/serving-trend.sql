-- serving-trend: what each run served over time, one row per run and time bucket: decode
-- throughput, KV token usage, queued and running requests, prefix-cache hit share, retractions.
--
-- Buckets are $bucket_s seconds of the journal's local time; when NULL, the smallest whole number of
-- minutes that gives the longest run at most 300 buckets (a month-long run still draws), in `bucket_s`.
-- Throughput is the mean of SGLang's per-interval `gen throughput (token/s)` over rank 0's decode lines
-- in the bucket; token usage and queue are their peaks; `cache_hit_share` is cached / (cached + new)
-- prefill tokens of rank 0 (the scheduler prints batch lines once per run, whatever model_role the
-- draft model gives them). A retraction is printed by every rank at once, so rank 0's lines are counted.
-- `status_running`/`status_queued` are the peaks of SGLang's `scheduler.status` events in the bucket
-- (the counts of running and queued request ids; each rank writes its own, the largest is shown).
-- Columns: source, run, bucket, decode_tok_s, token_usage, queue_req, cache_hit_share
-- Parameters: $source (display name or path, NULL for all), $run (ordinal, NULL for all), $bucket_s.
WITH selected AS (
    SELECT r.source_id, r.ordinal AS run, s.display AS source
    FROM runs AS r JOIN sources AS s USING (source_id)
    WHERE chosen_source(s.display, s.path, $source)
      AND chosen(r.ordinal, $run)
),
spans AS (SELECT epoch(max(ts)) - epoch(min(ts)) AS span_s FROM decode_batches_by_run GROUP BY source_id, run),
width AS (SELECT to_seconds(coalesce($bucket_s, 60 * greatest(1, ceil(max(span_s) / 300 / 60)))) AS w FROM spans),
decode AS (
    SELECT source_id, run, time_bucket((SELECT w FROM width), ts) AS bucket,
           avg(gen_throughput_tok_s) AS decode_tok_s, max(token_usage) AS token_usage,
           max(queue_req) AS queue_req, max(running_req) AS running_req
    FROM decode_batches_by_run WHERE is_rank0 GROUP BY ALL
),
prefill AS (
    SELECT source_id, run, time_bucket((SELECT w FROM width), ts) AS bucket,
           sum(cached_tokens) / nullif(sum(cached_tokens) + sum(new_tokens), 0) AS cache_hit_share,
           max(queue_req) AS queue_req
    FROM prefill_batches_by_run WHERE is_rank0 GROUP BY ALL
),
retracted AS (
    SELECT source_id, run, time_bucket((SELECT w FROM width), ts) AS bucket, count(*) AS retractions
    FROM retractions_by_run WHERE is_rank0 GROUP BY ALL
),
status AS (
    SELECT source_id, run, time_bucket((SELECT w FROM width), ts) AS bucket,
           max(running_reqs) AS status_running, max(queued_reqs) AS status_queued
    FROM json_events_by_run WHERE event = 'scheduler.status' GROUP BY ALL
)
SELECT sel.source, sel.run, b.bucket, epoch((SELECT w FROM width))::INTEGER AS bucket_s,
       round(d.decode_tok_s, 2) AS decode_tok_s,
       d.token_usage,
       greatest(d.queue_req, p.queue_req) AS queue_req,
       d.running_req,
       round(p.cache_hit_share, 4) AS cache_hit_share,
       coalesce(x.retractions, 0) AS retractions,
       st.status_running, st.status_queued
FROM selected AS sel
JOIN (SELECT source_id, run, bucket FROM decode UNION SELECT source_id, run, bucket FROM prefill
      UNION SELECT source_id, run, bucket FROM retracted UNION SELECT source_id, run, bucket FROM status) AS b
  ON b.source_id = sel.source_id AND b.run = sel.run
LEFT JOIN decode AS d ON d.source_id = b.source_id AND d.run = b.run AND d.bucket = b.bucket
LEFT JOIN prefill AS p ON p.source_id = b.source_id AND p.run = b.run AND p.bucket = b.bucket
LEFT JOIN retracted AS x ON x.source_id = b.source_id AND x.run = b.run AND x.bucket = b.bucket
LEFT JOIN status AS st ON st.source_id = b.source_id AND st.run = b.run AND st.bucket = b.bucket
ORDER BY sel.source_id, sel.run, b.bucket;
