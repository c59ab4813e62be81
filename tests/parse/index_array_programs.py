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


def fill_selected(x, v):
    """Values as long as the selection, in order (NumPy's boolean-mask assignment)."""
    m = x > 0
    x[m] = v[: np.count_nonzero(m)]
    x[~m] -= v[: np.count_nonzero(~m)]
    return x


def csr_rows(data, indices, indptr, x):
    """A CSR matrix-vector product through its index pointers (slices with run-time bounds)."""
    n = indptr.shape[0] - 1
    y = np.zeros(n, dtype=data.dtype)
    for i in range(n):
        lo, hi = indptr[i], indptr[i + 1]
        y[i] = np.dot(data[lo:hi], x[indices[lo:hi]])
    return y


def zero_prefix(x, m):
    """NumPy's slice is a view: ``head`` sees the write into ``x`` after it."""
    k = np.count_nonzero(m)
    head = x[:k]
    x[:k] = 0.0
    return head.sum() + x.sum(), head * 2


def segment_means(x, starts):
    out = np.zeros(starts.shape[0] - 1, dtype=x.dtype)
    for j in range(starts.shape[0] - 1):
        out[j] = x[starts[j] : starts[j + 1]].mean()
    return out


def window_rows(A, offsets):
    """Rows through a run-time slice, then columns by a static one."""
    k = offsets[0]
    return A[k : k + 2, 1:].sum(axis=0) + A[:, offsets[1] :].shape[1]


def select_features(A, keep):
    """Columns by a boolean mask, rows by another (the other axes whole)."""
    B = A[:, keep]
    C = A[A[:, 0] > 0, :]
    if C.shape[0] == 0:
        return B.sum(axis=1), A[0]
    return B.sum(axis=1), C.mean(axis=0)


def masked_columns(A, i):
    """A mask with integers beside it: a column of the selected rows, a row's selected items."""
    m = A[:, 0] > 0
    picked = A[m, 1]
    row = A[i, A[0] > 0]
    return picked.sum() + row.sum(), A[m, -1] * 2
