"""Gathers through one index array (the native ``take``: pypto/ops/gathers.py) side by side:
NumPy eager and PyPTO's NumPy target, at two sizes, interleaved in one process (run A, run B,
...) after a warm-up call each; min and median of --repeat runs and the ratio NumPy-min /
PyPTO-min (above 1: faster than NumPy). Results are checked against NumPy's before timing.

    .venv/bin/python benchmarks/gather_bench.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PYPTO_ORIGINAL", "never")  # (time the Plan, not the fallback)

import pypto as ppto  # noqa: E402


def embedding(table, ids, scale):
    """Rows looked up, then an elementwise epilogue (one kernel: the gather and the maps)."""
    return np.tanh(table[ids] * scale) + 1.0


def columns(A, cols):
    """Columns picked, then a row reduction."""
    return (A[:, cols] * 2.0).sum(axis=1)


def csr_products(data, indices, x):
    """The products of a CSR matrix-vector product before its row sums."""
    return data * x[indices]


def gather_norm(x, idx):
    g = x[idx]
    return np.sqrt(g * g + 1.0).sum()


def inputs(name, size):
    rng = np.random.default_rng(0)
    n = size
    return {
        "embedding": lambda: (
            rng.standard_normal((n // 64, 64)).astype(np.float32),
            rng.integers(0, n // 64, n // 256),
            np.float32(0.5),
        ),
        "columns": lambda: (rng.standard_normal((n // 16, 32)), rng.integers(-32, 32, 16)),
        "csr_products": lambda: (
            rng.standard_normal(n),
            rng.integers(0, n // 8, n),
            rng.standard_normal(n // 8),
        ),
        "gather_norm": lambda: (rng.standard_normal(n // 4), rng.integers(0, n // 4, n)),
    }[name]()


WORKLOADS = {
    "embedding": embedding,
    "columns": columns,
    "csr_products": csr_products,
    "gather_norm": gather_norm,
}


def timed(fn, args) -> float:
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    opts = ap.parse_args()
    rows = []
    for name, fn in WORKLOADS.items():
        for size in (1 << 16, 1 << 22):
            args = inputs(name, size)
            compiled = ppto.compile(fn)
            np.testing.assert_allclose(compiled(*args), fn(*args), rtol=1e-5)
            times = {"numpy": [], "pypto": []}
            for _ in range(opts.repeat):
                times["numpy"].append(timed(fn, args))
                times["pypto"].append(timed(compiled, args))
            best = {k: min(v) for k, v in times.items()}
            med = {k: statistics.median(v) for k, v in times.items()}
            rows.append((name, size, best, med, best["numpy"] / best["pypto"]))
    print(
        f"{'workload':<14}{'size':>9}{'numpy ms':>11}{'pypto ms':>11}{'median n/p':>12}{'ratio':>8}"
    )
    for name, size, best, med, ratio in rows:
        print(
            f"{name:<14}{size:>9}{best['numpy'] * 1e3:>11.3f}{best['pypto'] * 1e3:>11.3f}"
            f"{med['numpy'] / med['pypto']:>12.2f}{ratio:>8.2f}"
        )
    ratios = [r[-1] for r in rows]
    print(f"geometric mean {float(np.exp(np.mean(np.log(ratios)))):.2f}x")


if __name__ == "__main__":
    main()
