"""The agent's prose read once with spaCy (facts, claims, decisions) and its figures judged against the runs."""
