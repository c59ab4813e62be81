"""Programs in the style of real NumPy code whose values decide the size of a value:
``x[mask]`` reads, ``np.nonzero``, ``np.flatnonzero``, ``np.argwhere``, ``np.unique``,
``np.extract``, ``np.compress`` (tests/parse/test_data_sized.py)."""

import numpy as np


def positive_stats(x):
    """Mean and spread of the positive entries."""
    pos = x[x > 0]
    return pos.mean(), pos.std(), pos.size


def sigma_clip(x):
    """Keep what lies within 1.5 standard deviations, then its statistics."""
    keep = x[np.abs(x - x.mean()) < 1.5 * x.std()]
    return keep.mean(), keep.max() - keep.min(), len(keep)


def active_rows(A):
    """The rows whose first column is positive, scaled; and how many."""
    rows = A[A[:, 0] > 0]
    return rows * 2.0 + 1.0, rows.shape[0]


def sparse_pairs(A):
    """Coordinates and values of the nonzero entries above a threshold."""
    r, c = np.nonzero(A > 0.5)
    return r * A.shape[1] + c, A.ravel()[np.flatnonzero(A > 0.5)]


def peak_positions(x):
    """The indices of local maxima (np.argwhere), and their heights."""
    inner = (x[1:-1] > x[:-2]) & (x[1:-1] > x[2:])
    where = np.argwhere(inner)
    return where[:, 0] + 1, where.shape


def label_means(labels, values):
    """The mean value of each distinct label (np.unique with counts, one mask per label)."""
    u, counts = np.unique(labels, return_counts=True)
    means = np.zeros(u.shape[0], dtype=values.dtype)
    for k in range(u.shape[0]):
        means[k] = values[labels == u[k]].mean()
    return u, counts, means


def winners(scores, thresh):
    """The entries above a run-time threshold, ordered by the size of the selection."""
    top = np.extract(scores > thresh, scores)
    if top.size > 2:
        return np.sort(top)[-2:].sum()
    return top.sum() * 2


def compressed_columns(A):
    """The columns whose mean is positive (np.compress along an axis), normalized."""
    cols = np.compress(A.mean(axis=0) > 0, A, axis=1)
    return cols / (np.abs(cols).sum(axis=0) + 1.0)


def inside_expression(x, y):
    """A masked read inside an expression: operands before it in the same statement."""
    a = x * y
    return a.sum() + (x * 2)[x > 0].sum() + y[x > 0].size


def per_row_selection(X, k):
    """A masked read of each row in a loop: the size bound at each iteration."""
    total = X[0, 0] * 0
    for i in range(k):
        sel = X[i][X[i] > 0]
        total = total + sel.sum() / (sel.size + 1)
    return total


def empty_selection(x):
    """Nothing selected: sums of empty arrays, an empty index array."""
    return x[x > 100].sum(), np.flatnonzero(x > 100), np.unique(x[x > 100])


def mask_mismatch(x, m):
    """A mask of the wrong length: NumPy's IndexError."""
    return x[m]


PROGRAMS = [
    "positive_stats",
    "sigma_clip",
    "active_rows",
    "sparse_pairs",
    "peak_positions",
    "label_means",
    "winners",
    "compressed_columns",
    "inside_expression",
    "per_row_selection",
    "empty_selection",
]


def first_two(x):
    """``sel[:2]`` assumes two elements; fewer run the original."""
    sel = x[x > 0]
    return sel[:2] * 2.0


def one_broadcast(x):
    """A selection of length 1 broadcasts against ``x`` in NumPy."""
    return np.logaddexp(x[x > 1.0], x)


def written_first(x):
    """An argument written before the selection: no restart (the error names it)."""
    x[0] = 5.0
    sel = x[x > 0]
    return sel[:2]
