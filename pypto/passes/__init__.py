"""Optimization passes, graph to graph or graph to Plan, one per file. Not built yet."""
