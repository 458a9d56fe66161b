-- chosen_source, chosen: what the $source, $run and $session parameters of the named queries pick.
-- A NULL parameter picks everything. A source is named by its display name or its path (the API turns
-- a unique path suffix into the display name before the query runs), a run by its ordinal in its
-- source, a session by its id. Every named query filters through these macros, so what "this source"
-- or "this run" means is said here once.
CREATE OR REPLACE MACRO chosen_source(display, path, wanted) AS
    wanted IS NULL OR display = wanted OR path = wanted;

CREATE OR REPLACE MACRO chosen(value, wanted) AS
    wanted IS NULL OR value = wanted;
