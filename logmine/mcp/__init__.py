"""`logmine mcp`: the database served to coding agents over the Model Context Protocol (`server.py`)."""
