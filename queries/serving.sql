-- serving: what each run served: batches, HTTP requests by status, KV usage, prefix-cache hits,
-- decode throughput percentiles, speculative acceptance and retractions.
--
-- `cache_hit_share` is cached / (cached + new) prefill tokens; throughput figures are SGLang's own
-- per-interval `gen throughput (token/s)`, so percentiles are over log intervals, not requests.
-- `requests_received`/`requests_finished` and the latencies count SGLang's JSON request events
-- (`--log-requests-format json`) of served requests; the requests SGLang sends itself are counted apart:
-- `warmup_requests` (its warmup text, or finished before the run was ready) and `health_checks`
-- (`/health_generate`'s `HEALTH_CHECK_` requests).
-- Columns: source, run, http_requests, cache_hit_share, decode_tok_s_p50
-- Parameters: $source (display name or path, NULL for all), $run (ordinal, NULL for all).
WITH selected AS (
    SELECT r.source_id, r.ordinal AS run, s.display AS source
    FROM runs AS r JOIN sources AS s USING (source_id)
    WHERE chosen_source(s.display, s.path, $source)
      AND chosen(r.ordinal, $run)
),
-- The batch and access tables are joined to runs directly: their `_by_run` views also label ranks and
-- model roles, which these totals do not need (0.37 -> 0.2 s on a 2M-line journal).
prefill AS (
    SELECT e.source_id, r.ordinal AS run, count(*) AS prefill_batches,
           sum(new_tokens)::BIGINT AS prefill_new_tokens,
           sum(cached_tokens)::BIGINT AS prefill_cached_tokens,
           round(sum(cached_tokens) / nullif(sum(cached_tokens) + sum(new_tokens), 0), 4) AS cache_hit_share
    FROM prefill_batches AS e
    JOIN runs AS r ON e.source_id = r.source_id AND e.line_no BETWEEN r.first_line_no AND r.last_line_no
    GROUP BY ALL
),
decode AS (
    SELECT e.source_id, r.ordinal AS run, count(*) AS decode_batches, max(token_usage) AS token_usage_peak,
           max(running_req) AS running_req_peak, max(queue_req) AS queue_req_peak,
           round(quantile_cont(gen_throughput_tok_s, 0.5), 2) AS decode_tok_s_p50,
           round(quantile_cont(gen_throughput_tok_s, 0.9), 2) AS decode_tok_s_p90,
           round(quantile_cont(gen_throughput_tok_s, 0.99), 2) AS decode_tok_s_p99,
           round(avg(accept_len), 3) AS accept_len_mean
    FROM decode_batches AS e
    JOIN runs AS r ON e.source_id = r.source_id AND e.line_no BETWEEN r.first_line_no AND r.last_line_no
    GROUP BY ALL
),
http AS (
    SELECT source_id, run, sum(n)::BIGINT AS http_requests, coalesce(sum(n) FILTER (status >= 400), 0)::BIGINT AS http_errors,
           to_json(map(list(method || ' ' || route || ' ' || status ORDER BY method, route, status),
                               list(n ORDER BY method, route, status))) AS requests_by_path_status
    FROM (SELECT e.source_id, r.ordinal AS run, method, split_part(path, '?', 1) AS route, status,
                 count(*) AS n
          FROM http_requests AS e
          JOIN runs AS r ON e.source_id = r.source_id AND e.line_no BETWEEN r.first_line_no AND r.last_line_no
          GROUP BY ALL)
    GROUP BY source_id, run
),
request_events AS (  -- from the run's own log or its launch's per-rank event files
    -- A finished request has the purpose its received one showed (only the received event has the text that
    -- tells the warmup), where no ready line dates the warmup (per-rank files alone).
    SELECT e.source_id, e.run, e.event, e.e2e_latency_s, e.completion_tokens,
           CASE WHEN e.purpose = 'request' AND r.ready_at IS NOT NULL AND e.ts <= r.ready_at THEN 'warmup'
                WHEN e.purpose = 'request' AND e.rid IS NOT NULL
                    THEN coalesce(max(CASE WHEN e.purpose <> 'request' THEN e.purpose END)
                                      OVER (PARTITION BY e.source_id, e.run, e.rid), 'request')
                ELSE e.purpose END AS purpose
    FROM json_events_by_run AS e
    JOIN runs AS r ON r.source_id = e.source_id AND r.ordinal = e.run
    WHERE e.event IN ('request.received', 'request.finished')
),
requests AS (
    SELECT source_id, run,
           count(*) FILTER (event = 'request.received' AND purpose = 'request') AS requests_received,
           count(*) FILTER (event = 'request.finished' AND purpose = 'request') AS requests_finished,
           count(*) FILTER (event = 'request.finished' AND purpose = 'warmup') AS warmup_requests,
           count(*) FILTER (event = 'request.finished' AND purpose = 'health_check') AS health_checks,
           round(quantile_cont(e2e_latency_s, 0.5) FILTER (event = 'request.finished' AND purpose = 'request'), 3)
               AS e2e_latency_s_p50,
           round(quantile_cont(e2e_latency_s, 0.9) FILTER (event = 'request.finished' AND purpose = 'request'), 3)
               AS e2e_latency_s_p90,
           sum(completion_tokens) FILTER (event = 'request.finished' AND purpose = 'request')::BIGINT
               AS completion_tokens
    FROM request_events
    GROUP BY ALL
),
retracted AS (
    SELECT source_id, run,
           count(DISTINCT (date_trunc('second', ts), retracted_reqs, new_token_ratio_before)) AS retractions
    FROM retractions_by_run GROUP BY ALL
)
SELECT sel.source, sel.run, p.prefill_batches, d.decode_batches, h.http_requests, h.http_errors,
       p.prefill_new_tokens, p.prefill_cached_tokens, p.cache_hit_share, d.token_usage_peak,
       d.running_req_peak, d.queue_req_peak, d.decode_tok_s_p50, d.decode_tok_s_p90, d.decode_tok_s_p99,
       d.accept_len_mean, coalesce(x.retractions, 0) AS retractions, h.requests_by_path_status,
       q.requests_received, q.requests_finished, q.warmup_requests, q.health_checks, q.e2e_latency_s_p50,
       q.e2e_latency_s_p90, q.completion_tokens
FROM selected AS sel
LEFT JOIN prefill AS p USING (source_id, run)
LEFT JOIN decode AS d USING (source_id, run)
LEFT JOIN http AS h USING (source_id, run)
LEFT JOIN retracted AS x USING (source_id, run)
LEFT JOIN requests AS q USING (source_id, run)
ORDER BY sel.source_id, sel.run;
