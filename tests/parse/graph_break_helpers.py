"""A module PyPTO does not compile: its functions are graph breaks when a compiled function
calls them (tests/parse/graph_break_programs.py)."""

import numpy as np


def smooth_rows(x, width=3):
    """A moving average along the last axis, written as a Python loop over the window."""
    out = np.zeros_like(x)
    for k in range(width):
        out += np.roll(x, k - width // 2, axis=-1)
    return out / width


def positives(x):
    """Its size depends on the values: compiled code must refuse it where it runs."""
    return x[x > 0]


def zero_diagonal(a):
    """Writes into its argument."""
    np.fill_diagonal(a, 0.0)
    return a
