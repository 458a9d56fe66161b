"""Readers for coding-agent session transcripts (opencode, Claude Code, Codex)."""
