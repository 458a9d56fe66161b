-- tool-timeouts: the agent's tool calls that hit a time limit (the tool killed the command, or the
-- command said it timed out), with the tool's own words and the command.
--
-- A command killed by the agent's tool has no exit code; what it was doing may still have happened
-- (a `systemctl restart` that waits on a slow stop keeps going after the tool gives up).
-- Parameters: $session (session id, NULL for all).
SELECT
    t.session_id,
    t.message_index,
    t.message_id,
    t.call_id,
    t.tool,
    t.exit_code,
    round(t.duration_s, 2) AS duration_s,
    t.started_at AS started_at_utc,
    regexp_extract(t.output, '[^\n]*(?:exceed\w* (?:the )?timeout|timed out|[Tt]imeout after)[^\n]*') AS timeout_line,
    left(coalesce(json_extract_string(t.input, '$.command'), json_extract_string(t.input, '$.cmd'),
                  CAST(t.input AS VARCHAR)), 300) AS command
FROM tool_calls AS t
WHERE ($session IS NULL OR t.session_id = $session)
  AND regexp_matches(t.output, 'exceed\w* (?:the )?timeout|timed out|[Tt]imeout after')
ORDER BY t.session_id, t.message_index, t.started_at;
