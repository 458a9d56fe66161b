"""What the user named: files, folders and standard input found, read as bytes, and known by their content."""
