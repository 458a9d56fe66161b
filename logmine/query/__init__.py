"""Asking the database: the named queries, the run and source selection vocabulary, result rows."""
