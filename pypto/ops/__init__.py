"""The built-in op definitions, grouped by kind; importing this package registers them all."""

from . import (
    attention,
    composites,
    contractions,
    creation,
    custom,
    host_calls,
    maps,
    reductions,
    reorders,
    scans,
    stores,
)

__all__ = [
    "attention",
    "composites",
    "contractions",
    "creation",
    "custom",
    "host_calls",
    "maps",
    "reductions",
    "reorders",
    "scans",
    "stores",
]
