"""Design document 3.1: the four core operator kinds, each next to its NumPy form."""

from __future__ import annotations

import numpy as np

import pypto as ppto

x = ppto.tensor("x")
y = ppto.tensor("y")

# Map: each element independently
map_chain = ppto.sin(x) + ppto.cos(y)
# Reduce: aggregate along a dimension
reduce_chain = ppto.reduce_mean(x, axis=1)
# Scan: cumulative operations
scan_chain = ppto.cumsum(x, axis=0)
# Reorder: change shape or order
reorder_chain = ppto.transpose(x, (1, 0, 2))
# The conventional NumPy spelling builds the same lazy chain on PyPTO tensors.
numpy_spelled_chain = np.sin(x) + np.cos(y)


def results(seed: int = 0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    data_x = rng.standard_normal((4, 5, 6)).astype(dtype)
    data_y = rng.standard_normal((4, 5, 6)).astype(dtype)
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    return [
        ("map", map_chain.run(x=data_x, y=data_y), np.sin(data_x) + np.cos(data_y), rtol),
        ("reduce", reduce_chain.run(x=data_x), data_x.mean(axis=1), rtol),
        ("scan", scan_chain.run(x=data_x), np.cumsum(data_x, axis=0), rtol),
        ("reorder", reorder_chain.run(x=data_x), data_x.transpose(1, 0, 2), rtol),
        (
            "map, NumPy spelling",
            numpy_spelled_chain.run(x=data_x, y=data_y),
            np.sin(data_x) + np.cos(data_y),
            rtol,
        ),
    ]


def main():
    from _report import report

    report("3.1 operator kinds", None, results())


if __name__ == "__main__":
    main()
