"""Printing shared by the lazy-API examples: what was built, and how it compares with NumPy."""

from __future__ import annotations

import numpy as np


def report(title: str, graph, results) -> None:
    """Print the traced graph and, per result, its shape, dtype and max difference to NumPy."""
    print(f"== {title}")
    if graph is not None:
        print("what PyPTO built (the traced graph):")
        print(graph)
    for name, got, want, rtol in results:
        got, want = np.asarray(got), np.asarray(want)
        ok = (
            got.shape == want.shape
            and got.dtype == want.dtype
            and np.allclose(got, want, rtol=rtol, atol=0, equal_nan=True)
        )
        diff = float(np.max(np.abs(got - want), initial=0.0)) if got.shape == want.shape else None
        print(
            f"  {name}: {got.dtype}{list(got.shape)}  max |PyPTO - NumPy| = {diff:.3g}  "
            f"{'matches NumPy' if ok else 'DIFFERS FROM NUMPY'}"
        )
