"""The public lazy-tensor API (lands with its issue)."""
