"""logmine: typed events from SGLang journals and coding-agent transcripts, in DuckDB."""
