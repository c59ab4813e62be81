"""Functions for tests/parse/test_compile.py (ppto.compile reads source from files)."""

import numpy as np

import pypto as ppto

SCALE = 3.0


def jacobi(A, B, tsteps):
    for _ in range(tsteps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


def shifted(x, n):
    out = np.zeros(n)
    for i in range(n):
        out[i] = x[i + 1]
    return out


def scaled(x):
    return x * SCALE


@ppto.compile
def decorated(x, y=2.0):
    """A decorated function."""
    return x * y


@ppto.compile(fallback=True)
def falls_back(x):
    while x.sum() > 0:
        x = x - 1
    else:
        x = x + 0
    return x


def make_closure(k):
    def inner(x):
        return x * k + 1

    return inner


def first_row(x):
    return x[0] * 2


def triangular(A):
    n = A.shape[0]
    total = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            total += A[i, j]
    return total


def by_size(x):
    if x.shape[0] > 4:
        return x * 2
    return x + 1


def boundary(x):
    n = x.shape[0]
    y = np.zeros(n)
    for i in range(n):
        if i == 0:
            y[i] = x[i]
        elif i == n - 1:
            y[i] = x[i] * 2
        else:
            y[i] = x[i - 1] + x[i + 1]
    return y


def prefix(x):
    out = x.copy()
    for i in range(x.shape[0]):
        if i > 0:
            out[i] = out[i - 1] + x[i]
    return out


def skip_diagonal(A):
    n = A.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(n):
            if j != i:
                s += A[i, j]
    return s
