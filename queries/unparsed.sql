-- unparsed: the lines logmine could not type, grouped by template, most frequent first.
--
-- A template is the message with its SGLang prefix, paths, hex ids and numbers masked, so a
-- thousand "Foo took 1.23 s" lines count as one template. Each row shows the first example and
-- where it is (source and line number), so a new SGLang message can be turned into a pattern.
-- Columns: count, template, source, line
-- Parameters: $limit (rows to return).
WITH untyped AS (
    SELECT
        l.source_id,
        l.line_no,
        l.message,
        regexp_replace(
            regexp_replace(
                regexp_replace(
                    regexp_replace(l.message, '^\[[^\]]*\] ?', '[…] '),
                    '(?:[A-Za-z]:)?(?:/[\w.@+-]+)+/?', '<path>', 'g'),
                '0x[0-9a-fA-F]+|\b[0-9a-f]{12,}\b', '<hex>', 'g'),
            '-?\d+(?:\.\d+)?', '<n>', 'g') AS template
    FROM lines AS l
    WHERE l.kind IS NULL
)
SELECT
    u.template,
    count(*) AS count,
    arg_min(u.message, (u.source_id, u.line_no)) AS example,
    arg_min(s.display, (u.source_id, u.line_no)) AS source,
    arg_min(u.line_no, (u.source_id, u.line_no)) AS line
FROM untyped AS u
JOIN sources AS s USING (source_id)
GROUP BY u.template
ORDER BY count DESC, source, line
LIMIT $limit;
