-- Builds the `decisions` table (logmine.knowledge runs it at each ingest): each user request, in the
-- user's words (consecutive user messages joined), with what the assistant did until the next request (tool calls, unit-file writes,
-- restarts), the configuration changes those produced (`links`) and the last run they started, with
-- that run's measured effect. A request is a `question` when it asks ("?", a question word, or an
-- auxiliary first: "can we ..."), else a `directive`.
INSERT INTO decisions
WITH turns AS (  -- user messages with no assistant message between them are one request
    SELECT session_id, id, idx, role, text,
           count(*) FILTER (role <> 'user') OVER (PARTITION BY session_id ORDER BY idx) AS turn
    FROM messages WHERE role IN ('user', 'assistant')
),
grouped AS (
    SELECT session_id, turn, arg_min(id, idx) AS id, min(idx) AS idx,
           string_agg(trim(text), chr(10) ORDER BY idx) AS text
    FROM turns WHERE role = 'user' AND trim(coalesce(text, '')) <> '' GROUP BY ALL
),
requests AS (
    SELECT session_id, id, idx, text,
           coalesce(lead(idx) OVER (PARTITION BY session_id ORDER BY idx), 2147483647) AS next_idx
    FROM grouped
),
answers AS (  -- the assistant's first words after the request: usually what it decided and why
    SELECT r.session_id, r.idx, arg_min(left(trim(m.text), 500), m.idx) AS answer
    FROM requests AS r JOIN messages AS m ON m.session_id = r.session_id AND m.role = 'assistant'
         AND m.idx > r.idx AND m.idx < r.next_idx AND trim(coalesce(m.text, '')) <> ''
    GROUP BY ALL
),
calls AS (
    SELECT r.session_id, r.idx, count(*) AS n, max(t.message_index) AS last_index,
           to_json(list(json_object('message_index', t.message_index, 'tool', t.tool, 'what',
               left(split_part(coalesce(json_extract_string(t.input, '$.command'),
                                        json_extract_string(t.input, '$.filePath'),
                                        json_extract_string(t.input, '$.file_path'),
                                        json_extract_string(t.input, '$.description'), ''), chr(10), 1), 160))
               ORDER BY t.message_index, t.started_at)) AS actions
    FROM requests AS r JOIN tool_calls AS t ON t.session_id = r.session_id
         AND t.message_index > r.idx AND t.message_index < r.next_idx
    GROUP BY ALL
),
unit_writes AS (
    SELECT r.session_id, r.idx, string_agg(DISTINCT c.path, ', ' ORDER BY c.path) AS paths
    FROM requests AS r JOIN config_snapshots AS c ON c.session_id = r.session_id AND c.origin = 'unit_file'
         AND c.message_index > r.idx AND c.message_index < r.next_idx
    GROUP BY ALL
),
restarts AS (
    SELECT session_id, idx, string_agg(DISTINCT restart, ' | ' ORDER BY restart) AS commands
    FROM (SELECT r.session_id, r.idx, regexp_extract(c.command, '(systemctl\s+(--?\S+\s+)*(re)?start\s+[\w@.-]+|docker\s+(re)?start\s+\S+|\bkill\s+(-\S+\s+)*\d+)') AS restart
          FROM requests AS r JOIN commands AS c ON c.session_id = r.session_id
               AND c.message_index > r.idx AND c.message_index < r.next_idx)
    WHERE restart <> ''
    GROUP BY ALL
),
changes AS (
    SELECT r.session_id, r.idx,
           to_json(list(json_object('message_index', l.message_index, 'changed', l.changed, 'run', l.run)
               ORDER BY l.message_index)) AS changes,
           arg_max(l.source_id, l.message_index) AS source_id, arg_max(l.run, l.message_index) AS run
    FROM requests AS r JOIN links AS l ON l.session_id = r.session_id
         AND l.message_index > r.idx AND l.message_index < r.next_idx
    GROUP BY ALL
)
SELECT q.session_id, q.id, q.idx,
       CASE WHEN q.text LIKE '%?%' OR regexp_matches(lower(trim(q.text)),
            '^(can|could|should|would|is|are|do|does|did|will|any)\b|\b(what|why|how|which|where|when|who)\b')
            THEN 'question' ELSE 'directive' END,
       q.text, a.answer, c.last_index, coalesce(c.n, 0), c.actions, w.paths, s.commands, ch.changes,
       ch.source_id, ch.run, r.end_reason,
       epoch(r.ready_at) - epoch(r.started_at),
       CASE WHEN r.ordinal IS NOT NULL THEN json_object(
           'started_at', r.started_at, 'ready_at', r.ready_at, 'end_reason', r.end_reason,
           'end_detail', r.end_detail,
           'errors', (SELECT to_json(list(DISTINCT e.kind ORDER BY e.kind)) FROM errors AS e WHERE e.source_id = r.source_id
                      AND e.first_line_no BETWEEN r.first_line_no AND r.last_line_no),
           'host_cache_gb_total', (SELECT round(sum(h.host_gb), 2) FROM host_cache_by_run AS h WHERE h.source_id = r.source_id
                      AND h.run = r.ordinal AND h.kind = 'hicache_host_alloc'),
           'kv_tokens', (SELECT max(k.tokens) FROM kv_pools AS k WHERE k.source_id = r.source_id
                      AND k.run = r.ordinal))
       END
FROM requests AS q
LEFT JOIN answers AS a ON a.session_id = q.session_id AND a.idx = q.idx
LEFT JOIN calls AS c ON c.session_id = q.session_id AND c.idx = q.idx
LEFT JOIN unit_writes AS w ON w.session_id = q.session_id AND w.idx = q.idx
LEFT JOIN restarts AS s ON s.session_id = q.session_id AND s.idx = q.idx
LEFT JOIN changes AS ch ON ch.session_id = q.session_id AND ch.idx = q.idx
LEFT JOIN runs AS r ON r.source_id = ch.source_id AND r.ordinal = ch.run
ORDER BY q.session_id, q.idx;
