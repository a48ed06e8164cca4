"""mncore-ir: a multi-level compiler for MN-Core-like accelerators, on xDSL."""
