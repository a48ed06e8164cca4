"""Frontends: the FX importer (and, later, the lazy-tensor runtime)."""
