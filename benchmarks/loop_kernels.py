"""Loop kernels written the way a scientist writes NumPy, with explicit Python loops (PolyBench).

Each kernel is a plain function of float64 arrays (and ints / floats) that uses only basic
indexing and slicing, arithmetic, ufuncs such as np.sqrt / np.exp / np.minimum, np.sum, ``@``
and in-place stores; no np.linalg, boolean masks, fancy indexing, ``while`` or ``break``. It
returns the arrays it writes (or the scalar it accumulates).

``KERNELS`` maps a name to ``(fn, make)``; ``make(size_name, rng)`` returns the argument tuple
for the size "small" (one NumPy run takes about 5-15 ms) or "large" (about 100-300 ms), sizes
measured with the plain NumPy function on a 2-core machine, or "tiny" (for the tests).
"""

from __future__ import annotations

import numpy as np


# -- linear algebra -------------------------------------------------------------------------------
def gemm(alpha, beta, C, A, B):
    """C = alpha A B + beta C, one row of C at a time, accumulated over k."""
    for i in range(C.shape[0]):
        C[i, :] *= beta
        for k in range(A.shape[1]):
            C[i, :] += alpha * A[i, k] * B[k, :]
    return C


def gemm_ijk(C, A, B):
    """C = A B with three scalar loops."""
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = s
    return C


def syrk(alpha, beta, C, A):
    """Lower triangle of C = alpha A A^T + beta C."""
    for i in range(A.shape[0]):
        C[i, : i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, : i + 1] += alpha * A[i, k] * A[: i + 1, k]
    return C


def syr2k(alpha, beta, C, A, B):
    """Lower triangle of C = alpha (A B^T + B A^T) + beta C."""
    for i in range(A.shape[0]):
        C[i, : i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, : i + 1] += A[: i + 1, k] * alpha * B[i, k] + B[: i + 1, k] * alpha * A[i, k]
    return C


def trmm(alpha, A, B):
    """B = alpha A^T B with A unit lower triangular, row by row."""
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] += A[i + 1 :, i] @ B[i + 1 :, j]
        B[i, :] *= alpha
    return B


def symm(alpha, beta, C, A, B):
    """C = alpha A B + beta C with A symmetric (its lower triangle used)."""
    for i in range(C.shape[0]):
        for k in range(i):
            C[k, :] += alpha * B[i, :] * A[i, k]
        C[i, :] = beta * C[i, :] + alpha * B[i, :] * A[i, i] + alpha * (A[i, :i] @ B[:i, :])
    return C


def lu(A):
    """In-place LU decomposition without pivoting."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        for j in range(i, n):
            A[i, j] -= A[i, :i] @ A[:i, j]
    return A


def cholesky(A):
    """In-place Cholesky factor in the lower triangle."""
    for i in range(A.shape[0]):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[j, :j]) / A[j, j]
        A[i, i] = np.sqrt(A[i, i] - A[i, :i] @ A[i, :i])
    return A


def durbin(r, y, z):
    """Levinson-Durbin recursion (Toeplitz system); y and z are work arrays."""
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, r.shape[0]):
        beta = (1.0 - alpha * alpha) * beta
        alpha = -(r[k] + r[k - 1 :: -1] @ y[:k]) / beta
        z[:k] = y[:k] + alpha * y[k - 1 :: -1]
        y[:k] = z[:k]
        y[k] = alpha
    return y


def gramschmidt(A, R, Q):
    """Modified Gram-Schmidt QR of A (M x N): Q, R, and A overwritten."""
    for k in range(A.shape[1]):
        nrm = A[:, k] @ A[:, k]
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, A.shape[1]):
            R[k, j] = Q[:, k] @ A[:, j]
            A[:, j] -= Q[:, k] * R[k, j]
    return A, R, Q


# -- stencils -------------------------------------------------------------------------------------
def jacobi_1d(T, A, B):
    for _t in range(T):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A, B


def jacobi_2d(T, A, B):
    for _t in range(T):
        B[1:-1, 1:-1] = 0.2 * (
            A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1]
        )
        A[1:-1, 1:-1] = 0.2 * (
            B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1]
        )
    return A, B


def seidel_2d(T, A):
    """Gauss-Seidel 9-point sweeps: a row's vector part, then the in-row recurrence."""
    n = A.shape[0]
    for _t in range(T):
        for i in range(1, n - 1):
            A[i, 1:-1] += (
                A[i - 1, :-2]
                + A[i - 1, 1:-1]
                + A[i - 1, 2:]
                + A[i, 2:]
                + A[i + 1, :-2]
                + A[i + 1, 1:-1]
                + A[i + 1, 2:]
            )
            for j in range(1, n - 1):
                A[i, j] += A[i, j - 1]
                A[i, j] /= 9.0
    return A


