"""Executors and code generators for each level."""
