"""Array creation: np.zeros, np.ones, np.full, np.empty (then fully written), the *_like
forms, np.arange, np.linspace, np.eye, np.outer."""

import math

import numpy as np


def padded(x, fill=1.0):
    """x inside a border of width one filled with `fill`."""
    rows, cols = x.shape
    out = np.full((rows + 2, cols + 2), fill, dtype=x.dtype)
    out[1:-1, 1:-1] = x
    return out


def creation_mix(x):
    n = x.shape[0]
    ones = np.ones_like(x)
    halves = np.full_like(x, 0.5)
    offsets = np.full((n, 1), 2.0, dtype=x.dtype)
    squares = np.empty(x.shape, dtype=x.dtype)
    squares[:, :] = x * x
    base = np.ones((1, x.shape[1]), dtype=x.dtype)
    total = np.zeros(x.shape[1], dtype=x.dtype)
    total += (ones + halves * squares + offsets * base).sum(axis=0)
    return total


def chirp(amplitude, f0=2.0, f1=8.3):
    """A linear chirp on [0, 1] around an offset of 1.5, scaled by an amplitude envelope."""
    n = amplitude.shape[0]
    t = np.linspace(0.0, 1.0, n)
    phase = 2.0 * math.pi * (f0 * t + 0.5 * (f1 - f0) * t**2)
    return amplitude * (1.5 + np.sin(phase))


def identity_shift(A, alpha):
    """A + alpha I."""
    n = A.shape[0]
    return A + alpha * np.eye(n, dtype=A.dtype)


def vandermonde(x, degree=4):
    """Columns 1, x, x**2, ..., x**degree, built column by column in an np.empty array."""
    n = x.shape[0]
    V = np.empty((n, degree + 1), dtype=x.dtype)
    V[:, 0] = 1.0
    for k in range(1, degree + 1):
        V[:, k] = V[:, k - 1] * x
    return V


def index_weights(x):
    """x weighted by column number over (1 + row number), from np.arange and np.outer."""
    rows = np.arange(x.shape[0])
    cols = np.arange(1.0, x.shape[1] + 1.0)
    w = np.outer(1.0 / (1.0 + rows), cols)
    return x * w.astype(x.dtype)


def _pick(size, small, large):
    return small if size == "small" else large


def _matrix(size, dtype, rng):
    return (rng.uniform(0.5, 1.5, _pick(size, (5, 7), (150, 200))).astype(dtype),)


def _vector(size, dtype, rng):
    return (rng.uniform(0.5, 1.5, _pick(size, 8, 300)).astype(dtype),)


def _shift_inputs(size, dtype, rng):
    n = _pick(size, 6, 200)
    return rng.uniform(0.5, 1.5, (n, n)).astype(dtype), 2.5


CASES = [
    (padded, _matrix),
    (creation_mix, _matrix),
    (chirp, _vector),
    (identity_shift, _shift_inputs),
    (vandermonde, _vector),
    (index_weights, _matrix),
]
