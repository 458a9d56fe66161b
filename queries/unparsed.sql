-- unparsed: the lines logmine could not type, grouped by template, most frequent first.
--
-- Each line's key is its message with the SGLang prefix, paths, hex ids and numbers masked, so a
-- thousand "Foo took 1.23 s" lines share one key; Drain3 then groups keys that differ in a few
-- words into one template with `<*>` where they differ (`variants` counts them). Templates are
-- mined at each ingest and keep their id across ingests. Each row shows the first example and
-- where it is (source and line number), so a new SGLang message can be turned into a pattern.
-- Columns: count, variants, template, source, line
-- Parameters: $source (display name or path, NULL for all), $limit (rows to return).
WITH untyped AS (
    SELECT l.source_id, l.line_no, l.message, k.key, k.template_id
    FROM lines AS l
    JOIN untyped_keys AS k ON k.key = untyped_key(l.message)
    JOIN sources AS chosen_sources USING (source_id)
    WHERE l.kind IS NULL AND chosen_source(chosen_sources.display, chosen_sources.path, $source)
)
SELECT
    t.template,
    count(*) AS count,
    count(DISTINCT u.key) AS variants,
    arg_min(u.message, (u.source_id, u.line_no)) AS example,
    arg_min(s.display, (u.source_id, u.line_no)) AS source,
    arg_min(u.line_no, (u.source_id, u.line_no)) AS line,
    u.template_id
FROM untyped AS u
JOIN untyped_templates AS t USING (template_id)
JOIN sources AS s USING (source_id)
GROUP BY u.template_id, t.template
ORDER BY count DESC, source, line
LIMIT $limit;