def adi(T, u, v, p, q):
    """Alternating direction implicit sweeps (column then row tridiagonal solves)."""
    n = u.shape[0]
    DX = 1.0 / n
    DY = 1.0 / n
    DT = 1.0 / T
    B1 = 2.0
    B2 = 1.0
    mul1 = B1 * DT / (DX * DX)
    mul2 = B2 * DT / (DY * DY)
    a = -mul1 / 2.0
    b = 1.0 + mul1
    c = a
    d = -mul2 / 2.0
    e = 1.0 + mul2
    f = d
    for _t in range(T):
        v[0, 1 : n - 1] = 1.0
        p[1 : n - 1, 0] = 0.0
        q[1 : n - 1, 0] = v[0, 1 : n - 1]
        for j in range(1, n - 1):
            p[1 : n - 1, j] = -c / (a * p[1 : n - 1, j - 1] + b)
            q[1 : n - 1, j] = (
                -d * u[j, 0 : n - 2]
                + (1.0 + 2.0 * d) * u[j, 1 : n - 1]
                - f * u[j, 2:n]
                - a * q[1 : n - 1, j - 1]
            ) / (a * p[1 : n - 1, j - 1] + b)
        v[n - 1, 1 : n - 1] = 1.0
        for j in range(n - 2, 0, -1):
            v[j, 1 : n - 1] = p[1 : n - 1, j] * v[j + 1, 1 : n - 1] + q[1 : n - 1, j]
        u[1 : n - 1, 0] = 1.0
        p[1 : n - 1, 0] = 0.0
        q[1 : n - 1, 0] = u[1 : n - 1, 0]
        for j in range(1, n - 1):
            p[1 : n - 1, j] = -f / (d * p[1 : n - 1, j - 1] + e)
            q[1 : n - 1, j] = (
                -a * v[0 : n - 2, j]
                + (1.0 + 2.0 * a) * v[1 : n - 1, j]
                - c * v[2:n, j]
                - d * q[1 : n - 1, j - 1]
            ) / (d * p[1 : n - 1, j - 1] + e)
        u[1 : n - 1, n - 1] = 1.0
        for j in range(n - 2, 0, -1):
            u[1 : n - 1, j] = p[1 : n - 1, j] * u[1 : n - 1, j + 1] + q[1 : n - 1, j]
    return u, v, p, q


def deriche(alpha, imgIn, imgOut, y1, y2):
    """Deriche recursive edge filter: causal and anti-causal passes along rows, then columns."""
    w, h = imgIn.shape
    k = (1.0 - np.exp(-alpha)) ** 2 / (1.0 + 2.0 * alpha * np.exp(-alpha) - np.exp(2.0 * alpha))
    a1 = a5 = k
    a2 = a6 = k * np.exp(-alpha) * (alpha - 1.0)
    a3 = a7 = k * np.exp(-alpha) * (alpha + 1.0)
    a4 = a8 = -k * np.exp(-2.0 * alpha)
    b1 = 2.0 ** (-alpha)
    b2 = -np.exp(-2.0 * alpha)
    y1[:, 0] = a1 * imgIn[:, 0]
    y1[:, 1] = a1 * imgIn[:, 1] + a2 * imgIn[:, 0] + b1 * y1[:, 0]
    for j in range(2, h):
        y1[:, j] = a1 * imgIn[:, j] + a2 * imgIn[:, j - 1] + b1 * y1[:, j - 1] + b2 * y1[:, j - 2]
    y2[:, h - 1] = 0.0
    y2[:, h - 2] = a3 * imgIn[:, h - 1]
    for j in range(h - 3, -1, -1):
        y2[:, j] = (
            a3 * imgIn[:, j + 1] + a4 * imgIn[:, j + 2] + b1 * y2[:, j + 1] + b2 * y2[:, j + 2]
        )
    imgOut[:, :] = y1 + y2
    y1[0, :] = a5 * imgOut[0, :]
    y1[1, :] = a5 * imgOut[1, :] + a6 * imgOut[0, :] + b1 * y1[0, :]
    for i in range(2, w):
        y1[i, :] = a5 * imgOut[i, :] + a6 * imgOut[i - 1, :] + b1 * y1[i - 1, :] + b2 * y1[i - 2, :]
    y2[w - 1, :] = 0.0
    y2[w - 2, :] = a7 * imgOut[w - 1, :]
    for i in range(w - 3, -1, -1):
        y2[i, :] = (
            a7 * imgOut[i + 1, :] + a8 * imgOut[i + 2, :] + b1 * y2[i + 1, :] + b2 * y2[i + 2, :]
        )
    imgOut[:, :] = y1 + y2
    return imgOut, y1, y2


