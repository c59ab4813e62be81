"""Loop functions for the cost model's tests (compiled functions must live in files)."""

import numpy as np


def jacobi(A, B, T):
    for _ in range(T):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A, B


def scale(x, T):
    for t in range(T):
        x[t] = x[t] * 2.0 + 1.0
    return x


def dot_loop(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * y[i]
    return s


def rows(C, A, B):
    n, m = A.shape
    for i in range(n):
        for k in range(m):
            C[i, :] += A[i, k] * B[k, :]
    return C


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def positional_only(x, /, T, *, scale=2.0):
    for t in range(T):
        x[t] = x[t] * scale + 1.0
    return x


def columns(x, y):
    """A recurrence over columns (small kernels, many trips), then one large kernel."""
    for j in range(1, x.shape[1]):
        y[:, j] = 0.5 * y[:, j - 1] + x[:, j]
    return y + x
