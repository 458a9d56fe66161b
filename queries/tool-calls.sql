-- tool-calls: every tool call an agent made, in order: tool, status, exit code, duration, and the
-- command or the first line of its input.
--
-- `ended_by` says what ended a call that did not end by itself: timeout, interrupt or denied (its
-- status is then error).
-- Columns: message_index, tool, status, ended_by, exit_code, input_summary
-- Parameters: $session (session id, NULL for all).
SELECT
    t.session_id,
    t.message_index,
    t.message_id,
    t.call_id,
    t.tool,
    t.status,
    t.exit_code,
    t.is_error,
    t.ended_by,
    t.started_at AS started_at_utc,
    round(t.duration_s, 3) AS duration_s,
    left(coalesce(json_extract_string(t.input, '$.command'), json_extract_string(t.input, '$.cmd'),
                  json_extract_string(t.input, '$.filePath'), json_extract_string(t.input, '$.file_path'),
                  CAST(t.input AS VARCHAR)), 200) AS input_summary,
    t.child_session_id,
    length(t.output) AS output_chars
FROM tool_calls AS t
WHERE chosen(t.session_id, $session)
ORDER BY t.session_id, t.message_index, t.started_at, t.call_id;
