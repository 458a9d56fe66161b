-- facts: what the messages of agent sessions name: quantities (normalised to bytes, seconds, tokens),
-- CLI flags and their values, hardware, models, hosts, IPs, systemd units, paths and SGLang terms.
--
-- One row per entity found by the spaCy pipeline of `logmine.nlp` (patterns in parsers/knowledge/):
-- the message (its id, position in the session and first line), the sentence number within the
-- message, the character span in the message text, the raw text, and for quantities the value as
-- written (`written_value`, `written_unit`) and normalised (`value`, `unit`). `detail` is the flag's
-- name, the term in lower case, or `approximate`/`range` for a quantity.
-- Columns: message_index, kind, text, value, unit
-- Parameters: $session (session id, NULL for all).
SELECT
    session_id AS session,
    message_id AS message,
    message_index,
    role,
    sentence,
    span_start,
    span_end,
    kind,
    text,
    value,
    unit,
    written_value,
    written_unit,
    detail,
    message_first_line AS message_text
FROM facts
WHERE chosen(session_id, $session)
ORDER BY session_id, message_index, span_start;
