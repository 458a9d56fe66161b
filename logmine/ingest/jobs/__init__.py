"""`logmine ingest --jobs N` for N of 3 or more: several files, or byte ranges of one journal, in a pool."""
