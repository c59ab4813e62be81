"""Loops over rows and scalars: triangular solves, LU factorizations, Thomas sweeps,
running extremes, recurrences, Floyd-Warshall."""

import numpy as np


def forward_substitution(L, b):
    """Solve L x = b for a lower-triangular L."""
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def back_substitution(U, y):
    """Solve U x = y for an upper-triangular U, from the last row up."""
    n = len(y)
    x = np.zeros(n, dtype=y.dtype)
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - np.dot(U[i, i + 1 :], x[i + 1 :])) / U[i, i]
    return x


def lu_polybench(A):
    """In-place LU factorization without pivoting (PolyBench 'lu'), scalar-indexed loops."""
    N = A.shape[0]
    for i in range(N):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, N):
            A[i, j] -= A[i, :i] @ A[:i, j]


def _eliminate(A):
    """Gaussian elimination in place: U above the diagonal, the multipliers below it."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            factor = A[j, i] / A[i, i]
            A[j, i + 1 :] -= factor * A[i, i + 1 :]
            A[j, i] = factor


def _unit_lower_solve(LU, b):
    n = b.shape[0]
    y = np.empty_like(b)
    y[0] = b[0]
    for i in range(1, n):
        y[i] = b[i] - LU[i, :i] @ y[:i]
    return y


def _upper_solve(LU, y):
    n = y.shape[0]
    x = np.zeros_like(y)
    x[n - 1] = y[n - 1] / LU[n - 1, n - 1]
    for i in range(n - 2, -1, -1):
        x[i] = (y[i] - LU[i, i + 1 :] @ x[i + 1 :]) / LU[i, i]
    return x


def _lu_substitute(LU, b):
    return _upper_solve(LU, _unit_lower_solve(LU, b))


def lu_solve(A, b):
    """Solve A x = b by LU without pivoting; A is overwritten by its factors."""
    _eliminate(A)
    return _lu_substitute(A, b)


def thomas(a, b, c, d):
    """Tridiagonal solve (Thomas algorithm): sub-diagonal a (a[0] unused), diagonal b,
    super-diagonal c (c[-1] unused), right-hand side d."""
    n = d.shape[0]
    c_prime = np.empty_like(d)
    d_prime = np.empty_like(d)
    c_prime[0] = c[0] / b[0]
    d_prime[0] = d[0] / b[0]
    for i in range(1, n):
        c_prime[i] = c[i] / (b[i] - a[i] * c_prime[i - 1])
        d_prime[i] = (d[i] - a[i] * d_prime[i - 1]) / (b[i] - a[i] * c_prime[i - 1])
    x = np.zeros(n, dtype=d.dtype)
    x[-1] = d_prime[-1]
    for i in range(n - 2, -1, -1):
        x[i] = d_prime[i] - c_prime[i] * x[i + 1]
    return x


def thomas_batched(a, b, c, d):
    """Many tridiagonal systems at once, one per column: the sweeps go over rows."""
    n, m = d.shape
    c_prime = np.zeros((n, m), dtype=d.dtype)
    d_prime = np.zeros_like(d)
    x = np.empty_like(d)
    c_prime[0, :] = c[0, :] / b[0, :]
    d_prime[0, :] = d[0, :] / b[0, :]
    for i in range(1, n):
        denom = b[i, :] - a[i, :] * c_prime[i - 1, :]
        c_prime[i, :] = c[i, :] / denom
        d_prime[i, :] = (d[i, :] - a[i, :] * d_prime[i - 1, :]) / denom
    x[n - 1, :] = d_prime[n - 1, :]
    for i in range(n - 2, -1, -1):
        x[i, :] = d_prime[i, :] - c_prime[i, :] * x[i + 1, :]
    return x


def running_extremes(x):
    """Running maximum and minimum of a sequence, with the built-in max and min."""
    n = len(x)
    hi = np.empty_like(x)
    lo = np.empty_like(x)
    hi[0] = x[0]
    lo[0] = x[0]
    for i in range(1, n):
        hi[i] = max(hi[i - 1], x[i])
        lo[i] = min(lo[i - 1], x[i])
    return hi, lo


def total_variation(x):
    """Sum of |x[i] - x[i-1]|, accumulated in a loop from a Python float."""
    tv = 0.0
    for i in range(1, x.shape[0]):
        tv += abs(x[i] - x[i - 1])
    return tv


def ema_rows(x, decay=0.9):
    """Exponential moving average over the rows of x."""
    out = np.empty_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = decay * out[i - 1] + (1 - decay) * x[i]
    return out


def floyd_warshall(D):
    """All-pairs shortest paths, in place on the distance matrix D."""
    n = D.shape[0]
    for k in range(n):
        D[:, :] = np.minimum(D, D[:, k][:, np.newaxis] + D[k, :][np.newaxis, :])


def _pick(size, small, large):
    return small if size == "small" else large


def _dominant(n, rng):
    # Off-diagonal entries in [0.25, 0.5], diagonal in [2n, 3n]: no pivoting needed, and the
    # eliminations and substitutions stay far from cancellation.
    A = rng.uniform(0.25, 0.5, (n, n))
    np.fill_diagonal(A, rng.uniform(2.0 * n, 3.0 * n, n))
    return A


def _lower_inputs(size, dtype, rng):
    n = _pick(size, 6, 150)
    return np.tril(_dominant(n, rng)).astype(dtype), rng.uniform(2.0, 3.0, n).astype(dtype)


def _upper_inputs(size, dtype, rng):
    n = _pick(size, 6, 150)
    return np.triu(_dominant(n, rng)).astype(dtype), rng.uniform(2.0, 3.0, n).astype(dtype)


def _lu_inputs(size, dtype, rng):
    n = _pick(size, 6, 60)
    return (_dominant(n, rng).astype(dtype),)


def _lu_solve_inputs(size, dtype, rng):
    n = _pick(size, 7, 60)
    return _dominant(n, rng).astype(dtype), rng.uniform(2.0, 3.0, n).astype(dtype)


def _tridiagonal(shape, dtype, rng):
    # |b| >= 4 > |a| + |c|: diagonally dominant; the solution stays positive.
    return (
        rng.uniform(0.0, 0.5, shape).astype(dtype),
        rng.uniform(4.0, 5.0, shape).astype(dtype),
        rng.uniform(0.0, 0.5, shape).astype(dtype),
        rng.uniform(1.0, 2.0, shape).astype(dtype),
    )


def _thomas_inputs(size, dtype, rng):
    return _tridiagonal(_pick(size, (8,), (300,)), dtype, rng)


def _thomas_batched_inputs(size, dtype, rng):
    return _tridiagonal(_pick(size, (7, 5), (200, 150)), dtype, rng)


def _sequence(size, dtype, rng):
    return (rng.uniform(-1.0, 1.0, _pick(size, 9, 300)).astype(dtype),)


def _ema_inputs(size, dtype, rng):
    return (rng.uniform(0.5, 1.5, _pick(size, (8, 3), (300, 50))).astype(dtype),)


def _distances(size, dtype, rng):
    # Integer-valued distances: sums and minima are exact in either dtype.
    n = _pick(size, 6, 80)
    D = rng.integers(1, 20, (n, n)).astype(dtype)
    np.fill_diagonal(D, 0)
    return (D,)


CASES = [
    (forward_substitution, _lower_inputs),
    (back_substitution, _upper_inputs),
    (lu_polybench, _lu_inputs),
    (lu_solve, _lu_solve_inputs),
    (thomas, _thomas_inputs),
    (thomas_batched, _thomas_batched_inputs),
    (running_extremes, _sequence),
    (total_variation, _sequence),
    (ema_rows, _ema_inputs),
    (floyd_warshall, _distances),
]
