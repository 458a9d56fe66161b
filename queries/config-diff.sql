-- config-diff: every server arg that changed between consecutive runs of a source, old and new value.
--
-- Values are typed as the `server_args=ServerArgs(...)` dump prints them (bool, int, float, None,
-- lists, strings), defaults included, so an unpinned `random_seed` shows up as a change too.
-- Columns: source, from_run, to_run, key, old, new
-- Parameters: $source (display name or path, NULL for all), $run (the later run's ordinal).
SELECT
    s.display AS source,
    d.from_run,
    d.to_run,
    d.key,
    d.old,
    d.new
FROM config_diffs AS d
JOIN sources AS s USING (source_id)
WHERE chosen_source(s.display, s.path, $source)
  AND chosen(d.to_run, $run)
ORDER BY d.source_id, d.to_run, d.key;
