"""Programs in the style of real NumPy code that gather and scatter through index arrays
(parse/index_arrays.py): each compiles unchanged and matches NumPy, writes included."""

import numpy as np


def scatter_rows(x, idx, v):
    """A copy with rows replaced (repeated indices: the last wins), the argument bumped."""
    y = x.copy()
    y[idx] = v
    x[idx] += 1.0
    return y


def histogram_at(labels, weights, k):
    """Weighted counts per label: np.add.at accumulates repeated labels."""
    counts = np.zeros(k, dtype=weights.dtype)
    np.add.at(counts, labels, weights)
    return counts / max(weights.size, 1)


def segment_max(labels, values, k):
    best = np.full(k, -np.inf, dtype=values.dtype)
    np.maximum.at(best, labels, values)
    return best


def pick_pairs(A, rows, cols):
    """Gather pairs A[rows, cols], then zero them in place."""
    vals = A[rows, cols]
    A[rows, cols] = 0
    return vals * 2 + A.sum()


def scale_columns(A, idx, s):
    A[:, idx] = A[:, idx] * s
    return np.exp(A).sum(axis=0)


def count_visits(x, path):
    """A loop writing at run-time integers read from data."""
    for i in range(path.shape[0]):
        k = path[i]
        x[k] = x[k] + 1.0
    return x


def embedding_grad(ids, grad, vocab):
    """The gradient of an embedding lookup: rows accumulate per id."""
    g = np.zeros((vocab, grad.shape[1]), dtype=grad.dtype)
    np.add.at(g, ids, grad)
    return g


def permute_inverse(p, x):
    """inv[p] = arange: the inverse permutation, then x through it."""
    inv = np.empty(p.shape[0], dtype=p.dtype)
    inv[p] = np.arange(p.shape[0])
    return x[inv]


def grid_lookup(T, i, j):
    """A table read at two index arrays and written back scaled."""
    v = T[i, j]
    T[i, j] *= 0.5
    return v


def onehot(labels, k):
    out = np.zeros((labels.shape[0], k))
    out[np.arange(labels.shape[0]), labels] = 1.0
    return out


def cast_into(x, idx, v):
    x[idx] = v
    return x
