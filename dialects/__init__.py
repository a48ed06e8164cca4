"""Dialects: graph (tensor ops); task and mncore land with their issues."""
