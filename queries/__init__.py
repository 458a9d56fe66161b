"""Named SQL queries, one document per file."""
