-- config-changes: every server configuration an agent wrote (a systemd unit file or a launch
-- command) or saw (`origin` unit_read: the output of `systemctl cat` or `cat` of a unit file;
-- process_args: a server in `ps` output), typed like a server_args dump, with what it changed against
-- the previous snapshot of the same file on the same host (the first one is compared with nothing).
-- Columns: message_index, origin, host, path, changed
-- Parameters: $session (session id, NULL for all).
WITH snapshots AS (
    SELECT c.*, lag(c.args) OVER (PARTITION BY c.session_id, c.host, c.path ORDER BY c.message_index, c.call_id)
               AS previous_args
    FROM config_snapshots AS c
    WHERE chosen(c.session_id, $session)
)
SELECT
    s.session_id,
    s.message_index,
    s.message_id,
    s.call_id,
    s.origin,
    s.host,
    s.path,
    s.written_at AS written_at_utc,
    (SELECT json_group_object(k, [json_extract(s.previous_args, '$.' || k), json_extract(s.args, '$.' || k)])
     FROM (SELECT unnest(json_keys(s.args)) AS k)
     WHERE s.previous_args IS NOT NULL
       AND json_extract(s.previous_args, '$.' || k) IS DISTINCT FROM json_extract(s.args, '$.' || k)) AS changed,
    s.args
FROM snapshots AS s
ORDER BY s.session_id, s.message_index, s.call_id;
