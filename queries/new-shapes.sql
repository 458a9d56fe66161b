-- new-shapes: the logs whose lines logmine mostly cannot type, and the shape those lines take.
--
-- A file in no format logmine knows ("lines look like JSON objects with keys ts, lvl, msg: not a format
-- logmine knows"), or a known envelope whose messages no pattern or catalogue entry types (a new
-- release, a new writer). Remade at every ingest from the stored lines (`logmine/drift.py`); `line` is
-- the first untyped line and `example` its text.
-- Columns: source, shape, lines, untyped, line
-- Parameters: $source (display name or path, NULL for all).
SELECT s.display AS source, n.shape, n.lines, n.untyped, n.first_line_no AS line, n.example
FROM new_shape AS n
JOIN sources AS s USING (source_id)
WHERE chosen_source(s.display, s.path, $source)
ORDER BY n.source_id;
