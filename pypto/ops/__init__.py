"""The built-in op definitions, grouped by kind; importing this package registers them all."""

from . import (
    arg_reductions,
    attention,
    composites,
    contractions,
    creation,
    custom,
    grids,
    host_calls,
    linalg,
    maps,
    reductions,
    reorders,
    scans,
    statistics,
    stores,
    ufunc_methods,
)

__all__ = [
    "arg_reductions",
    "attention",
    "composites",
    "contractions",
    "creation",
    "custom",
    "grids",
    "host_calls",
    "linalg",
    "maps",
    "reductions",
    "reorders",
    "scans",
    "statistics",
    "stores",
    "ufunc_methods",
]
