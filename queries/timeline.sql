-- timeline: every event of every source in time order, server and agent interleaved.
--
-- Server events are typed log lines (per-batch stats, access lines and progress bars included;
-- blank lines left out) in the journal's local time. Agent messages and tool calls are shifted
-- from UTC into that local time with each session's offset from `session_clock`.
-- Columns: ts, kind, text
-- Parameters: $source (display name or path, NULL for all), $run (ordinal, NULL for all),
-- $session (session id, NULL for all).
WITH server AS (
    SELECT l.ts, s.display AS source, r.run, l.line_no, 'server' AS actor, l.kind,
           concat_ws(' ', 'DP' || l.dp, 'PP' || l.pp, 'TP' || l.tp, 'EP' || l.ep) AS rank, l.message AS text
    FROM lines AS l
    JOIN sources AS s USING (source_id)
    LEFT JOIN run_lines AS r ON r.source_id = l.source_id AND l.line_no BETWEEN r.first_line_no AND r.last_line_no
    WHERE l.kind IS NOT NULL AND l.kind <> 'blank'
      AND chosen_source(s.display, s.path, $source)
      AND chosen(r.run, $run)
      AND $session IS NULL
),
agent_messages AS (
    SELECT m.created_at + to_seconds(coalesce(k.utc_offset_s, 0)) AS ts, m.session_id AS source, NULL::INTEGER AS run,
           m.idx AS line_no, m.role AS actor, 'message' AS kind, m.model AS rank, left(m.text, 500) AS text
    FROM messages AS m LEFT JOIN session_clock AS k USING (session_id)
    WHERE chosen(m.session_id, $session) AND $source IS NULL AND $run IS NULL
),
agent_tools AS (
    SELECT t.started_at + to_seconds(coalesce(k.utc_offset_s, 0)) AS ts, t.session_id, NULL::INTEGER,
           t.message_index, 'agent', 'tool_call:' || t.tool, NULL,
           left(coalesce(json_extract_string(t.input, '$.command'), CAST(t.input AS VARCHAR)), 500)
    FROM tool_calls AS t LEFT JOIN session_clock AS k USING (session_id)
    WHERE chosen(t.session_id, $session) AND $source IS NULL AND $run IS NULL
)
SELECT * FROM server
UNION ALL SELECT * FROM agent_messages
UNION ALL SELECT * FROM agent_tools
ORDER BY ts NULLS LAST, source, line_no;
