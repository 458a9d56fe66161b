-- tables: every table and view of the database, with its columns in order.
--
-- `logmine tables` adds each one's row count. Views named `<table>_by_run` are the event tables with
-- `run`, `rank`, `is_rank0` and `model_role` added.
-- Columns: name, kind, columns
SELECT t.table_name AS name, CASE t.table_type WHEN 'VIEW' THEN 'view' ELSE 'table' END AS kind,
       string_agg(c.column_name, ', ' ORDER BY c.ordinal_position) AS columns
FROM information_schema.tables AS t
JOIN information_schema.columns AS c USING (table_schema, table_name)
WHERE t.table_schema = current_schema()
GROUP BY ALL
ORDER BY kind, name;
