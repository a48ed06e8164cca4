"""Command-line tools: mncore-opt and mncore-run."""
