-- decisions: each request the user made (a question or a directive, in their words), what the agent
-- did to answer it, and the server run that produced with its measured effect.
--
-- `answer` is the assistant's first text after the request (its first 500 characters). Actions are the
-- tool calls until the next user message (tool and the first line of its command),
-- unit-file writes and restart commands; `config_changes` are the `links` of those messages (which
-- settings changed, which run started with them); the run is the last one they started, with its end
-- reason, load time and effect (errors, host cache, KV tokens).
-- Columns: message_index, request, tool_calls, run, run_end_reason
-- Parameters: $session (session id, NULL for all).
SELECT
    session_id AS session,
    message_id AS message,
    message_index,
    request_kind,
    request,
    answer,
    tool_calls,
    unit_file_writes,
    restarts,
    config_changes,
    run,
    run_end_reason,
    run_load_seconds,
    run_effect,
    actions,
    answered_through_index
FROM decisions
WHERE chosen(session_id, $session)
ORDER BY session_id, message_index;