# -- graphs and dynamic programming ---------------------------------------------------------------
def floyd_warshall(path):
    """All-pairs shortest paths, one row update per (k, i)."""
    n = path.shape[0]
    for k in range(n):
        for i in range(n):
            path[i, :] = np.minimum(path[i, :], path[i, k] + path[k, :])
    return path


def edit_distance(a, b, D):
    """Levenshtein distance between two integer-valued sequences (stored as float64)."""
    n = a.shape[0]
    m = b.shape[0]
    for i in range(n + 1):
        D[i, 0] = i
    for j in range(m + 1):
        D[0, j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = np.minimum(1.0, np.abs(a[i - 1] - b[j - 1]))
            D[i, j] = np.minimum(
                np.minimum(D[i - 1, j] + 1.0, D[i, j - 1] + 1.0), D[i - 1, j - 1] + cost
            )
    return D


def iir_rows(a, x, y):
    """A first-order recursive filter along each row, written element by element."""
    for i in range(x.shape[0]):
        for j in range(1, x.shape[1]):
            y[i, j] = a * y[i, j - 1] + x[i, j]
    return y


# -- element loops and a scalar accumulation ------------------------------------------------------
def scale_shift_2d(a, b):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            b[i, j] = a[i, j] * 2.0 + 1.0
    return b


def scale_1d(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * 2
    return out


def row_shift_add(x, y):
    for i in range(1, x.shape[0]):
        y[i, :] = x[i - 1, :] + x[i, :]
    return y


def dot_loop(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * y[i]
    return s


# -- inputs ---------------------------------------------------------------------------------------
def _r(rng, *shape):
    return rng.random(shape)


def _spd(rng, n):
    m = rng.random((n, n))
    return m @ m.T / n + np.eye(n)


def _dominant(rng, n):
    return rng.random((n, n)) + n * np.eye(n)


SIZES = {  # size name -> the kernel's size parameters, tuned on the plain NumPy function
    "gemm": {"small": (70, 70, 70), "large": (300, 300, 300)},
    "gemm_ijk": {"small": (28,), "large": (85,)},
    "syrk": {"small": (75, 60), "large": (330, 280)},
    "syr2k": {"small": (55, 40), "large": (220, 170)},
    "trmm": {"small": (70, 60), "large": (300, 260)},
    "symm": {"small": (80, 80), "large": (320, 320)},
    "lu": {"small": (85,), "large": (330,)},
    "cholesky": {"small": (110,), "large": (400,)},
    "durbin": {"small": (1500,), "large": (10_000,)},
    "gramschmidt": {"small": (100, 85), "large": (400, 330)},
    "jacobi_1d": {"small": (2000, 1000), "large": (300_000, 500)},
    "jacobi_2d": {"small": (200, 50), "large": (800, 40)},
    "seidel_2d": {"small": (50, 6), "large": (160, 12)},
    "adi": {"small": (80, 5), "large": (300, 14)},
    "deriche": {"small": (400, 300), "large": (2000, 1600)},
    "floyd_warshall": {"small": (70,), "large": (280,)},
    "edit_distance": {"small": (50, 50), "large": (200, 220)},
    "scale_shift_2d": {"small": (160, 160), "large": (700, 800)},
    "scale_1d": {"small": (50_000,), "large": (900_000,)},
    "row_shift_add": {"small": (8000, 64), "large": (120_000, 64)},
    "dot_loop": {"small": (40_000,), "large": (800_000,)},
    "iir_rows": {"small": (120, 160), "large": (600, 700)},
}
TINY = {  # sizes for the tests (the CUDA emulator runs every thread of every launch)
    "gemm": (4, 5, 3),
    "gemm_ijk": (4,),
    "syrk": (5, 4),
    "syr2k": (5, 4),
    "trmm": (5, 4),
    "symm": (5, 4),
    "lu": (5,),
    "cholesky": (5,),
    "durbin": (6,),
    "gramschmidt": (6, 4),
    "jacobi_1d": (9, 3),
    "jacobi_2d": (6, 2),
    "seidel_2d": (6, 2),
    "adi": (6, 2),
    "deriche": (5, 6),
    "floyd_warshall": (5,),
    "edit_distance": (4, 5),
    "iir_rows": (4, 6),
    "scale_shift_2d": (4, 5),
    "scale_1d": (7,),
    "row_shift_add": (5, 3),
    "dot_loop": (9,),
}


def _make(name, size, rng):
    s = TINY[name] if size == "tiny" else SIZES[name][size]
    if name == "gemm":
        ni, nj, nk = s
        return 1.5, 1.2, _r(rng, ni, nj), _r(rng, ni, nk), _r(rng, nk, nj)
    if name == "gemm_ijk":
        (n,) = s
        return np.zeros((n, n)), _r(rng, n, n), _r(rng, n, n)
    if name == "syrk":
        n, m = s
        return 1.5, 1.2, _r(rng, n, n), _r(rng, n, m)
    if name == "syr2k":
        n, m = s
        return 1.5, 1.2, _r(rng, n, n), _r(rng, n, m), _r(rng, n, m)
    if name == "trmm":
        m, n = s
        return 1.5, _r(rng, m, m), _r(rng, m, n)
    if name == "symm":
        m, n = s
        return 1.5, 1.2, _r(rng, m, n), _r(rng, m, m), _r(rng, m, n)
    if name == "lu":
        return (_dominant(rng, s[0]),)
    if name == "cholesky":
        return (_spd(rng, s[0]),)
    if name == "durbin":
        (n,) = s
        return 0.5 * _r(rng, n) / n, np.zeros(n), np.zeros(n)
    if name == "gramschmidt":
        m, n = s
        return _r(rng, m, n), np.zeros((n, n)), np.zeros((m, n))
    if name == "jacobi_1d":
        n, t = s
        return t, _r(rng, n), _r(rng, n)
    if name == "jacobi_2d":
        n, t = s
        return t, _r(rng, n, n), _r(rng, n, n)
    if name == "seidel_2d":
        n, t = s
        return t, _r(rng, n, n)
    if name == "adi":
        n, t = s
        return t, _r(rng, n, n), np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n))
    if name == "deriche":
        w, h = s
        return 0.25, _r(rng, w, h), np.zeros((w, h)), np.zeros((w, h)), np.zeros((w, h))
    if name == "floyd_warshall":
        (n,) = s
        return (1.0 + 99.0 * _r(rng, n, n),)
    if name == "edit_distance":
        n, m = s
        a = rng.integers(0, 4, n).astype(np.float64)
        b = rng.integers(0, 4, m).astype(np.float64)
        return a, b, np.zeros((n + 1, m + 1))
    if name == "scale_shift_2d":
        n, m = s
        return _r(rng, n, m), np.zeros((n, m))
    if name == "scale_1d":
        return _r(rng, s[0]), np.zeros(s[0])
    if name == "row_shift_add":
        n, m = s
        return _r(rng, n, m), np.zeros((n, m))
    if name == "dot_loop":
        return _r(rng, s[0]), _r(rng, s[0])
    if name == "iir_rows":
        n, m = s
        return 0.7, _r(rng, n, m), np.zeros((n, m))
    raise KeyError(name)


def _maker(name):
    return lambda size, rng: _make(name, size, rng)


KERNELS = {
    name: (fn, _maker(name))
    for name, fn in (
        ("gemm", gemm),
        ("gemm_ijk", gemm_ijk),
        ("syrk", syrk),
        ("syr2k", syr2k),
        ("trmm", trmm),
        ("symm", symm),
        ("lu", lu),
        ("cholesky", cholesky),
        ("durbin", durbin),
        ("gramschmidt", gramschmidt),
        ("jacobi_1d", jacobi_1d),
        ("jacobi_2d", jacobi_2d),
        ("seidel_2d", seidel_2d),
        ("adi", adi),
        ("deriche", deriche),
        ("floyd_warshall", floyd_warshall),
        ("edit_distance", edit_distance),
        ("iir_rows", iir_rows),
        ("scale_shift_2d", scale_shift_2d),
        ("scale_1d", scale_1d),
        ("row_shift_add", row_shift_add),
        ("dot_loop", dot_loop),
    )
}
