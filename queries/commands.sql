-- commands: the shell commands agents ran, split per host (`ssh user@host '...'` becomes a step on
-- that host), with the files each step wrote (heredocs, tee, redirects, write/edit tools).
-- Columns: message_index, host, exit_code, command
-- Parameters: $session (session id, NULL for all).
SELECT
    c.session_id,
    c.message_index,
    c.call_id,
    c.step,
    coalesce(c.host, 'local') AS host,
    c.user,
    c.exit_code,
    c.started_at AS started_at_utc,
    left(c.command, 300) AS command,
    (SELECT string_agg(w.path || ' (' || w.method || ')', ', ' ORDER BY w.path)
     FROM file_writes AS w
     WHERE w.source_id = c.source_id AND w.call_id = c.call_id AND w.step = c.step) AS writes
FROM commands AS c
WHERE chosen(c.session_id, $session)
ORDER BY c.session_id, c.message_index, c.call_id, c.step;
