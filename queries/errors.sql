-- errors: why runs crashed. One row per error with its whole traceback, where it is in the log,
-- which rank printed it, and the run it ended (or happened in).
--
-- `error_kind` is oom (CUDA/NPU out of memory), host_memory (HiCache asked for more pinned host
-- memory than was free), abort (C++ terminate) or exception.
-- `role` is `cause` on the error that is its run's root cause (`runs.cause`), `consequence` on those
-- after it.
-- Columns: source, run, rank, error_kind, role, last_line
-- Parameters: $source (display name or path, NULL for all), $run (ordinal, NULL for all).
SELECT
    s.display AS source,
    e.run,
    e.rank,
    e.ts,
    e.error_kind,
    e.origin,
    e.exception_type,
    e.last_line,
    CASE WHEN e.first_line_no = r.cause_line_no THEN 'cause'
         WHEN e.first_line_no > r.cause_line_no THEN 'consequence' END AS role,
    e.first_line_no,
    e.last_line_no,
    e.n_lines,
    r.end_reason AS run_end_reason,
    e.text
FROM errors_by_run AS e
JOIN sources AS s USING (source_id)
JOIN runs AS r ON r.source_id = e.source_id AND r.ordinal = e.run
WHERE chosen_source(s.display, s.path, $source)
  AND chosen(e.run, $run)
ORDER BY e.source_id, e.first_line_no;
