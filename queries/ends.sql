-- ends: why each run ended: every sign of a bad end, with the evidence line `source:line`.
--
-- One row per sign, in log order: tracebacks and aborts (`traceback`, `oom`, `host_memory`, `abort`,
-- with the whole traceback in `text`), SGLang's own shutdown lines (SIGTERM, SIGQUIT, graceful exit,
-- dead ranks, exit codes, watchdog), systemd's verdicts on the unit (a main process that exited with
-- a signal or a non-zero status, `Failed with result`, stop timeouts, kills, the OOM killer, start
-- limits) and `stopped_while_loading`: a stop or restart issued before the server was ready, which is
-- an operator's action and not a crash. `role` is `cause` on the run's root cause (its first decisive
-- failure, see `runs.cause`; a library's fatal line outside any traceback, such as NVSHMEM's, is a row of
-- kind `fatal_line`, and an exit-time warning of a run killed from outside one of kind `exit_trace`) and
-- `consequence` on every sign after it; `family` is the cause's failure family. When an agent transcript is ingested, `agent_command` is the
-- shell command (systemctl restart/stop/kill) the agent started in the minute before the unit was
-- stopped, with its session and message, in the journal's local time (offset from `session_clock`).
-- Columns: source, run, kind, role, detail, evidence, agent_command
-- Parameters: $source (display name or path, NULL for all), $run (ordinal, NULL for all).
WITH selected AS (
    SELECT r.*, s.display AS source FROM runs AS r JOIN sources AS s USING (source_id)
    WHERE chosen_source(s.display, s.path, $source)
      AND chosen(r.ordinal, $run)
),
tracebacks AS (
    SELECT source_id, run, ts, CASE WHEN error_kind = 'exception' THEN 'traceback' ELSE error_kind END AS kind,
           coalesce(exception_type || ': ' || exception_message, last_line) AS detail,
           rank, first_line_no AS line_no, last_line_no, text
    FROM errors_by_run
),
shutdown AS (
    SELECT source_id, run, ts, kind, concat_ws(' ', signal, trim(detail), 'exit code ' || exit_code,
                                               'child ' || child, 'remaining requests ' || remaining_requests) AS detail,
           rank, line_no, line_no AS last_line_no, NULL AS text
    FROM shutdown_events_by_run AS d
    -- A shutdown line inside a traceback (`RuntimeError: Not enough memory ...`) is shown with it.
    WHERE NOT EXISTS (SELECT 1 FROM errors AS e WHERE e.source_id = d.source_id
                                                  AND d.line_no BETWEEN e.first_line_no AND e.last_line_no)
),
verdicts AS (
    SELECT source_id, run, ts, kind,
           concat_ws(' ', 'code=' || code, 'status=' || status, 'result=' || result, trim(detail)) AS detail,
           rank, line_no, line_no AS last_line_no, NULL AS text
    FROM systemd_by_run
    WHERE (kind = 'systemd_main_exited' AND status <> '0/SUCCESS')
       OR kind IN ('systemd_failed_result', 'systemd_failed_start', 'systemd_stop_timeout', 'systemd_killing',
                   'systemd_oom_kill', 'systemd_start_limit')
),
stops AS (
    SELECT sel.source_id, sel.ordinal AS run, min(y.ts) AS ts, min(y.line_no) AS line_no
    FROM selected AS sel
    JOIN systemd_by_run AS y ON y.source_id = sel.source_id AND y.run = sel.ordinal
    WHERE y.kind = 'systemd_stopping'
    GROUP BY ALL
),
stopped_loading AS (
    SELECT st.source_id, st.run, st.ts, 'stopped_while_loading' AS kind,
           'asked to stop ' || round(epoch(st.ts) - epoch(sel.started_at))::BIGINT || ' s after start, before ready'
               AS detail,
           '' AS rank, st.line_no, st.line_no AS last_line_no, NULL AS text
    FROM stops AS st JOIN selected AS sel ON sel.source_id = st.source_id AND sel.ordinal = st.run
    WHERE sel.ready_at IS NULL
),
known_signs AS (
    SELECT * FROM tracebacks UNION ALL SELECT * FROM shutdown UNION ALL SELECT * FROM verdicts
    UNION ALL SELECT * FROM stopped_loading
),
cause_lines AS (
    -- Signs no other row shows: a library's fatal lines (NVSHMEM's, on every rank), or the exit-time warning
    -- of a run killed from outside (see `failure_signs`).
    SELECT f.source_id, f.run, f.ts, CASE f.origin WHEN 'exit' THEN 'exit_trace' ELSE 'fatal_line' END AS kind,
           f.text AS detail, f.rank, f.line_no, f.last_line_no, NULL AS text
    FROM failure_signs AS f JOIN selected AS sel ON sel.source_id = f.source_id AND sel.ordinal = f.run
    WHERE f.origin IN ('line', 'exit')
),
signs AS (
    SELECT * FROM known_signs UNION ALL SELECT * FROM cause_lines
),
agent_stops AS (
    SELECT c.session_id, c.message_index, c.call_id, c.command,
           c.started_at + to_seconds(coalesce(k.utc_offset_s, 0)) AS local_at
    FROM commands AS c LEFT JOIN session_clock AS k USING (session_id)
    WHERE regexp_matches(c.command, 'systemctl\s+(\S+\s+)*(restart|stop|kill)\b')
),
caused_by AS (
    SELECT st.source_id, st.run,
           arg_max(a.session_id, a.local_at) AS session, arg_max(a.message_index, a.local_at) AS message_index,
           arg_max(regexp_extract(a.command, '[^\n]*systemctl[^\n]*'), a.local_at) AS agent_command
    FROM stops AS st JOIN agent_stops AS a
      ON a.local_at BETWEEN st.ts - INTERVAL 60 SECOND AND st.ts + INTERVAL 5 SECOND
    GROUP BY ALL
)
SELECT
    sel.source,
    sel.ordinal AS run,
    sig.ts,
    sig.kind,
    sig.detail,
    sig.rank,
    sel.source || ':' || sig.line_no AS evidence,
    sig.line_no,
    sig.last_line_no,
    coalesce(sig.text, l.message) AS text,
    sel.end_reason AS run_end_reason,
    sel.ready_at IS NOT NULL AS was_ready,
    CASE WHEN sig.line_no = sel.cause_line_no THEN 'cause'
         WHEN sig.line_no > sel.cause_line_no THEN 'consequence' END AS role,
    CASE WHEN sig.line_no = sel.cause_line_no THEN sel.cause_family END AS family,
    cb.session,
    cb.message_index,
    cb.agent_command
FROM selected AS sel
JOIN signs AS sig ON sig.source_id = sel.source_id AND sig.run = sel.ordinal
LEFT JOIN lines AS l ON l.source_id = sig.source_id AND l.line_no = sig.line_no
LEFT JOIN caused_by AS cb ON cb.source_id = sel.source_id AND cb.run = sel.ordinal
ORDER BY sel.source_id, sig.line_no;
