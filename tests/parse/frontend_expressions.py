"""Functions for tests/parse/test_supported_python.py, section "Expressions" of
docs/supported-python.md."""

import numpy as np


def arithmetic_arrays(x, y):
    return x + y, x - y, x * y, x / y, x // y, x % y, x**2, np.abs(x) ** y, 2.0 - x, 3 // y


def arithmetic_numpy_scalars(x):
    a = x[0]
    b = x[1]
    return a + b, a - b, a * b, a / b, a // b, a % b, a**2, 1.0 - a


def arithmetic_python_numbers(x, t):
    n = x.shape[0]
    ints = (n + 1, n - 1, n * 3, n / 2, n // 2, n % 3, n**2, 7 // 2, 7 % 3, 2**10, 7 / 2)
    floats = (t + 1, t - 1.5, t * 2, t / 3, t // 0.25, t % 0.75, t**2, 1.5**t)
    return ints, floats


def bitwise_shifts(a, b):
    return a & b, a | b, a ^ b, a << 2, b >> 1, ~a, a & 0xF, (a > 3) & (b < 5), ~(a > b)


def matrix_product(A, B, v):
    return A @ B, A @ v, v @ v, B.T @ A.T


def comparisons_unary(x, y):
    n = x.shape[0]
    return (
        (x < y, x <= y, x > y, x >= y, x == y, x != y),
        (-x, +x, (x + y) * 2.0, -(x - y) / (x + y)),
        (n > 3, n == x.shape[0], n != y.shape[0], 1 < n <= 100, -(n - 1), -n),
    )


def sizes_compared(x):
    if x.shape[0] > 6:
        return x[:6]
    return x * 2.0


def reduction_methods(x):
    return (
        x.sum(axis=1).reshape(-1, 1),
        x.mean(),
        x.max(axis=0),
        x.min(),
        x.prod(axis=1),
        (x > 1.2).any(),
        (x > 0.4).all(axis=0),
        x.var(ddof=1),
        x.std(axis=1, keepdims=True),
        x.cumsum(axis=0),
        x.cumprod(axis=1),
        x.sum(axis=0).max(),
    )


def shape_methods(x):
    n = x.shape[0]
    y = x.squeeze(axis=1)
    return (
        x.reshape(n, -1).transpose(),
        x.transpose(2, 0, 1).flatten(),
        x.ravel(),
        y,
        x.swapaxes(0, 2),
        x.squeeze().astype(np.float32),
        x.copy(),
        x.clip(0.8, 1.2),
        y[0].dot(y[1]),
        y.dot(y[0]),
        y.T.dot(y).sum(axis=0).reshape(1, -1).copy().ravel(),
    )


def item_and_fill(x, out):
    first = x[:1, :1].sum().item()
    last = x.reshape(-1)[-1].item()
    y = np.zeros_like(x)
    y.fill(first)
    out.fill(last)
    return first, last, y, x[:1, :1].item()


def array_attributes(x):
    return x.T, x.shape, x.shape[0], x.ndim, x.size, x.dtype, len(x), x.T.shape[0], x.shape[-1]


def min_max_abs(x, t):
    n = x.shape[0]
    hi = x[0]
    lo = x[0]
    for i in range(1, n):
        hi = max(hi, x[i])
        lo = min(x[i], lo)
    sizes = (max(n - 1, 0), min(n, 3), max(2, n, 4), min(n - 10, 0), abs(3 - n))
    return sizes, abs(t - 1.0), abs(x[1] - x[2]), hi, lo, max(t, 0.5), min(t, -t)


def min_max_abs_of_sizes_and_python_numbers(x, t):
    n = x.shape[0]
    sizes = (max(n - 1, 0), min(n, 3), max(2, n, 4), min(n - 10, 0), abs(3 - n))
    return sizes, abs(t - 1.0), abs(x[1] - x[2]), max(t, 0.5), min(t, -t), max(2.5, t, 1.0)


def max_of_numpy_scalars(x):
    return max(x[0], x[1]), min(x[0], x[1])


def first_of_equals(a, b):
    return max(a, b), min(a, b)


def shape_arithmetic(x):
    n = x.shape[0]
    m = n // 2 + 1
    h = 1.0 / (n - 1)
    grid = np.arange(1.0, n + 1.0)
    mid = (n - 1) / 2
    return x[:m], m, h, grid * h, np.arange(m), mid, x[: n - m] * mid, n * 0.5 + 1.0


def numpy_functions(x, y):
    return (
        np.sum(x, axis=0),
        np.maximum(x, y),
        np.exp(x),
        np.cumsum(x, axis=1),
        np.transpose(x),
        np.dot(x, y.T),
        np.outer(x[0], y[:, 0]),
        np.where(x > y, x, y),
        np.clip(x, 0.7, 1.3),
        np.gradient(x, axis=0),
        np.gradient(x[0]),
        np.gradient(x),
        np.mean(np.sqrt(x) + np.log(y), axis=-1),
        np.sin(x) ** 2 + np.cos(x) ** 2,
    )


def ufunc_outer(a, b):
    return np.add.outer(a, b), np.multiply.outer(a, b), np.subtract.outer(b, a)


def ufunc_outer_of(a, b, ufunc):
    return ufunc.outer(a, b)


def array_creation(x):
    n, m = x.shape
    e = np.empty((n, m), dtype=x.dtype)
    e[...] = x
    el = np.empty_like(x)
    el[:] = 2.0
    return (
        e,
        el,
        np.zeros(n),
        np.ones((m, n), dtype=np.float32),
        np.full((n, 2), 7.5),
        np.full_like(x, 2),
        np.zeros_like(x),
        np.ones_like(x, dtype=np.int32),
        np.arange(n),
        np.arange(2, n, 3),
        np.arange(0.5, 4.0, 0.5),
        np.linspace(0.0, 1.0, n),
        np.linspace(-1, 1, 7, dtype=x.dtype),
        np.eye(n),
        np.eye(n, m, k=1, dtype=x.dtype),
        np.full(3, 2),
    )


def empty_result(x):
    return np.empty(x.shape), np.empty_like(x)


def conditional_expression(x):
    rows = x[np.newaxis, :] if x.ndim == 1 else x
    k = 2 if x.shape[0] > 10 else 3
    return rows.sum(axis=1) * k, "vector" if x.ndim == 1 else "matrix"
