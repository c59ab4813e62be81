"""PolyBench linear-algebra kernels in the NumPy form NPBench gives them: most update their
arguments in place; alpha and beta are NumPy scalars of the data's type
(``alpha = datatype(1.5)`` in NPBench's initializers) or Python floats."""

import numpy as np


def gemm(alpha, beta, C, A, B):
    """C = alpha * A @ B + beta * C, in place."""
    C[:] = alpha * A @ B + beta * C


def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    """Vector multiplication and matrix addition, in place on A, x and w."""
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x


def atax(A, x):
    """A^T (A x)."""
    return (A @ x) @ A


def bicg(A, p, r):
    """The two products of BiCG: r A and A p."""
    return r @ A, A @ p


def trisolv(L, x, b):
    """Forward substitution L x = b, row by row, in place on x."""
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


def cholesky(A):
    """In-place Cholesky factorization (the lower triangle), element by element."""
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])


def gramschmidt(A):
    """Modified Gram-Schmidt QR of A (m >= n), overwriting A; returns Q and R."""
    Q = np.zeros_like(A)
    R = np.zeros((A.shape[1], A.shape[1]), dtype=A.dtype)
    for k in range(A.shape[1]):
        nrm = np.dot(A[:, k], A[:, k])
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, A.shape[1]):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


def _gemm_args(dtype, rng):
    ni, nj, nk = rng.integers(4, 40, size=3)
    C = rng.random((ni, nj)).astype(dtype)
    A = rng.random((ni, nk)).astype(dtype)
    B = rng.random((nk, nj)).astype(dtype)
    return dtype(1.5), dtype(1.2), C, A, B


def _gemver_args(dtype, rng):
    n = int(rng.integers(4, 40))
    A = rng.random((n, n)).astype(dtype)
    u1, v1, u2, v2, w, x, y, z = (rng.random(n).astype(dtype) for _ in range(8))
    return dtype(1.5), dtype(1.2), A, u1, v1, u2, v2, w, x, y, z


def _atax_args(dtype, rng):
    m, n = rng.integers(4, 40, size=2)
    return rng.random((m, n)).astype(dtype), rng.random(n).astype(dtype)


def _bicg_args(dtype, rng):
    m, n = rng.integers(4, 40, size=2)
    A = rng.random((n, m)).astype(dtype)
    return A, rng.random(m).astype(dtype), rng.random(n).astype(dtype)


def _trisolv_args(dtype, rng):
    n = int(rng.integers(4, 32))
    L = np.tril(rng.random((n, n))) / n + np.eye(n)
    return L.astype(dtype), np.zeros(n, dtype), rng.random(n).astype(dtype)


def _cholesky_args(dtype, rng):
    n = int(rng.integers(4, 16))
    B = rng.random((n, n))
    return ((B @ B.T + n * np.eye(n)).astype(dtype),)


def _gramschmidt_args(dtype, rng):
    n = int(rng.integers(4, 12))
    m = n + int(rng.integers(0, 16))
    return ((rng.random((m, n)) + np.eye(m, n)).astype(dtype),)


CALLS = [
    (gemm, _gemm_args),
    (gemver, _gemver_args),
    (atax, _atax_args),
    (bicg, _bicg_args),
    (trisolv, _trisolv_args),
    (cholesky, _cholesky_args),
    (gramschmidt, _gramschmidt_args),
]
