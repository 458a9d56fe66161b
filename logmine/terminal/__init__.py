"""Telling a person: results rendered for the terminal or a pipe, the pager, the ingest summary."""
