"""Format knowledge: each module reads one input format and knows nothing about storage."""
