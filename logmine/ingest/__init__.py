"""Inputs parsed into typed batches and stored: the log pipeline, the transcripts, redaction, and the
processes that share the work (`worker/` beside the serial path, `jobs/` above it)."""
