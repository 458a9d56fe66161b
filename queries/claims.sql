-- claims: the numbers in the agents' text checked against what the logs measured, inconsistent first.
--
-- Each byte, second or token figure an assistant wrote is matched to the measured figure it speaks of
-- (see `measurements`: cue words in its clause, the run its message's configuration change produced or
-- the run current at the message's time). `verdict`: `consistent` within the rounding of the number as
-- written (half a unit of its last digit, a whole unit when marked "~"), read as the log prints it
-- (SGLang's device "GB" is GiB) or converted to the agent's unit; `inconsistent` with the measured value,
-- its source line and, for a GiB/GB mix-up or wrong arithmetic ("44.77 GB x 8 = 358 GB" is checked),
-- the `cause`; `unverifiable` when no cue names a figure or nothing measured it for that run.
-- `message` is the message id as the transcript gives it, `message_index` its position in the session;
-- `measured` is in the claim's unit, `measured_figure` as measured in its true unit (SGLang's device "GB"
-- shown as GiB). The tolerance of each quantity is stated in parsers/knowledge/quantities.json.
-- `derivation` says how the verdict was reached: `observed` (the log printed the figure) or `derived`
-- (a total over ranks, a difference of times, a conversion...), with the rule and its arithmetic.
-- Columns: message_index, verdict, text, measured_figure, measured_source, cause
-- Parameters: $session (session id, NULL for all), $run (ordinal, NULL for all).
SELECT
    c.session_id AS session,
    c.message_id AS message,
    c.message_index,
    c.text,
    c.value,
    c.unit,
    c.measured,
    c.measured_source,
    c.verdict,
    c.derivation,
    c.cause,
    c.quantity,
    c.scope,
    c.run,
    c.measured_figure,
    c.arithmetic,
    c.message_first_line AS message_text
FROM claims AS c
WHERE chosen(c.session_id, $session)
  AND chosen(c.run, $run)
ORDER BY CASE c.verdict WHEN 'inconsistent' THEN 0 WHEN 'consistent' THEN 1 ELSE 2 END,
         c.session_id, c.message_index, c.span_start;
