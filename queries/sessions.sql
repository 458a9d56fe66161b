-- sessions: each agent session: its format, size, tools used, unit files written and how many
-- server log lines the agent saw in tool outputs.
--
-- Tokens are summed the way each format requires (opencode step-finish parts, Claude Code once
-- per message id, Codex deltas of the running total); `input_tokens` excludes cached input.
-- Columns: id, format, messages, n_tool_calls
-- Parameters: $session (session id, NULL for all).
WITH calls AS (
    SELECT session_id, to_json(map(list(tool ORDER BY tool), list(n ORDER BY tool))) AS tool_calls, sum(n)::BIGINT AS n_tool_calls
    FROM (SELECT session_id, tool, count(*) AS n FROM tool_calls GROUP BY ALL)
    GROUP BY session_id
),
messages AS (
    SELECT session_id, count(*) AS messages, count(*) FILTER (role = 'user') AS user_messages,
           sum(input_tokens)::BIGINT AS input_tokens, sum(output_tokens)::BIGINT AS output_tokens,
           sum(reasoning_tokens)::BIGINT AS reasoning_tokens, sum(cache_read_tokens)::BIGINT AS cache_read_tokens,
           sum(cache_write_tokens)::BIGINT AS cache_write_tokens, round(sum(cost_usd), 6) AS cost_usd,
           min(created_at) AS first_message_at, max(coalesce(completed_at, created_at)) AS last_message_at
    FROM messages GROUP BY ALL
),
unit_writes AS (
    SELECT session_id, count(*) AS unit_file_writes FROM file_writes
    WHERE path LIKE '%.service' OR content LIKE '%[Service]%' GROUP BY ALL
),
embedded AS (
    SELECT session_id, count(*) AS embedded_journal_lines FROM embedded_lines GROUP BY ALL
)
SELECT
    s.id,
    s.format,
    s.parent_id,
    s.title,
    coalesce(m.messages, 0) AS messages,
    coalesce(m.user_messages, 0) AS user_messages,
    coalesce(c.tool_calls, '{}'::JSON) AS tool_calls,
    coalesce(c.n_tool_calls, 0) AS n_tool_calls,
    coalesce(u.unit_file_writes, 0) AS unit_file_writes,
    coalesce(e.embedded_journal_lines, 0) AS embedded_journal_lines,
    m.input_tokens, m.output_tokens, m.reasoning_tokens, m.cache_read_tokens, m.cache_write_tokens, m.cost_usd,
    coalesce(s.started_at, m.first_message_at) AS started_at_utc,
    coalesce(s.ended_at, m.last_message_at) AS ended_at_utc,
    k.utc_offset_s AS journal_utc_offset_s,
    k.method AS offset_method,
    src.display AS source
FROM sessions AS s
JOIN sources AS src USING (source_id)
LEFT JOIN messages AS m ON m.session_id = s.id
LEFT JOIN calls AS c ON c.session_id = s.id
LEFT JOIN unit_writes AS u ON u.session_id = s.id
LEFT JOIN embedded AS e ON e.session_id = s.id
LEFT JOIN session_clock AS k ON k.session_id = s.id
WHERE chosen(s.id, $session)
ORDER BY started_at_utc NULLS LAST, s.id;
