"""Functions for tests/parse/test_supported_python.py, sections "Indexing" and "Statements" of
docs/supported-python.md."""

import numpy as np


# -- Indexing -------------------------------------------------------------------------------------
def basic_slicing(A):
    return A[1:-1], A[::-1], A[::2, 1:], A[-3:, :-2], A[1:-1:2, ::-3], A[:, 2:1], A[10:], A[:-10]


def integer_none_ellipsis(A):
    return (
        A[0],
        A[-1],
        A[:, None],
        A[..., 0],
        A[1, -2, 0],
        A[None, ..., None],
        A[0, ..., -1],
        A[-1][1],
        A[:, 1, None, :],
    )


def expression_bounds(A, k):
    n = A.shape[0]
    out = np.zeros_like(A)
    for i in range(n - 1):
        out[i, :] = A[i, :] + A[:, i + 1 :].sum()
        out[i + 1, : i + 1] -= A[i, n - i - 1 :]
    return A[1 : n - 1], out, A[:, n // 2 :], A[k : n - k, k], A[-k]


def index_parameter(x, k):
    return x[k]


# -- Statements -----------------------------------------------------------------------------------
def _extremes(x):
    return x.min(), x.max()


def _scale_into(a, s):
    a *= s


def assignments(x):
    a = b = 0.0
    n, m = x.shape
    lo, hi = _extremes(x)
    (p, q), r = (n, m), 3
    a = a + lo
    return a, b, n * m, hi - lo, p + q + r


def chained_array_assignment(n):
    u = v = np.zeros(n)
    u[0] = 5.0
    return v, u


def augmented(x, y):
    z = x.copy()
    z += y
    z[1:-1] *= 2
    s = 0.0
    t = x.shape[0]
    t += 1
    for i in range(x.shape[0]):
        s += x[i, 0]
    z -= 1
    z /= 3
    z **= 2
    z[0] //= 0.25
    return z, s, t


def inplace_into_arguments(x, y):
    x += y
    x[1:-1] *= 2
    return x


def inplace_casting(a, b):
    a += b
    return a


def slice_assignment(A, v):
    n = A.shape[0]
    B = np.zeros_like(A)
    for i in range(n):
        B[i, :] = A[i, ::-1]
    A[1:-1] = v
    B[0] = 3.0
    B[:, -1] = A[:, 0]
    return B


def alias_write(a):
    b = a
    b[0] = 1.0
    return a.sum(), b


def view_sees_write(A):
    r = A[1]
    A[1, 0] = 5.0
    return r.sum()


def write_through_view(A):
    r = A[1]
    r[0] = 7.0
    r += 1.0
    c = A[:, 2:]
    c[...] = 0.5
    return A.sum(axis=1), r


def return_argument(x):
    return x


def return_tuple(x, y):
    return x, x * 2, (y, 3)


def return_nothing(x):
    x[0] = 1.0
    return


def no_return_statement(x):
    x *= 2


def return_argument_after_write(x):
    x[0] = 3.0
    return x


def loop_ranges(x, steps):
    n = x.shape[0]
    out = np.zeros_like(x)
    for i in range(n):
        out[i] = x[i] * 2
    for i in range(1, n - 1):
        out[i] += x[i - 1] + x[i + 1]
    for i in range(n - 2, -1, -1):
        out[i] += out[i + 1] * 0.5
    for k in range(3):
        out[k] += k
    for _ in range(steps):
        out[1:] = out[1:] * 0.5 + out[:-1] * 0.5
    return out


def triangular_loops(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    upper = 0.0
    for i in range(n):
        for j in range(i + 1):
            L[i, j] = A[i, j] + A[j, i]
        for j in range(i + 1, n):
            upper += A[i, j]
    for i in range(n - 1, 0, -2):
        for j in range(n - 1, i - 1, -1):
            L[j, i] -= 0.5 * L[i, j]
    return L, upper


def widening_sum(x):
    s = 0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def compile_time_if(x, normalize=False):
    n = x.shape[0]
    if x.ndim == 1:
        rows = x[None, :]
    else:
        rows = x
    if normalize:
        rows = rows / rows.sum()
    if n > 3:
        rows = rows[:, :3]
    elif n == 3:
        rows = rows * 3.0
    else:
        pass
    return rows


def untaken_branch(x):
    if x.ndim == 3:
        y = np.unique_all(x).values
    else:
        y = x + 1.0
    return y


def runtime_if(x, alpha):
    if alpha > 0:
        z = x * alpha
        w = x.sum()
    else:
        z = x - alpha
        w = x.max()
    return z + 1.0, w


def runtime_if_alias(x, alpha):
    if alpha > 0:
        z = x * alpha
    else:
        z = x
    return z + 1.0


def runtime_if_view(x, alpha):
    if alpha > 0:
        z = x[1:] * alpha
    else:
        z = x[1:]
    return z + 1.0


def runtime_if_constants(x, alpha):
    sign = 0.0
    if alpha > 0:
        sign = 1.0
        label = 1.0
    else:
        sign = -1.0
        label = -1.0
    return x * sign, sign, label


def runtime_elif(x, s):
    if s > 1.0:
        y = x * 2.0
    elif s < -1.0:
        y = -x
    else:
        y = x + s
    if x.sum() > 10.0:
        y = y * 0.0
    return y


def pass_and_expressions(x):
    pass
    _scale_into(x, 2.0)
    x.sum()
    "a string statement"
    return x
