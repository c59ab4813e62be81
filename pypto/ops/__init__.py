"""The built-in op definitions, grouped by kind; importing this package registers them all."""

from . import (
    composites,
    contractions,
    creation,
    custom,
    maps,
    reductions,
    reorders,
    scans,
    stores,
)

__all__ = [
    "composites",
    "contractions",
    "creation",
    "custom",
    "maps",
    "reductions",
    "reorders",
    "scans",
    "stores",
]
