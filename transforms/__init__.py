"""Passes, one module per pass, named after the pass."""
