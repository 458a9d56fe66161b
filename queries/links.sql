-- links: which agent message changed which setting, and which server run started with it.
--
-- A configuration the agent wrote is joined to the first run, after the write, whose server_args
-- carry every value written; `changed` lists the written keys whose value differs from the run
-- before it, as [old, new]. Write times are converted to the journal's local time with the offset
-- in `session_clock` (inferred from journal lines the agent saw, or --tz).
-- Columns: message_index, changed, run, run_end_reason
-- Parameters: $session (session id, NULL for all), $source (display name or path, NULL for all).
SELECT
    l.session_id AS session,
    l.message_id AS message,
    l.message_index,
    left(split_part(trim(m.text), chr(10), 1), 200) AS message_text,
    l.kind,
    l.changed,
    s.display AS source,
    l.run,
    l.call_id,
    l.host,
    l.path,
    date_trunc('second', l.written_at_local) AS written_at,
    r.started_at AS run_started_at,
    r.end_reason AS run_end_reason
FROM links AS l
JOIN sources AS s ON s.source_id = l.source_id
JOIN runs AS r ON r.source_id = l.source_id AND r.ordinal = l.run
LEFT JOIN messages AS m ON m.session_id = l.session_id AND m.id = l.message_id
WHERE chosen(l.session_id, $session)
  AND chosen_source(s.display, s.path, $source)
ORDER BY l.session_id, l.message_index, l.call_id;
