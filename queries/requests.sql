-- requests: each thing the user asked the agent, and what the agent did until the next request:
-- tool calls, commands per host, files written, configuration changes and the runs they started.
-- Columns: message_index, asked_at_utc, request, tool_calls
-- Parameters: $session (session id, NULL for all).
WITH user_messages AS (
    SELECT session_id, idx, id, created_at, text,
           lead(idx) OVER (PARTITION BY session_id ORDER BY idx) AS next_idx
    FROM messages
    WHERE role = 'user' AND chosen(session_id, $session)
)
SELECT
    u.session_id,
    u.idx AS message_index,
    u.id AS message,
    u.created_at AS asked_at_utc,
    left(u.text, 300) AS request,
    (SELECT count(*) FROM tool_calls AS t WHERE t.session_id = u.session_id
        AND t.message_index > u.idx AND t.message_index < coalesce(u.next_idx, 2147483647)) AS tool_calls,
    (SELECT string_agg(DISTINCT coalesce(c.host, 'local'), ', ' ORDER BY coalesce(c.host, 'local')) FROM commands AS c WHERE c.session_id = u.session_id
        AND c.message_index > u.idx AND c.message_index < coalesce(u.next_idx, 2147483647)) AS hosts,
    (SELECT string_agg(DISTINCT w.path, ', ' ORDER BY w.path) FROM file_writes AS w WHERE w.session_id = u.session_id
        AND w.message_index > u.idx AND w.message_index < coalesce(u.next_idx, 2147483647)) AS files_written,
    (SELECT to_json(list(json_object('changed', l.changed, 'run', l.run, 'message_index', l.message_index)
                          ORDER BY l.message_index, l.run))
     FROM links AS l WHERE l.session_id = u.session_id
        AND l.message_index > u.idx AND l.message_index < coalesce(u.next_idx, 2147483647)) AS config_changes
FROM user_messages AS u
ORDER BY u.session_id, u.idx;
