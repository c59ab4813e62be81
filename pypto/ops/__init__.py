"""The built-in op definitions, grouped by kind; importing this package registers them all."""

from . import composites, contractions, custom, maps, reductions, reorders, scans

__all__ = ["composites", "contractions", "custom", "maps", "reductions", "reorders", "scans"]
