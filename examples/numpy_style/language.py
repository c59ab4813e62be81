"""Python language features inside NumPy code: tuple unpacking, chained and augmented
assignment, branches at compile time and at run time, helpers, shape attributes, built-in
scalar functions, methods, returning arguments, tuples and nothing."""

import math

import numpy as np


def shape_summary(x: np.ndarray):
    """Number of elements plus rank, and the length of the diagonal: Python numbers."""
    rows, cols = x.shape
    return rows * cols + x.ndim + len(x) - x.size, math.sqrt(rows**2 + cols**2)


def shrink(x, alpha):
    """Scale toward zero for a positive alpha; shift up by |alpha| otherwise."""
    shift = scale = 0.0
    if alpha > 0:
        scale = 1.0 / (1.0 + alpha)
    else:
        scale = 1.0
        shift = abs(alpha)
    return x * scale + shift


def row_sums_any_rank(x):
    """Row sums of a matrix; a vector counts as one row."""
    if x.ndim == 1:
        rows = x[np.newaxis, :]
    else:
        rows = x
    return rows.sum(axis=1), rows.T.sum(axis=1)


def _span(x):
    return x.max(axis=0) - x.min(axis=0)


def _min_max_scale(x):
    return (x - x.min(axis=0)) / _span(x)


def _scale_inplace(a, s):
    a *= s


def min_max_scale_into(X, out, s=2.0):
    """Scale every column of X onto [1, 1 + s], writing into out."""
    out[:, :] = _min_max_scale(X)
    _scale_inplace(out, s)
    out += 1.0


def symmetrize(A):
    """The symmetric part (A + A.T) / 2, built on a copy."""
    B = A.copy()
    B += A.T
    B *= 0.5
    return B


def mixed_precision_sums(x):
    """Column sums accumulated in float64 and cast back, and the doubled array as float32."""
    col = x.astype(np.float64).sum(axis=0).astype(x.dtype)
    return col, (x * 2).astype(np.float32)


def damp_interior(A, y):
    """Double the interior rows of A and add y, in place."""
    A[1:-1] *= 2
    A += y
    return


def triangle_sums(A):
    """Sums right of the diagonal per row, sums of the columns right of each column, and the
    mean of the interior rows."""
    n = A.shape[0]
    upper = np.zeros(n, dtype=A.dtype)
    right = np.zeros(n, dtype=A.dtype)
    for i in range(n - 1):
        upper[i] = A[i, i + 1 :].sum()
        right[i] = A[:, i + 1 :].sum()
    middle = A[1 : n - 1, :].mean(axis=0)
    return upper, right, middle


def _polar(r, degrees):
    theta = degrees * np.pi / 180.0
    return r * np.cos(theta), r * np.sin(theta)


def sector_points(r, degrees):
    """Cartesian coordinates of polar points and the area of their disks."""
    x, y = _polar(r, degrees)
    area = math.pi * r**2
    return x, y, area


def clamp_inplace(x, lo=0.0, hi=1.0):
    """Clip x into [lo, hi] in place and return it."""
    x[:] = np.clip(x, lo, hi)
    return x


def _pick(size, small, large):
    return small if size == "small" else large


def _matrix(size, dtype, rng):
    return (rng.uniform(0.5, 1.5, _pick(size, (6, 5), (150, 200))).astype(dtype),)


def _shrink_inputs(size, dtype, rng):
    # alpha > 0 for the small case, alpha < 0 for the large one: both branches run.
    alpha = _pick(size, 0.5, -0.25)
    return rng.uniform(-1.0, 1.0, _pick(size, (6, 5), (150, 200))).astype(dtype), alpha


def _any_rank(size, dtype, rng):
    # A vector for the small case, a matrix for the large one: both branches of the
    # compile-time `if x.ndim == 1` are taken.
    return (rng.uniform(0.5, 1.5, _pick(size, (7,), (150, 200))).astype(dtype),)


def _scale_into_inputs(size, dtype, rng):
    shape = _pick(size, (6, 5), (150, 200))
    return (
        rng.uniform(-1.0, 1.0, shape).astype(dtype),
        np.zeros(shape, dtype=dtype),
    )


def _damp_inputs(size, dtype, rng):
    shape = _pick(size, (6, 5), (150, 200))
    return (
        rng.uniform(0.5, 1.5, shape).astype(dtype),
        rng.uniform(0.5, 1.5, shape[1]).astype(dtype),
    )


def _square(size, dtype, rng):
    n = _pick(size, 6, 150)
    return (rng.uniform(0.5, 1.5, (n, n)).astype(dtype),)


def _polar_inputs(size, dtype, rng):
    # Angles inside (5, 85) degrees: both coordinates stay away from zero.
    n = _pick(size, 7, 300)
    return (
        rng.uniform(0.5, 2.0, n).astype(dtype),
        rng.uniform(5.0, 85.0, n).astype(dtype),
    )


def _clamp_inputs(size, dtype, rng):
    return (rng.uniform(-0.5, 1.5, _pick(size, (6, 5), (150, 200))).astype(dtype),)


CASES = [
    (shape_summary, _matrix),
    (shrink, _shrink_inputs),
    (row_sums_any_rank, _any_rank),
    (min_max_scale_into, _scale_into_inputs),
    (symmetrize, _square),
    (mixed_precision_sums, _matrix),
    (damp_interior, _damp_inputs),
    (triangle_sums, _square),
    (sector_points, _polar_inputs),
    (clamp_inplace, _clamp_inputs),
]
