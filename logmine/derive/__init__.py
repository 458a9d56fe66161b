"""What the stored lines mean together, rebuilt after each ingest: runs, configs, templates, links."""
